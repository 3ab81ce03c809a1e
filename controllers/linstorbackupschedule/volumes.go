package linstorbackupschedule

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/backuptarget"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/names"
	"github.com/linstor-operator/linstor-operator/pkg/volumebackup"
)

// volumePoll is how often LINSTOR's shipping is read for the status (one view request;
// the remote's backup list only when volumebackup.BucketListDue says so).
const volumePoll = time.Minute

// volumeScope is what the volumes phase saw.
type volumeScope struct {
	status *linstorv1.VolumeBackupStatus
	// problem says why LINSTOR does not ship as asked (reason, message).
	reason, message string
}

// reconcileVolumes keeps LINSTOR's S3 remote, backup schedule and its enables as
// spec.volumes asks, and reads LINSTOR's shipping of each resource (O(1) requests: the
// remotes, the schedules, the resource groups, the controller's properties, one view;
// the remote's backup list, for which LINSTOR lists the whole bucket, only when the view
// moved since it was last read, while it showed a shipment in progress, after the
// remote changed and at least every volumebackup.BucketListInterval; in between the
// status is summarized with the list kept from the last read).
func (r *Reconciler) reconcileVolumes(ctx context.Context, s *scope) (ctrl.Result, error) {
	sc := s.schedule
	if sc.DeletionTimestamp != nil || sc.Spec.Volumes == nil {
		return ctrl.Result{}, r.removeVolumeSchedule(ctx, s)
	}
	v := &volumeScope{status: sc.Status.Volumes.DeepCopy()}
	s.volumes = v
	if v.status == nil {
		v.status = &linstorv1.VolumeBackupStatus{}
	}
	if r.Linstor == nil || s.cluster == nil || s.target == nil {
		v.reason, v.message = s.notReadyReason, s.notReadyMessage
		return ctrl.Result{}, nil
	}
	if why := lifecycle.LinstorWritesFenced(&s.cluster.Status); why != "" {
		v.reason, v.message = linstorv1.ReasonLinstorWritesFenced, why
		return ctrl.Result{RequeueAfter: volumePoll}, nil
	}
	if c := meta.FindStatusCondition(s.cluster.Status.Conditions, linstorv1.ConditionProgressing); c != nil && c.Reason == linstorv1.ReasonBackupInProgress {
		// LINSTOR's controller is stopped for a database backup: what was seen last
		// still holds; nothing to report as an error.
		if prev := meta.FindStatusCondition(sc.Status.Conditions, linstorv1.ConditionConfigured); prev != nil && prev.Status == metav1.ConditionFalse {
			v.reason, v.message = prev.Reason, prev.Message
		}
		return ctrl.Result{RequeueAfter: volumePoll}, nil
	}
	if !controllerutil.ContainsFinalizer(sc, names.FinalizerVolumeBackups) {
		controllerutil.AddFinalizer(sc, names.FinalizerVolumeBackups)
		if err := r.Client.Update(ctx, sc); err != nil {
			return ctrl.Result{}, err
		}
	}
	store, err := backuptarget.Open(ctx, r.Client, s.target)
	if err != nil {
		v.reason, v.message = linstorv1.ReasonTargetUnavailable, err.Error()
		return ctrl.Result{}, nil
	}
	loc := store.Location()
	remote := lapi.S3Remote{RemoteName: volumebackup.Name(s.target.Name), Endpoint: loc.Endpoint, Bucket: loc.Bucket, Region: loc.Region,
		AccessKey: loc.AccessKeyID, SecretKey: loc.SecretAccessKey, UsePathStyle: loc.PathStyle}
	// Keyed by the target's key: the status shows whether the credentials changed, and
	// whoever reads it cannot test guesses of the secret key against it.
	digest, err := store.KeyedDigest(volumebackup.CredentialsParts(remote)...)
	if err != nil {
		v.reason, v.message = linstorv1.ReasonTargetUnavailable, err.Error()
		return ctrl.Result{}, nil
	}
	d := volumebackup.Desired{Remote: remote, CredentialsHash: digest,
		Schedule: volumebackup.DesiredSchedule(volumebackup.Name(sc.Name), sc.Spec.Volumes), Groups: sc.Spec.Volumes.ResourceGroups}
	conn, err := r.Linstor.Connect(ctx, s.cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	o, err := observeVolumes(ctx, conn, d, v.status.CredentialsHash)
	if err != nil {
		v.reason, v.message = linstorv1.ReasonLinstorError, err.Error()
		return ctrl.Result{RequeueAfter: volumePoll}, nil
	}
	for _, a := range volumebackup.Plan(d, o) {
		if a.Kind == volumebackup.ForeignRemote {
			v.reason, v.message = linstorv1.ReasonLinstorError, fmt.Sprintf("LINSTOR already has an S3 remote %s for %s/%s that this schedule never configured: "+
				"it is left alone; rename the LinstorBackupTarget or delete that remote", d.Remote.RemoteName, o.Remote.Endpoint, o.Remote.Bucket)
			return ctrl.Result{RequeueAfter: volumePoll}, nil
		}
		if err := applyVolumeAction(ctx, conn, d, a); err != nil {
			v.reason, v.message = linstorv1.ReasonLinstorError, fmt.Sprintf("%s: %v", volumebackup.Describe(a, d.Remote.RemoteName, d.Schedule.Name), err)
			return ctrl.Result{RequeueAfter: volumePoll}, nil
		}
		if a.Kind == volumebackup.CreateRemote || a.Kind == volumebackup.ModifyRemote {
			v.status.CredentialsHash = d.CredentialsHash
			// Another bucket or other credentials: the kept backup list says nothing
			// of it.
			r.forgetBucketList(sc.UID)
		}
		event(r, sc, false, "VolumeBackups", "LINSTOR: "+volumebackup.Describe(a, d.Remote.RemoteName, d.Schedule.Name))
	}
	v.status.Remote, v.status.Schedule = d.Remote.RemoteName, d.Schedule.Name
	if o.Remote != nil && v.status.CredentialsHash == "" {
		v.status.CredentialsHash = o.RecordedHash
	}
	rows, err := linstor.ScheduledResources(ctx, conn, d.Remote.RemoteName, d.Schedule.Name)
	if err != nil {
		v.reason, v.message = linstorv1.ReasonLinstorError, "reading LINSTOR's schedules-by-resource view: "+err.Error()
		return ctrl.Result{RequeueAfter: volumePoll}, nil
	}
	view := volumebackup.FingerprintView(rows)
	kept := r.keptBucketList(sc.UID, d.Remote.RemoteName)
	if due := volumebackup.BucketListDue(kept.read, s.now, view); due != volumebackup.NotDue {
		ctrl.LoggerFrom(ctx).V(1).Info("reading LINSTOR's backup list of the remote", "remote", d.Remote.RemoteName, "why", string(due))
		// After the view: a shipment the view saw start is in the list (shipping, shipped
		// or failed) unless it failed before reaching the bucket.
		backups, err := linstor.ShippedBackups(ctx, conn, d.Remote.RemoteName)
		if err != nil {
			// The kept list stays, and so does what made this read due: the next pass
			// reads again.
			v.reason, v.message = linstorv1.ReasonLinstorError, fmt.Sprintf("reading LINSTOR's list of backups in remote %s: %v", d.Remote.RemoteName, err)
			return ctrl.Result{RequeueAfter: volumePoll}, nil
		}
		kept = keptBucketList{remote: d.Remote.RemoteName, read: volumebackup.ListRead{At: s.now, View: view}}
		kept.backups, kept.read.Shipping = volumebackup.KeepListed(rows, backups)
		r.keepBucketList(sc, kept)
	}
	sum := volumebackup.Summarize(rows, kept.backups)
	if failing := sum.Failed > 0; failing != kept.read.Failing {
		kept.read.Failing = failing
		r.keepBucketList(sc, kept)
	}
	v.status.Scheduled, v.status.Shipped, v.status.NotScheduled, v.status.Failed, v.status.Resources = sum.Scheduled, sum.Shipped, sum.NotScheduled, sum.Failed, sum.Resources
	return ctrl.Result{RequeueAfter: volumePoll}, nil
}

// observeVolumes reads the remote, the schedule and where it is enabled.
func observeVolumes(ctx context.Context, conn *linstor.Connection, d volumebackup.Desired, recorded string) (volumebackup.Observed, error) {
	o := volumebackup.Observed{RecordedHash: recorded, GroupProps: map[string]map[string]string{}}
	remotes, err := conn.Remote.GetAllS3(ctx)
	if err != nil {
		return o, fmt.Errorf("listing LINSTOR's S3 remotes: %w", err)
	}
	for i := range remotes {
		if remotes[i].RemoteName == d.Remote.RemoteName {
			o.Remote = &remotes[i]
		}
	}
	if o.Schedule, err = linstor.GetSchedule(ctx, conn, d.Schedule.Name); err != nil {
		return o, fmt.Errorf("listing LINSTOR's schedules: %w", err)
	}
	if o.ControllerProps, err = conn.Controller.GetProps(ctx); err != nil {
		return o, fmt.Errorf("reading the controller's properties: %w", err)
	}
	groups, err := conn.ResourceGroups.GetAll(ctx)
	if err != nil {
		return o, fmt.Errorf("listing resource groups: %w", err)
	}
	for _, g := range groups {
		o.GroupProps[g.Name] = g.Props
	}
	return o, nil
}

func applyVolumeAction(ctx context.Context, conn *linstor.Connection, d volumebackup.Desired, a volumebackup.Action) error {
	switch a.Kind {
	case volumebackup.CreateRemote:
		return conn.Remote.CreateS3(ctx, d.Remote)
	case volumebackup.ModifyRemote:
		return conn.Remote.ModifyS3(ctx, d.Remote.RemoteName, d.Remote)
	case volumebackup.CreateSchedule:
		return linstor.CreateSchedule(ctx, conn, d.Schedule)
	case volumebackup.ModifySchedule:
		return linstor.ModifySchedule(ctx, conn, d.Schedule)
	case volumebackup.Enable, volumebackup.Disable:
		return linstor.SetScheduleEnabled(ctx, conn, d.Remote.RemoteName, d.Schedule.Name, a.Group, a.Kind == volumebackup.Enable)
	}
	return fmt.Errorf("unknown action %s", a.Kind)
}

// removeVolumeSchedule deletes LINSTOR's schedule (LINSTOR drops its enables with it)
// when spec.volumes is unset or the LinstorBackupSchedule is deleted, then releases the
// finalizer. The remote and every backup in the bucket stay: deleting a schedule never
// deletes a backup.
func (r *Reconciler) removeVolumeSchedule(ctx context.Context, s *scope) error {
	sc := s.schedule
	r.forgetBucketList(sc.UID)
	if !controllerutil.ContainsFinalizer(sc, names.FinalizerVolumeBackups) {
		return nil
	}
	// A cluster being deleted takes its LINSTOR with it: nothing to clean up there.
	if s.cluster != nil && s.cluster.DeletionTimestamp == nil && r.Linstor != nil {
		conn, err := r.Linstor.Connect(ctx, s.cluster)
		if err != nil {
			return err
		}
		if err := linstor.DeleteSchedule(ctx, conn, volumebackup.Name(sc.Name)); err != nil && !errors.Is(err, lapi.NotFoundError) {
			return fmt.Errorf("deleting LINSTOR schedule %s: %w", volumebackup.Name(sc.Name), err)
		}
		event(r, sc, false, "VolumeBackups", "LINSTOR: deleted schedule "+volumebackup.Name(sc.Name)+" (the backups in the bucket stay)")
	}
	// Without the cluster there is no LINSTOR to clean up.
	sc.Status.Volumes = nil
	controllerutil.RemoveFinalizer(sc, names.FinalizerVolumeBackups)
	return client.IgnoreNotFound(r.Client.Update(ctx, sc))
}

// maxNamedFailures is how many failed resources the Degraded message names.
const maxNamedFailures = 3

// volumeFailures is the Degraded condition's reason and message when LINSTOR's last
// shipment of some resources failed ("" when none did).
func volumeFailures(v *linstorv1.VolumeBackupStatus) (reason, message string) {
	if v == nil || v.Failed == 0 {
		return "", ""
	}
	names := volumebackup.FailedNames(v.Resources, maxNamedFailures)
	named := strings.Join(names, ", ")
	if more := int(v.Failed) - len(names); more > 0 {
		named += fmt.Sprintf(" and %d more", more)
	}
	message = fmt.Sprintf("LINSTOR's last shipment of %d resources to remote %s failed: %s", v.Failed, v.Remote, named)
	for _, r := range v.Resources {
		if r.LastFailed != nil {
			message += fmt.Sprintf(" (%s: %s)", r.Name, r.LastFailure)
			break
		}
	}
	return linstorv1.ReasonVolumeShipmentsFailed, message + "; see status.volumes.resources"
}

func volumeCondition(s *scope) *metav1.Condition {
	v := s.volumes
	if v == nil {
		return nil
	}
	c := &metav1.Condition{Type: linstorv1.ConditionConfigured, Status: metav1.ConditionTrue, Reason: linstorv1.ReasonAsExpected, ObservedGeneration: s.schedule.Generation,
		Message: fmt.Sprintf("LINSTOR ships %d resources to remote %s on schedule %s (%d shipped, %d failed, %d not scheduled)", v.status.Scheduled, v.status.Remote,
			v.status.Schedule, v.status.Shipped, v.status.Failed, v.status.NotScheduled)}
	if v.reason != "" {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v.reason, v.message
	}
	return c
}

// keptBucketList is a schedule's last read of its remote's backup list: what Summarize
// reads of it, and what BucketListDue needs to know of that read.
type keptBucketList struct {
	// schedule names its schedule, for forgetting it when only the name is left.
	schedule types.NamespacedName
	remote   string
	read     volumebackup.ListRead
	backups  []linstor.ShippedBackup
}

// keptBucketList returns the schedule's kept list of remote; a zero one (never read)
// when there is none or it is another remote's.
func (r *Reconciler) keptBucketList(uid types.UID, remote string) keptBucketList {
	r.bucketListsMu.Lock()
	defer r.bucketListsMu.Unlock()
	if kept, ok := r.bucketLists[uid]; ok && kept.remote == remote {
		return kept
	}
	return keptBucketList{}
}

func (r *Reconciler) keepBucketList(sc *linstorv1.LinstorBackupSchedule, kept keptBucketList) {
	r.bucketListsMu.Lock()
	defer r.bucketListsMu.Unlock()
	if r.bucketLists == nil {
		r.bucketLists = map[types.UID]keptBucketList{}
	}
	kept.schedule = types.NamespacedName{Namespace: sc.Namespace, Name: sc.Name}
	r.bucketLists[sc.UID] = kept
}

// forgetBucketLists drops every kept list of the schedule named name (of any UID): it
// no longer exists.
func (r *Reconciler) forgetBucketLists(name types.NamespacedName) {
	r.bucketListsMu.Lock()
	defer r.bucketListsMu.Unlock()
	for uid, kept := range r.bucketLists {
		if kept.schedule == name {
			delete(r.bucketLists, uid)
		}
	}
}

// forgetBucketList drops the schedule's kept list: the schedule (or its volumes) is
// gone, or its remote changed.
func (r *Reconciler) forgetBucketList(uid types.UID) {
	r.bucketListsMu.Lock()
	defer r.bucketListsMu.Unlock()
	delete(r.bucketLists, uid)
}
