package volumebackup

import (
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
)

// Summary is status.volumes' counts and list.
type Summary struct {
	Scheduled, Shipped, NotScheduled, Failed int32
	Resources                                []linstorv1.ResourceBackupStatus
}

// sameStart is how far apart the view's last_snap_time and the backup's
// start_timestamp of one shipment may be: LINSTOR takes the first from
// System.currentTimeMillis() a moment after the second (CtrlBackupCreateApiCallHandler.
// setIncrementalDependentProps, setStartBackupProps), and a backup without a meta file
// has its start only to the second (its id). A schedule starts a resource's shipments
// at least a minute apart (cron; RETRY waits a minute).
const sameStart = 30 * time.Second

// Summarize folds LINSTOR's schedules-by-resource view of the schedule and the remote's
// backup list (read after a view showing the same scheduled rows: BucketListDue) into the status, per resource:
//   - last shipped: its newest backup LINSTOR lists as successful (a meta file in the
//     bucket);
//   - running: the view says a shipment runs (next_exec_time -1 from the task's start,
//     queued behind LINSTOR's per-node shipping limit too, until the shipment ended:
//     BackupShippingTask.run removes the task, CtrlBackupShippingSentInternalCallHandler
//     adds it again, CtrlScheduleApiCallHandler.listActiveSchedules), or the list has
//     one shipping;
//   - failed: a shipment newer than the last successful one failed. LINSTOR says so in
//     the list (success and shipping false: volume objects without a meta file), or
//     says nothing: the view's last start names a shipment the list neither holds nor
//     ships, which failed before anything reached the bucket (or its backup was deleted
//     from it). fail_messages is LINSTOR's message where a server writes it.
//
// Resources LINSTOR does not ship come first, then those whose last shipment failed,
// then those never shipped, then the longest without a shipment (at most
// linstorv1.MaxListedVolumeBackups).
func Summarize(rows []linstor.ScheduledResource, backups []linstor.ShippedBackup) Summary {
	byResource := map[string][]linstor.ShippedBackup{}
	for _, b := range backups {
		byResource[strings.ToLower(b.Resource)] = append(byResource[strings.ToLower(b.Resource)], b)
	}
	var out Summary
	for _, r := range rows {
		s := linstorv1.ResourceBackupStatus{Name: r.Resource, Reason: r.Reason}
		if r.Reason != "" {
			out.NotScheduled++
			out.Resources = append(out.Resources, s)
			continue
		}
		out.Scheduled++
		if r.NextExecTime < 0 {
			s.Running = true
		} else {
			s.Next = millisTime(r.NextExecTime)
		}
		var lastOK, lastFailed *linstor.ShippedBackup
		startedLast := false // the view's last start is in the list
		for i, b := range byResource[strings.ToLower(r.Resource)] {
			start := startOf(b)
			if r.LastSnapTime >= 0 && start >= 0 && abs(start-r.LastSnapTime) <= sameStart.Milliseconds() {
				startedLast = true
			}
			switch {
			case isTrue(b.Shipping):
				s.Running = true
			case isTrue(b.Success):
				if lastOK == nil || start > startOf(*lastOK) {
					lastOK = &byResource[strings.ToLower(r.Resource)][i]
				}
			case b.Success != nil && b.Shipping != nil:
				if lastFailed == nil || start > startOf(*lastFailed) {
					lastFailed = &byResource[strings.ToLower(r.Resource)][i]
				}
			}
		}
		if lastOK != nil {
			out.Shipped++
			s.LastShipped, s.LastIncremental, s.LastBackup = millisTime(startOf(*lastOK)), lastOK.BasedOn != "", lastOK.ID
		}
		okStart := int64(-1)
		if lastOK != nil {
			okStart = startOf(*lastOK)
		}
		var failedAt int64 = -1
		var failure string
		if lastFailed != nil && startOf(*lastFailed) > okStart {
			failedAt = startOf(*lastFailed)
			failure = lastFailed.FailMessages
			if failure == "" {
				failure = fmt.Sprintf("LINSTOR lists backup %s as failed: its shipment ended before the meta file was written", lastFailed.ID)
			}
		}
		if !s.Running && !startedLast && r.LastSnapTime > max(okStart, failedAt) {
			failedAt = r.LastSnapTime
			failure = fmt.Sprintf("LINSTOR's shipment started %s is neither in the bucket nor shipping: it failed before any object reached the bucket "+
				"(or its backup was deleted from the bucket)", time.UnixMilli(r.LastSnapTime).UTC().Format(time.RFC3339))
		}
		if failedAt >= 0 {
			out.Failed++
			s.LastFailed, s.LastFailure = millisTime(failedAt), linstorv1.BoundMessage(failure, linstorv1.MaxVolumeFailureMessage)
		}
		out.Resources = append(out.Resources, s)
	}
	rank := func(s linstorv1.ResourceBackupStatus) int {
		switch {
		case s.Reason != "":
			return 0
		case s.LastFailed != nil:
			return 1
		case s.LastShipped == nil:
			return 2
		}
		return 3
	}
	sort.SliceStable(out.Resources, func(i, j int) bool {
		a, b := out.Resources[i], out.Resources[j]
		if rank(a) != rank(b) {
			return rank(a) < rank(b)
		}
		if a.LastShipped != nil && b.LastShipped != nil && !a.LastShipped.Equal(b.LastShipped) {
			return a.LastShipped.Before(b.LastShipped)
		}
		return a.Name < b.Name
	})
	if len(out.Resources) > linstorv1.MaxListedVolumeBackups {
		out.Resources = out.Resources[:linstorv1.MaxListedVolumeBackups]
	}
	return out
}

// FailedNames lists the first n resources whose last shipment failed, for a message.
func FailedNames(list []linstorv1.ResourceBackupStatus, n int) []string {
	var out []string
	for _, r := range list {
		if r.LastFailed != nil && len(out) < n {
			out = append(out, r.Name)
		}
	}
	return out
}

// startOf is a backup's start in milliseconds; -1 when LINSTOR gives none.
func startOf(b linstor.ShippedBackup) int64 {
	if b.StartTimestamp == nil {
		return -1
	}
	return *b.StartTimestamp
}

func isTrue(b *bool) bool { return b != nil && *b }

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func millisTime(ms int64) *metav1.Time {
	t := metav1.NewTime(time.UnixMilli(ms).UTC())
	return &t
}
