// Package linstorbackupschedule runs LinstorBackupSchedules: it creates a LinstorBackup
// when a run is due and deletes old backups by the schedule's retention, in the cluster
// and in the bucket. What to do is decided by pkg/backupschedule from the schedule, its
// backups and the time; this controller observes, acts and saves.
package linstorbackupschedule

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
	"github.com/linstor-operator/linstor-operator/pkg/backupschedule"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/names"
)

// Reconciler runs schedules.
type Reconciler struct {
	Client   client.Client
	Recorder record.EventRecorder
	// Bucket opens a LinstorBackupTarget's bucket (the target controller's Open); nil
	// leaves bucket retention out.
	Bucket BucketOpener
	// Now is the clock (tests set it).
	Now func() time.Time
	// Linstor opens connections to a cluster's LINSTOR (spec.volumes); nil leaves
	// volume backups out.
	Linstor *linstor.Connector

	// bucketLists keeps each schedule's last read of its remote's backup list, by the
	// schedule's UID: LINSTOR lists the whole bucket for it, so it is read only when
	// due (volumebackup.BucketListDue). In memory: a restarted operator reads it again.
	bucketListsMu sync.Mutex
	bucketLists   map[types.UID]keptBucketList
}

// BucketOpener lists and deletes the backups of a bucket.
type BucketOpener interface {
	StoredBackups(ctx context.Context, target *linstorv1.LinstorBackupTarget) ([]backupschedule.Stored, error)
	DeleteStored(ctx context.Context, target *linstorv1.LinstorBackupTarget, id string) error
}

// +kubebuilder:rbac:groups=linstor.io,resources=linstorbackupschedules,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=linstor.io,resources=linstorbackupschedules/finalizers,verbs=update
// +kubebuilder:rbac:groups=linstor.io,resources=linstorbackupschedules/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=linstor.io,resources=linstorbackups,verbs=create;delete

// Reconcile decides and acts on one schedule.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	s := &linstorv1.LinstorBackupSchedule{}
	if err := r.Client.Get(ctx, req.NamespacedName, s); err != nil {
		if apierrors.IsNotFound(err) {
			forgetMetrics(req.NamespacedName)
			// Its kept bucket list too (removeVolumeSchedule does when the finalizer
			// runs; a finalizer removed by hand skips it).
			r.forgetBucketLists(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	sc := &scope{schedule: s, now: r.now()}
	if s.DeletionTimestamp != nil {
		// Only LINSTOR's schedule is cleaned up: the backups stay.
		return reconciler.Pass(ctx, sc, func(context.Context, *scope, error) error { return nil }, 0, func() bool { return sc.stop },
			r.reconcileReferences,
			r.reconcileVolumes,
		)
	}
	return reconciler.Pass(ctx, sc, r.saveStatus, 0, func() bool { return sc.stop },
		r.reconcileReferences,
		r.reconcileVolumes,
		r.reconcileDecision,
		r.reconcileRun,
		r.reconcileRetention,
		r.reconcileBucketRetention,
	)
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// SetupWithManager registers the controller: a schedule wakes at its next run, and
// whenever one of its backups changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&linstorv1.LinstorBackupSchedule{}, builder.WithPredicates(reconciler.NotStatusOnly())).
		Watches(&linstorv1.LinstorBackup{}, handler.EnqueueRequestsFromMapFunc(scheduleOf)).
		Watches(&linstorv1.LinstorBackupTarget{}, handler.EnqueueRequestsFromMapFunc(r.schedulesOfTarget)).
		Complete(r)
}

func scheduleOf(_ context.Context, o client.Object) []ctrl.Request {
	name := o.GetLabels()[names.LabelBackupSchedule]
	if name == "" {
		return nil
	}
	return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
}

func (r *Reconciler) schedulesOfTarget(ctx context.Context, o client.Object) []ctrl.Request {
	var list linstorv1.LinstorBackupScheduleList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []ctrl.Request
	for _, s := range list.Items {
		if s.Spec.TargetRef != nil && s.Spec.TargetRef.Name == o.GetName() {
			out = append(out, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&s)})
		}
	}
	return out
}

func event(r *Reconciler, s *linstorv1.LinstorBackupSchedule, warning bool, reason, msg string) {
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	r.Recorder.Event(s, typ, reason, msg)
}
