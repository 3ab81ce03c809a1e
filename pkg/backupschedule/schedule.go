// Package backupschedule decides, as a pure function of a LinstorBackupSchedule, its
// backups and the time, whether a backup is due now, which backups retention deletes,
// and when to look again. The controller observes, calls Decide, acts and saves.
//
// Runs follow a CronJob's rules: one backup at a time (a run that comes while one is
// under way is skipped and counted); after the operator was down, only the latest
// missed run is taken, and only within startingDeadlineSeconds; a suspended schedule
// takes nothing, and on resume the latest missed run counts as missed above. Retention
// never deletes the newest Completed backup: a schedule that fails for a month must
// not leave the cluster without any backup because maxAge passed.
package backupschedule

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// FailedKept is how many of the newest Failed backups retention keeps, so the reason of
// the last failures stays readable.
const FailedKept = 3

// maxMissedCounted bounds the walk over missed times (a schedule of every minute after a
// month of downtime); beyond it the count is a floor.
const maxMissedCounted = 1000

// Backup is one backup of the schedule, in the cluster or in the bucket.
type Backup struct {
	// Name identifies it: a LinstorBackup's name, or a bucket id.
	Name  string
	Phase linstorv1.BackupPhase
	// Created is when it was asked for; Completed when it completed (zero if not).
	Created, Completed time.Time
	// CopyDeletePending: a Failed backup still deletes the copy it never published
	// (status.stored.deletePending); deleting the backup would leave the copy.
	CopyDeletePending bool
}

// Stored is a database backup found in a bucket, as the bucket's manifest says.
type Stored struct {
	ID                   string
	ClusterUID, Schedule string
	CreatedAt            time.Time
	// Authenticated: the target's key made the manifest (offsite.Manifest.Authenticated).
	Authenticated bool
}

// RetainStored lists the bucket copies a schedule's retention deletes: only those the
// same schedule of the same LinstorCluster (by uid) made, so a new cluster's schedule
// of the same name never deletes what a lost cluster left, and the newest stays. The
// IDs in keep stay whatever the rules say: the cluster's lifecycle (a restore, an
// upgrade's way back) reads them from the bucket. A manifest the target's key did not
// make is not counted: its schedule, uid and time are anyone's word.
func RetainStored(r *linstorv1.BackupRetention, schedule, clusterUID string, stored []Stored, now time.Time, keep []string) []string {
	var mine []Backup
	for _, s := range stored {
		if s.Authenticated && s.Schedule == schedule && s.ClusterUID == clusterUID && clusterUID != "" {
			mine = append(mine, Backup{Name: s.ID, Phase: linstorv1.BackupCompleted, Created: s.CreatedAt, Completed: s.CreatedAt})
		}
	}
	return slices.DeleteFunc(Retain(r, mine, now), func(id string) bool { return slices.Contains(keep, id) })
}

// Input is everything Decide reads.
type Input struct {
	Spec linstorv1.LinstorBackupScheduleSpec
	// Name of the schedule: backup names derive from it.
	Name string
	// Created is the schedule's creation time: runs before it are not missed.
	Created time.Time
	// LastScheduleTime is status.lastScheduleTime.
	LastScheduleTime *time.Time
	// Backups are the schedule's LinstorBackups (for runs and retention in the cluster).
	Backups []Backup
	Now     time.Time
}

// Output is what the controller does and saves.
type Output struct {
	// Invalid says why the schedule cannot run (a bad cron line or time zone); nothing
	// else is decided then.
	Invalid string
	// Create names a LinstorBackup to create now for the run at ScheduledAt.
	Create      string
	ScheduledAt time.Time
	// LastScheduleTime is the new status.lastScheduleTime.
	LastScheduleTime *time.Time
	// Missed is how many runs were not taken in this decision (added to status.missed),
	// MissedWhy says why.
	Missed    int
	MissedWhy string
	// Delete lists backups retention removes.
	Delete []string
	// Active names the backup under way, if any.
	Active string
	// LastSuccessful is the newest completion.
	LastSuccessful *time.Time
	// Next is the next run's time (zero when suspended or invalid); RequeueAfter is when
	// to decide again.
	Next         time.Time
	RequeueAfter time.Duration
}

var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Parse reads the cron line in the time zone, with errors naming the field.
func Parse(spec linstorv1.LinstorBackupScheduleSpec) (cron.Schedule, *time.Location, error) {
	loc := time.UTC
	if spec.TimeZone != "" {
		l, err := time.LoadLocation(spec.TimeZone)
		if err != nil {
			return nil, nil, fmt.Errorf("spec.timeZone: %q is not an IANA time zone name: %v", spec.TimeZone, err)
		}
		loc = l
	}
	if strings.HasPrefix(strings.TrimSpace(spec.Schedule), "TZ=") || strings.HasPrefix(strings.TrimSpace(spec.Schedule), "CRON_TZ=") {
		return nil, nil, fmt.Errorf("spec.schedule: set the time zone in spec.timeZone, not in the cron line")
	}
	s, err := parser.Parse(spec.Schedule)
	if err != nil {
		return nil, nil, fmt.Errorf("spec.schedule: %q is not a cron schedule (minute hour day-of-month month day-of-week, or @daily and the like): %v", spec.Schedule, err)
	}
	return s, loc, nil
}

