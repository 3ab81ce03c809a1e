package lifecycle

import (
	"fmt"
	"time"
)

// What the operator does with the copy a failed LinstorBackup sent to a bucket but never
// published (status.stored.deletePending). Deleting the wrong copy loses a backup: the
// copy is deleted only when it is where it was written, under the key it was written
// with, and without a manifest seen twice (an object store that replicates
// asynchronously may answer 404 for a manifest just written); any manifest, even one
// that does not read back, keeps it.

// UnpublishedManifest is what the bucket answered for the copy's manifest.
type UnpublishedManifest int

const (
	// ManifestNotLooked: the pass did not ask (the target is not usable).
	ManifestNotLooked UnpublishedManifest = iota
	// ManifestFound: it reads back with the target's key (the copy was published).
	ManifestFound
	// ManifestAbsent: the bucket says there is none.
	ManifestAbsent
	// ManifestUnreadable: there is one, but it does not read back with the target's key
	// (corrupt, another key, not a manifest).
	ManifestUnreadable
	// ManifestUnknown: the bucket did not say (down, slow, access denied, no such
	// bucket): it may say later.
	ManifestUnknown
)

// UnpublishedObservation is what a pass found.
type UnpublishedObservation struct {
	Now time.Time
	// FailedAt bounds when the backup failed (its creation: the failure is within its
	// timeout of it).
	FailedAt time.Time
	// ControllerStopped: a backup of the cluster keeps LINSTOR's controller stopped: a
	// try would hold the one worker it needs.
	ControllerStopped bool
	// BucketDown is the target's own check's reason when it finds the bucket
	// unreachable or hanging ("" otherwise).
	BucketDown string
	// TargetUnusable says why the target cannot be opened (gone, its Secret gone or
	// wrong); "" when it opened.
	TargetUnusable string
	// Moved: the target points elsewhere than where the copy was written (another
	// bucket, prefix or key): its bucket says nothing about the copy.
	Moved           bool
	Manifest        UnpublishedManifest
	ManifestProblem string // why it is unreadable or unknown
	// DataProblem: the manifest was found but the data object does not read back.
	DataProblem string
	// AbsentSince is when a pass first found no manifest (zero: none did).
	AbsentSince time.Time
}

// UnpublishedAction is what to do.
type UnpublishedAction string

const (
	// UnpublishedRetry: look again later (Why says what stands in the way).
	UnpublishedRetry UnpublishedAction = "Retry"
	// UnpublishedConfirm: no manifest once; look again after UnpublishedConfirmAfter.
	UnpublishedConfirm UnpublishedAction = "Confirm"
	// UnpublishedDelete: delete the copy.
	UnpublishedDelete UnpublishedAction = "Delete"
	// UnpublishedKeep: the copy has a manifest: it stays; done.
	UnpublishedKeep UnpublishedAction = "Keep"
	// UnpublishedLeave: the operator cannot delete it; done (Why says where it is).
	UnpublishedLeave UnpublishedAction = "Leave"
)

// UnpublishedGiveUp is how long after the failure a deletion that keeps meeting
// answers that may pass is retried.
const UnpublishedGiveUp = 24 * time.Hour

// UnpublishedDecision is the action and why.
type UnpublishedDecision struct {
	Action UnpublishedAction
	Why    string
}

// DecideUnpublished decides from one pass's observation; confirm is how long the
// absence of the manifest must last.
func DecideUnpublished(o UnpublishedObservation, confirm time.Duration) UnpublishedDecision {
	retry := func(why string) UnpublishedDecision {
		if o.Now.Sub(o.FailedAt) > UnpublishedGiveUp {
			return UnpublishedDecision{UnpublishedLeave, fmt.Sprintf("%s (tried for %s)", why, UnpublishedGiveUp)}
		}
		return UnpublishedDecision{UnpublishedRetry, why}
	}
	switch {
	case o.ControllerStopped:
		return UnpublishedDecision{UnpublishedRetry, "a backup of the cluster has LINSTOR's controller stopped"}
	case o.BucketDown != "":
		return retry("the target's bucket is " + o.BucketDown)
	case o.TargetUnusable != "":
		return retry(o.TargetUnusable)
	case o.Moved:
		return UnpublishedDecision{UnpublishedLeave, "the target points elsewhere now"}
	}
	switch o.Manifest {
	case ManifestFound:
		if o.DataProblem != "" {
			return UnpublishedDecision{UnpublishedKeep, "its manifest is in the bucket, so it was published before the failure was saved, but its data does not read back (" + o.DataProblem + ")"}
		}
		return UnpublishedDecision{UnpublishedKeep, "it was published before the failure was saved: its manifest reads back with the target's key and its data is there"}
	case ManifestUnreadable:
		return UnpublishedDecision{UnpublishedKeep, "a manifest of it is in the bucket but does not read back with the target's key (" + o.ManifestProblem + "): it may have been published"}
	case ManifestAbsent:
		if o.AbsentSince.IsZero() || o.Now.Sub(o.AbsentSince) < confirm {
			return UnpublishedDecision{UnpublishedConfirm, "no manifest yet; looking once more"}
		}
		return UnpublishedDecision{UnpublishedDelete, "no manifest, twice " + confirm.String() + " apart"}
	case ManifestUnknown:
		return retry(o.ManifestProblem)
	}
	return retry("the bucket was not asked")
}
