package backupschedule

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestDecide(t *testing.T) {
	daily := linstorv1.LinstorBackupScheduleSpec{Schedule: "0 3 * * *"}
	created := at("2026-11-01T12:00:00Z")
	last := func(s string) *time.Time { v := at(s); return &v }
	withDeadline := daily
	withDeadline.StartingDeadlineSeconds = ptr.To[int64](600)
	suspended := daily
	suspended.Suspend = true
	vienna := daily
	vienna.TimeZone = "Europe/Vienna"

	for _, tc := range []struct {
		name string
		in   Input
		// want
		create     string
		missed     int
		why        string
		next       string
		invalid    string
		lastSched  string
		requeueMax time.Duration
	}{
		{name: "before the first run: nothing, wake at it",
			in:   Input{Spec: daily, Created: created, Now: at("2026-11-01T13:00:00Z")},
			next: "2026-11-02T03:00:00Z", requeueMax: 14 * time.Hour},
		{name: "the run is due: create it, named by its time",
			in:     Input{Spec: daily, Created: created, Now: at("2026-11-02T03:00:05Z")},
			create: "nightly-20261102-0300", lastSched: "2026-11-02T03:00:00Z", next: "2026-11-03T03:00:00Z"},
		{name: "after it was taken: nothing until the next",
			in:   Input{Spec: daily, Created: created, LastScheduleTime: last("2026-11-02T03:00:00Z"), Now: at("2026-11-02T09:00:00Z")},
			next: "2026-11-03T03:00:00Z", lastSched: "2026-11-02T03:00:00Z"},
		{name: "operator down three days: only the latest run, two missed",
			in:     Input{Spec: daily, Created: created, LastScheduleTime: last("2026-11-02T03:00:00Z"), Now: at("2026-11-05T04:00:00Z")},
			create: "nightly-20261105-0300", missed: 2, why: "earlier run(s) passed", lastSched: "2026-11-05T03:00:00Z"},
		{name: "late past the starting deadline: not taken, counted",
			in:     Input{Spec: withDeadline, Created: created, LastScheduleTime: last("2026-11-02T03:00:00Z"), Now: at("2026-11-03T03:30:00Z")},
			missed: 1, why: "past spec.startingDeadlineSeconds", lastSched: "2026-11-03T03:00:00Z", next: "2026-11-04T03:00:00Z"},
		{name: "within the starting deadline: taken",
			in:     Input{Spec: withDeadline, Created: created, LastScheduleTime: last("2026-11-02T03:00:00Z"), Now: at("2026-11-03T03:09:00Z")},
			create: "nightly-20261103-0300", lastSched: "2026-11-03T03:00:00Z"},
		{name: "a backup still under way: the run is skipped (one at a time)",
			in: Input{Spec: daily, Created: created, LastScheduleTime: last("2026-11-02T03:00:00Z"), Now: at("2026-11-03T03:00:01Z"),
				Backups: []Backup{{Name: "nightly-20261102-0300", Phase: linstorv1.BackupVerifying, Created: at("2026-11-02T03:00:00Z")}}},
			missed: 1, why: "while LinstorBackup nightly-20261102-0300 was under way", lastSched: "2026-11-03T03:00:00Z"},
		{name: "a new backup not yet seen by its controller (no phase) is under way too",
			in: Input{Spec: daily, Created: created, LastScheduleTime: last("2026-11-02T03:00:00Z"), Now: at("2026-11-03T03:00:01Z"),
				Backups: []Backup{{Name: "manual", Phase: ""}}},
			missed: 1, why: "under way"},
		{name: "suspended: nothing, and the last schedule time stays",
			in:        Input{Spec: suspended, Created: created, LastScheduleTime: last("2026-11-02T03:00:00Z"), Now: at("2026-11-09T03:00:01Z")},
			lastSched: "2026-11-02T03:00:00Z"},
		{name: "a time zone moves the run",
			in:     Input{Spec: vienna, Created: created, Now: at("2026-11-02T02:00:05Z")},
			create: "nightly-20261102-0200", lastSched: "2026-11-02T02:00:00Z"},
		{name: "a bad cron line says which field",
			in:      Input{Spec: linstorv1.LinstorBackupScheduleSpec{Schedule: "0 25 * * *"}, Created: created, Now: created},
			invalid: "spec.schedule"},
		{name: "a bad time zone says which field",
			in:      Input{Spec: linstorv1.LinstorBackupScheduleSpec{Schedule: "@daily", TimeZone: "Mars/Olympus"}, Created: created, Now: created},
			invalid: "spec.timeZone"},
		{name: "a time zone in the cron line is refused with the field to use",
			in:      Input{Spec: linstorv1.LinstorBackupScheduleSpec{Schedule: "CRON_TZ=UTC 0 3 * * *"}, Created: created, Now: created},
			invalid: "spec.timeZone"},
		{name: "every minute, a year down: the latest run only, the count is bounded",
			in:     Input{Spec: linstorv1.LinstorBackupScheduleSpec{Schedule: "* * * * *"}, Created: created, LastScheduleTime: last("2025-11-01T00:00:00Z"), Now: at("2026-11-01T00:00:30Z")},
			create: "nightly-20261101-0000", missed: maxMissedCounted - 1, lastSched: "2026-11-01T00:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Name = "nightly"
			out := Decide(tc.in)
			if tc.invalid != "" {
				if !strings.Contains(out.Invalid, tc.invalid) || out.Create != "" {
					t.Fatalf("invalid %q, create %q; want the error to name %s", out.Invalid, out.Create, tc.invalid)
				}
				return
			}
			if out.Invalid != "" {
				t.Fatal(out.Invalid)
			}
			if out.Create != tc.create || out.Missed != tc.missed {
				t.Fatalf("create %q missed %d (%s); want %q, %d", out.Create, out.Missed, out.MissedWhy, tc.create, tc.missed)
			}
			if !strings.Contains(out.MissedWhy, tc.why) {
				t.Fatalf("missed reason %q; want it to say %q", out.MissedWhy, tc.why)
			}
			if tc.next != "" && !out.Next.Equal(at(tc.next)) {
				t.Fatalf("next %s; want %s", out.Next, tc.next)
			}
			if tc.lastSched != "" && (out.LastScheduleTime == nil || !out.LastScheduleTime.Equal(at(tc.lastSched))) {
				t.Fatalf("last schedule time %v; want %s", out.LastScheduleTime, tc.lastSched)
			}
			if tc.requeueMax > 0 && (out.RequeueAfter <= 0 || out.RequeueAfter > tc.requeueMax) {
				t.Fatalf("requeue after %s; want within %s", out.RequeueAfter, tc.requeueMax)
			}
		})
	}
}

