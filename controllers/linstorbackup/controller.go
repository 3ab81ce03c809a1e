// Package linstorbackup takes LinstorBackups: a copy of a cluster's LINSTOR database
// (k8s backend) with the LINSTOR controller stopped, written to chunked Secrets and
// verified by checksum. The LinstorCluster reconciler stops the controller while a
// backup of its cluster is Pending or Running, and starts it again afterwards.
package linstorbackup

import (
	"context"
	"strings"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
)

// Reconciler takes backups.
type Reconciler struct {
	Client client.Client
	// Database talks to the API server without a cache: LINSTOR's CRDs and the
	// controller's pods are read directly rather than cached cluster-wide.
	Database client.Client
	Recorder record.EventRecorder
	// RecheckInterval overrides how often a Completed backup's bucket copy is looked at
	// (tests).
	RecheckInterval time.Duration

	// unpublished: the deletions of never-published copies under way (deleteUnpublished).
	unpublished unpublishedTries
}

// +kubebuilder:rbac:groups=linstor.io,resources=linstorbackups,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=linstor.io,resources=linstorbackups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=linstor.io,resources=linstorbackups/finalizers,verbs=update
// +kubebuilder:rbac:groups="",namespace=system,resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=linstor.io,resources=linstorbackuptargets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=delete,resourceNames=ebsremotes.internal.linstor.linbit.com;files.internal.linstor.linbit.com;keyvaluestore.internal.linstor.linbit.com;layerbcachevolumes.internal.linstor.linbit.com;layercachevolumes.internal.linstor.linbit.com;layerdrbdresourcedefinitions.internal.linstor.linbit.com;layerdrbdresources.internal.linstor.linbit.com;layerdrbdvolumedefinitions.internal.linstor.linbit.com;layerdrbdvolumes.internal.linstor.linbit.com;layerluksvolumes.internal.linstor.linbit.com;layeropenflexresourcedefinitions.internal.linstor.linbit.com;layeropenflexvolumes.internal.linstor.linbit.com;layerresourceids.internal.linstor.linbit.com;layerstoragevolumes.internal.linstor.linbit.com;layerwritecachevolumes.internal.linstor.linbit.com;linstorremotes.internal.linstor.linbit.com;linstorversion.internal.linstor.linbit.com;nodeconnections.internal.linstor.linbit.com;nodenetinterfaces.internal.linstor.linbit.com;nodes.internal.linstor.linbit.com;nodestorpool.internal.linstor.linbit.com;propscontainers.internal.linstor.linbit.com;resourceconnections.internal.linstor.linbit.com;resourcedefinitions.internal.linstor.linbit.com;resourcegroups.internal.linstor.linbit.com;resources.internal.linstor.linbit.com;rollback.internal.linstor.linbit.com;s3remotes.internal.linstor.linbit.com;satellitescapacity.internal.linstor.linbit.com;schedules.internal.linstor.linbit.com;secaccesstypes.internal.linstor.linbit.com;secaclmap.internal.linstor.linbit.com;secconfiguration.internal.linstor.linbit.com;secdfltroles.internal.linstor.linbit.com;secidentities.internal.linstor.linbit.com;secidrolemap.internal.linstor.linbit.com;secobjectprotection.internal.linstor.linbit.com;secroles.internal.linstor.linbit.com;sectyperules.internal.linstor.linbit.com;sectypes.internal.linstor.linbit.com;spacehistory.internal.linstor.linbit.com;storpooldefinitions.internal.linstor.linbit.com;trackingdate.internal.linstor.linbit.com;volumeconnections.internal.linstor.linbit.com;volumedefinitions.internal.linstor.linbit.com;volumegroups.internal.linstor.linbit.com;volumes.internal.linstor.linbit.com
// A restore into a cluster without LINSTOR's tables (a new installation, a table a
// migration dropped) creates them; create cannot be limited by name, so pkg/dbbackup
// creates only the names of dbbackup.Tables.
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=create
// LINSTOR names its tables per release, so the backup needs every resource of its group.
// +kubebuilder:rbac:groups=internal.linstor.linbit.com,resources=*,verbs=get;list;create;delete

// Reconcile moves a backup through Pending, Running and Completed (or Failed). Each
// step needs the one before it done, so the first that cannot go on ends the pass; the
// steps save their progress themselves (status.go), because a restore or rollback
// reads it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &linstorv1.LinstorBackup{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if b.DeletionTimestamp != nil && controllerutil.ContainsFinalizer(b, names.FinalizerBackupInUse) {
		return ctrl.Result{}, r.releaseOrphan(ctx, b)
	}
	s := &scope{backup: b}
	// No poll: a backup is woken by its own writes, and a step that waits says when.
	return reconciler.Pass(ctx, s, r.saveStatus, 0, func() bool { return s.stop },
		r.reconcileEnded,
		r.reconcileImport,
		r.reconcileCluster,
		r.reconcileVerifying,
		r.reconcileTargetUsable,
		r.reconcileAccepted,
		r.reconcileWaiting,
		r.reconcileControllerStopped,
		r.reconcileRunning,
		r.reconcileCopy,
	)
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&linstorv1.LinstorBackup{}).
		// A deleted backup held for a database-replacement marker is released once the
		// marker goes: its deletion wakes the backups it may have held.
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.backupsHeldBy)).
		// An import waiting for its target (or a copy being read back) goes on when the
		// target appears or changes.
		Watches(&linstorv1.LinstorBackupTarget{}, handler.EnqueueRequestsFromMapFunc(r.backupsVerifyingAt)).
		Complete(r)
}

// backupsHeldBy maps a database-replacement marker to its cluster's LinstorBackups that
// are being deleted and carry FinalizerBackupInUse.
func (r *Reconciler) backupsHeldBy(ctx context.Context, o client.Object) []ctrl.Request {
	cluster, ok := strings.CutSuffix(o.GetName(), names.DatabaseReplacementMarker(""))
	if !ok || cluster == "" {
		return nil
	}
	var list linstorv1.LinstorBackupList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []ctrl.Request
	for _, b := range list.Items {
		if b.Spec.ClusterRef.Name == cluster && b.DeletionTimestamp != nil && controllerutil.ContainsFinalizer(&b, names.FinalizerBackupInUse) {
			out = append(out, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&b)})
		}
	}
	return out
}

// backupsVerifyingAt maps a LinstorBackupTarget to the backups in Verifying that name it.
func (r *Reconciler) backupsVerifyingAt(ctx context.Context, o client.Object) []ctrl.Request {
	var list linstorv1.LinstorBackupList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []ctrl.Request
	for _, b := range list.Items {
		if b.Spec.TargetRef != nil && b.Spec.TargetRef.Name == o.GetName() && (b.Status.Phase == "" || b.Status.Phase == linstorv1.BackupVerifying) {
			out = append(out, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&b)})
		}
	}
	return out
}

func ptrTime(t metav1.Time) *metav1.Time { return &t }

func timeout(b *linstorv1.LinstorBackup) time.Duration {
	if b.Spec.Timeout != nil && b.Spec.Timeout.Duration > 0 {
		return b.Spec.Timeout.Duration
	}
	return linstorv1.DefaultBackupTimeout
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}
