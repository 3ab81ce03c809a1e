package volumebackup

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/linstor"
)

// When the remote's backup list is read. LINSTOR answers GET /v1/remotes/{remote}/backups
// by listing the whole bucket and reading its meta files (CtrlBackupApiCallHandler.
// listBackups): every object of every backup, tens of thousands in a large cluster. The
// schedules-by-resource view is one cheap request and says when a shipment starts or
// ends, so it is read every poll and the list only when the view (or the list itself)
// says something may have changed.

// BucketListInterval is the longest a kept backup list is used: it catches what the
// view does not show (a backup deleted from the bucket, a manual shipment).
const BucketListInterval = 30 * time.Minute

// FailingRecheck is how often the list is read while it shows a failure: a manual
// backup (`linstor backup create`, as the runbook says) fixes it without moving the
// view, and the status, Degraded and LinstorVolumeBackupsFailing (for: 30m) must
// follow within minutes, not an interval later. Failures are rare; so are these reads.
const FailingRecheck = 5 * time.Minute

// ViewFingerprint is a digest of the rows of the schedules-by-resource view that
// Summarize reads the backup list for.
type ViewFingerprint [sha256.Size]byte

// FingerprintView digests the scheduled rows of the view: every field of them, since
// each either names the row or moves when LINSTOR starts or ends a shipment
// (linstor-server at 3e9306a, controller/src/main/java/com/linbit/linstor/...):
//   - last_snap_time, last_snap_inc: the resource definition's LastBackupTime and
//     LastBackupInc, written when a shipment starts
//     (core/apicallhandler/controller/backup/CtrlBackupCreateApiCallHandler.
//     setIncrementalDependentProps);
//   - next_exec_time, next_exec_inc: the task's timeoutAndTypeCalculatedFrom plus its
//     timeout (core/apicallhandler/controller/CtrlScheduleApiCallHandler.
//     listActiveSchedules); -1 from the shipment's start, when the task is removed
//     (tasks/BackupShippingTask.run, ScheduleBackupService.removeSingleTask), until it
//     ends and tasks/ScheduleBackupService.addTaskAgain computes the next one from now:
//     after a success (core/apicallhandler/controller/internal/
//     CtrlBackupShippingSentInternalCallHandler through CtrlScheduledBackupsApiCallHandler.
//     rescheduleShipping) and after a failure (one that fails to start: BackupShippingTask.
//     run's error handlers; one that fails on the satellite: CtrlBackupShippingSent
//     InternalCallHandler.shippingSent(false), handleSchedulesIfNeeded,
//     rescheduleShipping);
//     a changed schedule moves it too (ScheduleBackupService.modifyTasks);
//   - a resource appears or goes, or gets a reason, when it is scheduled or no longer.
//
// Rows with a reason are left out: Summarize reads no backup for them, and LINSTOR
// lists every unscheduled resource definition of the cluster with every query
// (CtrlScheduleApiCallHandler.listUnscheduledRsc ignores the remote and schedule), so a
// volume created anywhere would otherwise read the bucket again. The order of the rows
// does not count.
func FingerprintView(rows []linstor.ScheduledResource) ViewFingerprint {
	var scheduled []linstor.ScheduledResource
	for _, r := range rows {
		if r.Reason == "" {
			scheduled = append(scheduled, r)
		}
	}
	slices.SortFunc(scheduled, func(a, b linstor.ScheduledResource) int {
		return strings.Compare(a.Resource+"\x00"+a.Remote+"\x00"+a.Schedule, b.Resource+"\x00"+b.Remote+"\x00"+b.Schedule)
	})
	h := sha256.New()
	for _, r := range scheduled {
		// %q keeps the fields apart whatever the names hold.
		fmt.Fprintf(h, "%q %q %q %d %t %d %t\n", r.Resource, r.Remote, r.Schedule, r.LastSnapTime, r.LastSnapInc, r.NextExecTime, r.NextExecInc)
	}
	var out ViewFingerprint
	h.Sum(out[:0])
	return out
}