// BackupName is the LinstorBackup a run creates: the same run gives the same name, so a
// restarted operator or a stale cache cannot take the same run twice.
func BackupName(schedule string, at time.Time) string {
	return fmt.Sprintf("%s-%s", schedule, at.UTC().Format("20060102-1504"))
}

// Decide is the schedule's step.
func Decide(in Input) Output {
	out := Output{LastScheduleTime: in.LastScheduleTime}
	sched, loc, err := Parse(in.Spec)
	if err != nil {
		out.Invalid = err.Error()
		return out
	}
	out.Active, out.LastSuccessful = summarize(in.Backups)
	out.Delete = Retain(in.Spec.Retention, in.Backups, in.Now)

	last := in.Created
	if in.LastScheduleTime != nil {
		last = *in.LastScheduleTime
	}
	if last.After(in.Now) {
		// Recorded by a clock that ran ahead: waiting for it would take no backup until
		// then. The newest backup asked for before now is the last run instead.
		last = in.Created
		for _, b := range in.Backups {
			if b.Created.After(last) && !b.Created.After(in.Now) {
				last = b.Created
			}
		}
	}
	now := in.Now.In(loc)
	next := sched.Next(last.In(loc))
	if in.Spec.Suspend {
		out.RequeueAfter = 0 // a change of the spec wakes it
		return out
	}
	if next.After(now) {
		out.Next = next
		out.RequeueAfter = next.Sub(in.Now)
		return out
	}
	// Runs are due: take the latest, count the ones before it as missed.
	latest, due := next, 1
	for t := sched.Next(next); !t.After(now) && due < maxMissedCounted; t = sched.Next(t) {
		latest, due = t, due+1
	}
	if due == maxMissedCounted {
		// Far behind: jump to the latest due time without walking every one.
		for t := sched.Next(latest); !t.After(now); t = sched.Next(t) {
			latest = t
		}
	}
	at := latest.UTC()
	out.LastScheduleTime = &at
	out.Next = sched.Next(latest)
	out.RequeueAfter = out.Next.Sub(in.Now)
	switch {
	case in.Spec.StartingDeadlineSeconds != nil && in.Now.Sub(latest) > time.Duration(*in.Spec.StartingDeadlineSeconds)*time.Second:
		out.Missed = due
		out.MissedWhy = fmt.Sprintf("the run of %s is %s late, past spec.startingDeadlineSeconds (%ds)",
			latest.Format(time.RFC3339), in.Now.Sub(latest).Round(time.Second), *in.Spec.StartingDeadlineSeconds)
	case out.Active != "":
		out.Missed = due
		out.MissedWhy = fmt.Sprintf("the run of %s came while LinstorBackup %s was under way (one backup at a time)", latest.Format(time.RFC3339), out.Active)
	default:
		out.Create, out.ScheduledAt = BackupName(in.Name, latest), at
		out.Missed = due - 1
		if out.Missed > 0 {
			out.MissedWhy = fmt.Sprintf("%d earlier run(s) passed while the operator was not running; only the latest is taken", out.Missed)
		}
	}
	return out
}

func summarize(backups []Backup) (active string, lastSuccessful *time.Time) {
	for _, b := range backups {
		switch b.Phase {
		case "", linstorv1.BackupPending, linstorv1.BackupRunning, linstorv1.BackupVerifying:
			active = b.Name
		case linstorv1.BackupCompleted:
			if lastSuccessful == nil || b.Completed.After(*lastSuccessful) {
				t := b.Completed
				lastSuccessful = &t
			}
		}
	}
	return active, lastSuccessful
}

// Retain lists the backups the retention deletes: Completed ones beyond keepLast or
// older than maxAge, never the newest Completed one; Failed ones beyond the newest
// FailedKept. Backups under way are never deleted, nor Failed ones still deleting the
// copy they never published.
func Retain(r *linstorv1.BackupRetention, backups []Backup, now time.Time) []string {
	var completed, failed []Backup
	for _, b := range backups {
		switch b.Phase {
		case linstorv1.BackupCompleted:
			completed = append(completed, b)
		case linstorv1.BackupFailed:
			failed = append(failed, b)
		}
	}
	newestFirst := func(list []Backup, at func(Backup) time.Time) {
		sort.SliceStable(list, func(i, j int) bool {
			if !at(list[i]).Equal(at(list[j])) {
				return at(list[i]).After(at(list[j]))
			}
			return list[i].Name > list[j].Name
		})
	}
	newestFirst(completed, func(b Backup) time.Time { return b.Completed })
	newestFirst(failed, func(b Backup) time.Time { return b.Created })
	var out []string
	if r != nil {
		// A clock that ran ahead once dates a backup in the future, the newest until the
		// clock catches up: the newest dated by a right clock stays as well.
		newestReal := slices.IndexFunc(completed, func(b Backup) bool { return !b.Completed.After(now) })
		for i, b := range completed {
			if i == 0 || i == newestReal {
				continue // the newest Completed backup is kept whatever the rules say
			}
			tooMany := r.KeepLast != nil && i >= int(*r.KeepLast)
			tooOld := r.MaxAge != nil && now.Sub(b.Completed) > r.MaxAge.Duration
			if tooMany || tooOld {
				out = append(out, b.Name)
			}
		}
	}
	for i, b := range failed {
		if i >= FailedKept && !b.CopyDeletePending {
			out = append(out, b.Name)
		}
	}
	sort.Strings(out)
	return out
}
