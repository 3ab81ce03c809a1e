package backupschedule

import (
	"slices"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// A node whose clock ran a year ahead once (an RTC battery, NTP down) dates one backup
// in the future. Retention orders by time, so that backup is "the newest" until the
// clock catches up: with keepLast 1 every real backup would be deleted by the next
// pass, leaving only the stale one. The newest backup not in the future stays too.
func TestRetainKeepsTheNewestRealBackupPastAFutureDatedOne(t *testing.T) {
	now := at("2026-11-30T00:00:00Z")
	backups := []Backup{
		{Name: "skewed", Phase: linstorv1.BackupCompleted, Created: now.AddDate(1, 0, 0), Completed: now.AddDate(1, 0, 0)},
		{Name: "today", Phase: linstorv1.BackupCompleted, Created: now.Add(-time.Hour), Completed: now.Add(-time.Hour)},
		{Name: "yesterday", Phase: linstorv1.BackupCompleted, Created: now.Add(-25 * time.Hour), Completed: now.Add(-25 * time.Hour)},
	}
	got := Retain(&linstorv1.BackupRetention{KeepLast: ptr.To[int32](1)}, backups, now)
	if slices.Contains(got, "today") {
		t.Fatalf("deletes %v: the newest backup taken with a right clock went", got)
	}
	if !slices.Equal(got, []string{"yesterday"}) {
		t.Fatalf("deletes %v; want [yesterday]", got)
	}
}

// A schedule whose last run was recorded by a clock a year ahead must not wait a year
// for its next run: the cluster would have no new backup meanwhile.
func TestDecideRunsAfterALastScheduleTimeInTheFuture(t *testing.T) {
	future := at("2027-11-30T03:00:00Z")
	out := Decide(Input{Spec: linstorv1.LinstorBackupScheduleSpec{Schedule: "0 3 * * *"}, Name: "nightly",
		Created: at("2026-11-01T00:00:00Z"), LastScheduleTime: &future, Now: at("2026-11-30T03:00:05Z")})
	if out.Create != "nightly-20261130-0300" {
		t.Fatalf("create %q, next %s; want the run of 2026-11-30 03:00 taken", out.Create, out.Next)
	}
}

// A backup the cluster's lifecycle names (spec.database.restoreFrom, an upgrade's, a
// restore's) is read from the bucket: bucket retention must keep its copy, as cluster
// retention keeps the LinstorBackup.
func TestRetainStoredKeepsCopiesTheLifecycleNames(t *testing.T) {
	now := at("2026-11-30T00:00:00Z")
	var stored []Stored
	for d := 1; d <= 4; d++ {
		stored = append(stored, Stored{ID: "ns.c/" + now.AddDate(0, 0, -d).Format("20060102") + "-nightly", ClusterUID: "uid", Schedule: "nightly", CreatedAt: now.AddDate(0, 0, -d), Authenticated: true})
	}
	needed := stored[2].ID // an older backup a restore names: the newer ones hold the damage
	got := RetainStored(&linstorv1.BackupRetention{KeepLast: ptr.To[int32](2)}, "nightly", "uid", stored, now, []string{needed})
	if slices.Contains(got, needed) {
		t.Fatalf("deletes %v: the copy a restore reads went", got)
	}
	if !slices.Equal(got, []string{stored[3].ID}) {
		t.Fatalf("deletes %v; want [%s]", got, stored[3].ID)
	}
}

// Whoever may write to the bucket can write a manifest naming this schedule and this
// cluster's uid (both are in every manifest): only manifests the target's key
// authenticates count, or forged ones dated just now would push the real backups out
// of keepLast and have the operator delete them.
func TestRetainStoredCountsOnlyAuthenticatedManifests(t *testing.T) {
	now := at("2026-11-30T00:00:00Z")
	real := Stored{ID: "ns.c/20261129T030000Z-nightly", ClusterUID: "uid", Schedule: "nightly", CreatedAt: now.Add(-21 * time.Hour), Authenticated: true}
	older := Stored{ID: "ns.c/20261128T030000Z-nightly", ClusterUID: "uid", Schedule: "nightly", CreatedAt: now.Add(-45 * time.Hour), Authenticated: true}
	forged := Stored{ID: "ns.c/20261129T235900Z-nightly", ClusterUID: "uid", Schedule: "nightly", CreatedAt: now.Add(-time.Minute)}
	got := RetainStored(&linstorv1.BackupRetention{KeepLast: ptr.To[int32](2)}, "nightly", "uid", []Stored{forged, real, older}, now, nil)
	if len(got) != 0 {
		t.Fatalf("deletes %v; want nothing: two authenticated backups, keepLast 2", got)
	}
}
