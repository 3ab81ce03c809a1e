package lifecycle

import (
	"testing"
	"time"
)

func TestDecideUnpublished(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	failed := now.Add(-time.Hour)
	confirm := time.Minute
	base := UnpublishedObservation{Now: now, FailedAt: failed}
	with := func(f func(*UnpublishedObservation)) UnpublishedObservation { o := base; f(&o); return o }
	for _, row := range []struct {
		name string
		in   UnpublishedObservation
		want UnpublishedAction
	}{
		{"a backup has the controller stopped: later, even with the manifest absent long", with(func(o *UnpublishedObservation) {
			o.ControllerStopped, o.Manifest, o.AbsentSince = true, ManifestAbsent, now.Add(-time.Hour)
		}), UnpublishedRetry},
		{"the bucket down: later", with(func(o *UnpublishedObservation) { o.BucketDown = "Unreachable" }), UnpublishedRetry},
		{"the bucket down for more than a day: left", with(func(o *UnpublishedObservation) {
			o.BucketDown, o.FailedAt = "Unreachable", now.Add(-25*time.Hour)
		}), UnpublishedLeave},
		{"the target or its Secret gone: later (it may be recreated)", with(func(o *UnpublishedObservation) { o.TargetUnusable = "LinstorBackupTarget offsite not found" }), UnpublishedRetry},
		{"the target points elsewhere: left, never deleted", with(func(o *UnpublishedObservation) {
			o.Moved, o.Manifest, o.AbsentSince = true, ManifestAbsent, now.Add(-time.Hour)
		}), UnpublishedLeave},
		{"a manifest that reads back: kept", with(func(o *UnpublishedObservation) { o.Manifest = ManifestFound }), UnpublishedKeep},
		{"a manifest whose data is missing: kept", with(func(o *UnpublishedObservation) { o.Manifest, o.DataProblem = ManifestFound, "NotFound" }), UnpublishedKeep},
		{"a manifest of another key or corrupt: kept", with(func(o *UnpublishedObservation) { o.Manifest, o.ManifestProblem = ManifestUnreadable, "WrongKey" }), UnpublishedKeep},
		{"a manifest found after it was once absent: kept", with(func(o *UnpublishedObservation) {
			o.Manifest, o.AbsentSince = ManifestFound, now.Add(-time.Hour)
		}), UnpublishedKeep},
		{"no manifest the first time: look again", with(func(o *UnpublishedObservation) { o.Manifest = ManifestAbsent }), UnpublishedConfirm},
		{"no manifest, seen before but not long enough: look again", with(func(o *UnpublishedObservation) {
			o.Manifest, o.AbsentSince = ManifestAbsent, now.Add(-30*time.Second)
		}), UnpublishedConfirm},
		{"no manifest, twice a minute apart: delete", with(func(o *UnpublishedObservation) {
			o.Manifest, o.AbsentSince = ManifestAbsent, now.Add(-time.Minute)
		}), UnpublishedDelete},
		{"the bucket does not say (access denied): later", with(func(o *UnpublishedObservation) {
			o.Manifest, o.ManifestProblem, o.AbsentSince = ManifestUnknown, "Unauthorized", now.Add(-time.Hour)
		}), UnpublishedRetry},
		{"nothing asked: later", base, UnpublishedRetry},
	} {
		t.Run(row.name, func(t *testing.T) {
			got := DecideUnpublished(row.in, confirm)
			if got.Action != row.want {
				t.Errorf("DecideUnpublished = %s (%s), want %s", got.Action, got.Why, row.want)
			}
			if got.Why == "" {
				t.Error("no reason given")
			}
		})
	}
}