func TestRetain(t *testing.T) {
	now := at("2026-11-30T00:00:00Z")
	day := func(d int) time.Time { return now.Add(-time.Duration(d) * 24 * time.Hour) }
	completed := func(name string, d int) Backup {
		return Backup{Name: name, Phase: linstorv1.BackupCompleted, Created: day(d), Completed: day(d)}
	}
	failed := func(name string, d int) Backup {
		return Backup{Name: name, Phase: linstorv1.BackupFailed, Created: day(d)}
	}
	backups := []Backup{completed("c1", 1), completed("c2", 2), completed("c3", 3), completed("c40", 40),
		{Name: "running", Phase: linstorv1.BackupRunning, Created: day(100)},
		failed("f1", 1), failed("f2", 2), failed("f3", 3), failed("f4", 4), failed("f5", 5)}
	keep2 := &linstorv1.BackupRetention{KeepLast: ptr.To[int32](2)}
	month := &linstorv1.BackupRetention{MaxAge: &metav1.Duration{Duration: 30 * 24 * time.Hour}}
	for _, tc := range []struct {
		name    string
		r       *linstorv1.BackupRetention
		backups []Backup
		want    []string
	}{
		{"no rules: only failed ones beyond the newest three", nil, backups, []string{"f4", "f5"}},
		{"keepLast 2", keep2, backups, []string{"c3", "c40", "f4", "f5"}},
		{"maxAge 30 days", month, backups, []string{"c40", "f4", "f5"}},
		{"both", &linstorv1.BackupRetention{KeepLast: ptr.To[int32](3), MaxAge: month.MaxAge}, backups, []string{"c40", "f4", "f5"}},
		{"the only Completed backup is older than maxAge: kept", month, []Backup{completed("old", 90), failed("f", 1)}, nil},
		{"all too old: the newest stays", month, []Backup{completed("a", 90), completed("b", 60), completed("c", 45)}, []string{"a", "b"}},
		{"keepLast 1 keeps the newest", &linstorv1.BackupRetention{KeepLast: ptr.To[int32](1)}, []Backup{completed("a", 3), completed("b", 2)}, []string{"a"}},
		{"a failed one still deleting its unpublished copy stays", nil, append(slices.Clone(backups),
			Backup{Name: "f6", Phase: linstorv1.BackupFailed, Created: day(6), CopyDeletePending: true}), []string{"f4", "f5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Retain(tc.r, tc.backups, now)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("deletes %v; want %v", got, tc.want)
			}
			if slices.Contains(got, "running") {
				t.Fatal("a backup under way was deleted")
			}
		})
	}
}