// ListRead is what the last read of the remote's backup list saw.
type ListRead struct {
	// At is when it was read; zero: never (the first pass, after a restart of the
	// operator, or the remote or its credentials changed since).
	At time.Time
	// View is the view's fingerprint when the list was read (just before it).
	View ViewFingerprint
	// Shipping says the list showed a backup of a scheduled resource shipping.
	Shipping bool
	// Failing says the status summarized from it shows a failed resource.
	Failing bool
}

// ListDue says why the backup list is read now; NotDue keeps the last one.
type ListDue string

const (
	NotDue         ListDue = ""
	DueNeverRead   ListDue = "never read"
	DueViewChanged ListDue = "the view changed"
	DueShipping    ListDue = "a shipment in progress"
	DueFailing     ListDue = "a failure shown"
	DueInterval    ListDue = "the interval passed"
)

// BucketListDue decides whether the remote's backup list is read now, given the last
// read and the view just read; the first rule that holds names why.
func BucketListDue(last ListRead, now time.Time, view ViewFingerprint) ListDue {
	switch {
	case last.At.IsZero():
		// Nothing to summarize with.
		return DueNeverRead
	case view != last.View:
		// LINSTOR started, ended or rescheduled a shipment, or the scheduled resources
		// changed: the list holds something new (a backup, a failed one, none where one
		// was expected).
		return DueViewChanged
	case last.Shipping:
		// A shipment runs: its end is seen the poll it happens (the view may move
		// before the list shows the backup shipped or failed).
		return DueShipping
	case last.Failing && !now.Before(last.At.Add(FailingRecheck)):
		// What fixes a failure without moving the view (a manual backup) clears it
		// within FailingRecheck.
		return DueFailing
	case !now.Before(last.At.Add(BucketListInterval)) || now.Before(last.At):
		// What the view does not show: a backup deleted from the bucket, a manual
		// shipment. A clock gone back would otherwise keep the list for as long.
		return DueInterval
	}
	return NotDue
}

// KeepListed keeps of a remote's backup list what Summarize reads for rows (the
// bucket may hold every resource's backups of several clusters, and of years), and
// says whether one of them ships. Of each scheduled resource it keeps at most: its
// backups shipping, its newest successful and newest failed backup, and the first
// whose start is the view's last start; the rest cannot change the summary of the
// same rows, and a resource scheduled later, or a new start, moves the view's
// fingerprint and so reads the list again. The kept ones stay in the list's order.
func KeepListed(rows []linstor.ScheduledResource, backups []linstor.ShippedBackup) (kept []linstor.ShippedBackup, shipping bool) {
	lastStart := map[string]int64{}
	for _, r := range rows {
		if r.Reason == "" {
			lastStart[strings.ToLower(r.Resource)] = r.LastSnapTime
		}
	}
	type picks struct{ ok, failed, started int }
	chosen := map[string]*picks{}
	keep := make([]bool, len(backups))
	for i, b := range backups {
		res := strings.ToLower(b.Resource)
		last, scheduled := lastStart[res]
		if !scheduled {
			continue
		}
		p := chosen[res]
		if p == nil {
			p = &picks{ok: -1, failed: -1, started: -1}
			chosen[res] = p
		}
		start := startOf(b)
		// As Summarize chooses: the first of the newest wins.
		switch {
		case isTrue(b.Shipping):
			keep[i], shipping = true, true
		case isTrue(b.Success):
			if p.ok < 0 || start > startOf(backups[p.ok]) {
				p.ok = i
			}
		case b.Success != nil && b.Shipping != nil:
			if p.failed < 0 || start > startOf(backups[p.failed]) {
				p.failed = i
			}
		}
		if p.started < 0 && last >= 0 && start >= 0 && abs(start-last) <= sameStart.Milliseconds() {
			p.started = i
		}
	}
	for _, p := range chosen {
		for _, i := range []int{p.ok, p.failed, p.started} {
			if i >= 0 {
				keep[i] = true
			}
		}
	}
	for i, b := range backups {
		if keep[i] {
			kept = append(kept, b)
		}
	}
	return kept, shipping
}
