// Package linstorbackup takes LinstorBackups: a copy of a cluster's LINSTOR database
// (k8s backend) with the LINSTOR controller stopped, written to chunked Secrets and
// verified by checksum. The LinstorCluster reconciler stops the controller while a
// backup of its cluster is Pending or Running, and starts it again afterwards.
package linstorbackup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/phases"
	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
	"github.com/linstor-operator/linstor-operator/pkg/render"
)

// Reconciler takes backups.
type Reconciler struct {
	Client client.Client
	// Database talks to the API server without a cache: LINSTOR's CRDs and the
	// controller's pods are read directly rather than cached cluster-wide.
	Database client.Client
	Recorder record.EventRecorder
}

// +kubebuilder:rbac:groups=linstor.io,resources=linstorbackups,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=linstor.io,resources=linstorbackups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=linstor.io,resources=linstorbackups/finalizers,verbs=update
// +kubebuilder:rbac:groups="",namespace=system,resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=delete,resourceNames=ebsremotes.internal.linstor.linbit.com;files.internal.linstor.linbit.com;keyvaluestore.internal.linstor.linbit.com;layerbcachevolumes.internal.linstor.linbit.com;layercachevolumes.internal.linstor.linbit.com;layerdrbdresourcedefinitions.internal.linstor.linbit.com;layerdrbdresources.internal.linstor.linbit.com;layerdrbdvolumedefinitions.internal.linstor.linbit.com;layerdrbdvolumes.internal.linstor.linbit.com;layerluksvolumes.internal.linstor.linbit.com;layeropenflexresourcedefinitions.internal.linstor.linbit.com;layeropenflexvolumes.internal.linstor.linbit.com;layerresourceids.internal.linstor.linbit.com;layerstoragevolumes.internal.linstor.linbit.com;layerwritecachevolumes.internal.linstor.linbit.com;linstorremotes.internal.linstor.linbit.com;linstorversion.internal.linstor.linbit.com;nodeconnections.internal.linstor.linbit.com;nodenetinterfaces.internal.linstor.linbit.com;nodes.internal.linstor.linbit.com;nodestorpool.internal.linstor.linbit.com;propscontainers.internal.linstor.linbit.com;resourceconnections.internal.linstor.linbit.com;resourcedefinitions.internal.linstor.linbit.com;resourcegroups.internal.linstor.linbit.com;resources.internal.linstor.linbit.com;rollback.internal.linstor.linbit.com;satellitescapacity.internal.linstor.linbit.com;schedules.internal.linstor.linbit.com;secaccesstypes.internal.linstor.linbit.com;secaclmap.internal.linstor.linbit.com;secconfiguration.internal.linstor.linbit.com;secdfltroles.internal.linstor.linbit.com;secidentities.internal.linstor.linbit.com;secidrolemap.internal.linstor.linbit.com;secobjectprotection.internal.linstor.linbit.com;secroles.internal.linstor.linbit.com;sectyperules.internal.linstor.linbit.com;sectypes.internal.linstor.linbit.com;spacehistory.internal.linstor.linbit.com;storpooldefinitions.internal.linstor.linbit.com;trackingdate.internal.linstor.linbit.com;volumeconnections.internal.linstor.linbit.com;volumedefinitions.internal.linstor.linbit.com;volumegroups.internal.linstor.linbit.com;volumes.internal.linstor.linbit.com
// A restore into a cluster without LINSTOR's tables (a new installation, a table a
// migration dropped) creates them; create cannot be limited by name, so pkg/dbbackup
// creates only the names of dbbackup.Tables.
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=create
// LINSTOR names its tables per release, so the backup needs every resource of its group.
// +kubebuilder:rbac:groups=internal.linstor.linbit.com,resources=*,verbs=get;list;create;delete

// Reconcile moves a backup through Pending, Running and Completed (or Failed).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	b := &linstorv1.LinstorBackup{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if b.DeletionTimestamp != nil && controllerutil.ContainsFinalizer(b, lifecycle.FinalizerBackupInUse) {
		return ctrl.Result{}, r.releaseOrphan(ctx, b)
	}
	switch b.Status.Phase {
	case linstorv1.BackupCompleted:
		return ctrl.Result{}, r.prune(ctx, b)
	case linstorv1.BackupFailed:
		return ctrl.Result{}, nil
	}
	cluster := &linstorv1.LinstorCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.ClusterRef.Name}, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.fail(ctx, b, fmt.Sprintf("LinstorCluster %s not found", b.Spec.ClusterRef.Name))
		}
		return ctrl.Result{}, err
	}
	if why := dbbackup.Unsupported(cluster); why != "" {
		return ctrl.Result{}, r.fail(ctx, b, why)
	}
	if deadline := b.CreationTimestamp.Add(timeout(b)); time.Now().After(deadline) {
		// A backup keeps LINSTOR's controller stopped: it must end, in failure if need be.
		return ctrl.Result{}, r.fail(ctx, b, fmt.Sprintf("not completed within %s (%s); the LINSTOR controller starts again", timeout(b), or(b.Status.Message, string(b.Status.Phase))))
	}
	if b.Status.Phase == "" {
		return ctrl.Result{}, r.setStatus(ctx, b, func(st *linstorv1.LinstorBackupStatus) {
			st.Phase, st.Message = linstorv1.BackupPending, "Waiting for the LINSTOR controller to stop"
		})
	}
	if b.Status.Phase == linstorv1.BackupPending {
		// Whether a copy may start is read from the API server: a restore, rollback or
		// migration saved a moment ago may not be in the cache yet.
		if err := r.Database.Get(ctx, client.ObjectKeyFromObject(cluster), cluster); err != nil {
			return ctrl.Result{}, err
		}
		if why := lifecycle.BackupWaits(&cluster.Status); why != "" {
			if err := r.setStatus(ctx, b, func(st *linstorv1.LinstorBackupStatus) { st.Message = "Waiting: " + why }); err != nil {
				return ctrl.Result{}, err
			}
			return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
		}
	}
	stopped, err := dbbackup.ControllerStopped(ctx, r.Database, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !stopped {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	defer func() {
		// The reason a try failed reaches the status; the deadline ends the retries.
		if reterr != nil && !apierrors.IsConflict(reterr) {
			_ = r.setStatus(ctx, b, func(st *linstorv1.LinstorBackupStatus) {
				st.Message = fmt.Sprintf("A try failed, retrying until %s: %v", b.CreationTimestamp.Add(timeout(b)).UTC().Format(time.RFC3339), reterr)
			})
		}
	}()
	if b.Status.Phase == linstorv1.BackupPending {
		if err := r.setStatus(ctx, b, func(st *linstorv1.LinstorBackupStatus) {
			st.Phase, st.Message, st.StartedAt = linstorv1.BackupRunning, "Copying the database", ptrTime(metav1.Now())
			// The version that wrote the database, taken when the copy starts: nothing
			// migrates it from here on (BackupWaits, BackupMayBeTorn).
			st.LinstorVersion = lifecycle.DatabaseVersion(&cluster.Status)
		}); err != nil {
			return ctrl.Result{}, err
		}
		// Read again now that Running is stored: a restore or rollback reads the
		// backups before its first write and waits for a Running one, so either it saw
		// this one Running, or it was saved before this read and is seen here. Seen: the
		// copy waits again, before reading anything.
		now := &linstorv1.LinstorCluster{}
		if err := r.Database.Get(ctx, client.ObjectKeyFromObject(cluster), now); err != nil {
			return ctrl.Result{}, err
		}
		if why := lifecycle.BackupWaits(&now.Status); why != "" {
			if err := r.setStatus(ctx, b, func(st *linstorv1.LinstorBackupStatus) {
				st.Phase, st.StartedAt, st.Message = linstorv1.BackupPending, nil, "Waiting: "+why
			}); err != nil {
				return ctrl.Result{}, err
			}
			return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
		}
	}
	return ctrl.Result{}, r.take(ctx, b, cluster)
}

// take streams the database into chunk Secrets and verifies them: a page of objects
// and a chunk are all it holds, whatever the database's size. Resuming after a restart
// starts the copy again: the controller is still stopped, so it is the same.
//
// The controller was seen stopped once, before the copy; it is looked for again before
// each chunk is stored and before the copy is called Completed. A controller that
// started meanwhile (the LinstorCluster reconciler deciding on a stale view) may have
// written while the tables were read: such a copy is torn, yet its checksum matches
// (it proves only that the Secrets hold what was read), so it fails instead.
func (r *Reconciler) take(ctx context.Context, b *linstorv1.LinstorBackup, cluster *linstorv1.LinstorCluster) error {
	started := time.Now()
	stayedStopped := func() error { return r.controllerStayedStopped(ctx, cluster, started) }
	cw := &chunkWriter{ctx: ctx, r: r, b: b, hash: sha256.New(), stayedStopped: stayedStopped}
	counts, err := dbbackup.Write(ctx, r.Database, cw)
	if err == nil {
		err = cw.flush()
	}
	switch {
	case errors.Is(err, dbbackup.ErrNoDatabase), errors.Is(err, errForeignSecret), errors.Is(err, errControllerRan):
		return r.fail(ctx, b, err.Error())
	case err != nil:
		return err
	}
	checksum := "sha256:" + hex.EncodeToString(cw.hash.Sum(nil))
	// Read back what was written, from the API server: only a verified stored copy
	// counts, and the cache may not have seen the new Secrets yet (a miss there failed
	// the try and wrote every chunk again).
	if got, err := dbbackup.ChecksumOf(ctx, r.Database, b.Namespace, cw.names); err != nil {
		return err
	} else if got != checksum {
		return r.fail(ctx, b, fmt.Sprintf("the stored copy does not match: checksum %s, wrote %s", got, checksum))
	}
	if err := stayedStopped(); errors.Is(err, errControllerRan) {
		return r.fail(ctx, b, err.Error())
	} else if err != nil {
		return err
	}
	if err := r.setStatus(ctx, b, func(st *linstorv1.LinstorBackupStatus) {
		st.Phase, st.Checksum, st.Size, st.Secrets = linstorv1.BackupCompleted, checksum, cw.size, cw.names
		st.CRDs, st.Objects = int32(counts.CRDs), int32(counts.Objects)
		st.CompletedAt = ptrTime(metav1.Now())
		st.Message = fmt.Sprintf("%d CRDs, %d objects, %d bytes in %d Secrets", counts.CRDs, counts.Objects, cw.size, len(cw.names))
	}); err != nil {
		return err
	}
	r.Recorder.Eventf(b, corev1.EventTypeNormal, "BackupCompleted", "Backed up LINSTOR %s: %d CRDs, %d objects (%s)", b.Status.LinstorVersion, counts.CRDs, counts.Objects, checksum)
	return nil
}

// writeChunk creates a chunk Secret, or updates one this backup created before (a
// resumed copy). A Secret of that name that belongs to anything else is left alone
// and reported (foreign): adopting it would hand it to the garbage collector when the
// backup is pruned.
func (r *Reconciler) writeChunk(ctx context.Context, b *linstorv1.LinstorBackup, name string, chunk []byte) (foreign bool, err error) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.Namespace,
		Labels: map[string]string{dbbackup.LabelBackup: b.Name, render.LabelManagedBy: render.ManagedBy}},
		Data: map[string][]byte{dbbackup.ChunkKey: chunk}}
	if err := controllerutil.SetControllerReference(b, secret, r.Client.Scheme()); err != nil {
		return false, err
	}
	err = r.Client.Create(ctx, secret)
	if !apierrors.IsAlreadyExists(err) {
		return false, err
	}
	existing := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: name}, existing); err != nil {
		return false, err
	}
	if !metav1.IsControlledBy(existing, b) {
		return true, nil
	}
	existing.Data = secret.Data
	return false, r.Client.Update(ctx, existing)
}

var errForeignSecret = errors.New("foreign Secret")

// errControllerRan: a LINSTOR controller pod was seen during the copy.
var errControllerRan = errors.New("the LINSTOR controller did not stay stopped while the database was copied")

// controllerStayedStopped reports errControllerRan, naming the pod and when it was
// created, if a LINSTOR controller pod of the cluster exists now (read from the API
// server). A terminating one counts: its controller may still write.
func (r *Reconciler) controllerStayedStopped(ctx context.Context, cluster *linstorv1.LinstorCluster, copyStarted time.Time) error {
	// A restore, rollback or migration that began meanwhile writes with no controller
	// pod at all.
	now := &linstorv1.LinstorCluster{}
	if err := r.Database.Get(ctx, client.ObjectKeyFromObject(cluster), now); err != nil {
		return err
	}
	why := lifecycle.BackupMayBeTorn(&now.Status)
	if r := now.Status.Restore; why == "" && r != nil && r.Phase == lifecycle.RestoreRestored && r.CompletedAt != nil &&
		r.CompletedAt.Time.After(copyStarted) { // seconds: one completed in the copy's first second is not seen
		why = fmt.Sprintf("a restore of %s replaced the database while it was copied (completed at %s)", r.BackupName, r.CompletedAt.UTC().Format(time.RFC3339))
	}
	if why != "" {
		return fmt.Errorf("%w: %s. The copy may mix the database from before and after it, so it is not a backup; create another LinstorBackup once it has ended", errControllerRan, why)
	}
	pods, err := dbbackup.ControllerPods(ctx, r.Database, cluster)
	if err != nil || len(pods) == 0 {
		return err
	}
	p := pods[0]
	created := p.CreationTimestamp.UTC().Format(time.RFC3339)
	when := fmt.Sprintf("exists (created at %s)", created)
	// Creation times have seconds: one in the second the copy started counts as after.
	if !p.CreationTimestamp.Time.Before(copyStarted.Truncate(time.Second)) {
		when = fmt.Sprintf("was created at %s, after the copy started at %s", created, copyStarted.UTC().Format(time.RFC3339))
	}
	return fmt.Errorf("%w: pod %s %s. The copy may mix the database from before and after the controller's writes, so it is not a backup "+
		"(its checksum only proves the Secrets hold what was read); create another LinstorBackup", errControllerRan, p.Name, when)
}

// chunkWriter cuts the stream into chunk Secrets as it comes, hashing it.
type chunkWriter struct {
	ctx   context.Context
	r     *Reconciler
	b     *linstorv1.LinstorBackup
	buf   []byte
	names []string
	size  int64
	hash  hash.Hash
	// stayedStopped is asked before each chunk is stored.
	stayedStopped func() error
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	n := len(p)
	w.hash.Write(p)
	w.size += int64(n)
	for len(p) > 0 {
		room := dbbackup.ChunkSize - len(w.buf)
		take := min(room, len(p))
		w.buf = append(w.buf, p[:take]...)
		p = p[take:]
		if len(w.buf) == dbbackup.ChunkSize {
			if err := w.flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

// flush writes the buffered chunk (the last one may be short; an empty stream is one
// empty chunk).
func (w *chunkWriter) flush() error {
	if len(w.buf) == 0 && len(w.names) > 0 {
		return nil
	}
	if w.stayedStopped != nil {
		if err := w.stayedStopped(); err != nil {
			return err
		}
	}
	name := dbbackup.ChunkName(w.b, len(w.names))
	foreign, err := w.r.writeChunk(w.ctx, w.b, name, w.buf)
	if err != nil {
		return fmt.Errorf("writing Secret %s: %w", name, err)
	}
	if foreign {
		return fmt.Errorf("%w: Secret %s already exists and is not this backup's: the operator never overwrites, adopts or deletes a Secret it did not create; rename it or create the backup under another name", errForeignSecret, name)
	}
	w.names = append(w.names, name)
	w.buf = w.buf[:0]
	return nil
}

// prune applies the cluster's keepBackups to its completed backups, oldest first.
func (r *Reconciler) prune(ctx context.Context, b *linstorv1.LinstorBackup) error {
	cluster := &linstorv1.LinstorCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.ClusterRef.Name}, cluster); err != nil {
		return client.IgnoreNotFound(err)
	}
	db := cluster.Spec.Database
	if db == nil || db.KeepBackups == nil {
		return nil
	}
	var list linstorv1.LinstorBackupList
	if err := r.Client.List(ctx, &list, client.InNamespace(b.Namespace)); err != nil {
		return err
	}
	var done []linstorv1.LinstorBackup
	for _, x := range list.Items {
		if x.Spec.ClusterRef.Name == cluster.Name && x.Status.Phase == linstorv1.BackupCompleted && x.DeletionTimestamp == nil {
			done = append(done, x)
		}
	}
	// Completion times have seconds: two backups done in the same second are ordered by
	// creation, then name, so the one pruned is the older one whatever the List order.
	sort.Slice(done, func(i, j int) bool {
		a, b := done[i], done[j]
		if !a.Status.CompletedAt.Equal(b.Status.CompletedAt) {
			return a.Status.CompletedAt.Before(b.Status.CompletedAt)
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	// The newest backups stay, and so does any backup the lifecycle names: an upgrade's
	// (its rollback, or the way back afterwards), a restore's, spec.database.restoreFrom.
	named := lifecycle.BackupsNamed(&cluster.Status, db.RestoreFrom)
	for i := 0; i < len(done)-int(*db.KeepBackups); i++ {
		if slices.Contains(named, done[i].Name) || controllerutil.ContainsFinalizer(&done[i], lifecycle.FinalizerBackupInUse) {
			continue
		}
		if err := r.Client.Delete(ctx, &done[i]); client.IgnoreNotFound(err) != nil {
			return err
		}
		r.Recorder.Eventf(cluster, corev1.EventTypeNormal, "BackupPruned", "Deleted LinstorBackup %s: keepBackups is %d", done[i].Name, *db.KeepBackups)
	}
	return nil
}

// releaseOrphan takes FinalizerBackupInUse off a backup being deleted whose
// LinstorCluster is gone, unless the database-replacement marker still names it (a
// recreated LinstorCluster must finish that restore with it). While the LinstorCluster
// exists, its reconciler decides.
func (r *Reconciler) releaseOrphan(ctx context.Context, b *linstorv1.LinstorBackup) error {
	err := r.Database.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.ClusterRef.Name}, &linstorv1.LinstorCluster{})
	if !apierrors.IsNotFound(err) {
		return err
	}
	marker := &corev1.ConfigMap{}
	err = r.Database.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: lifecycle.MarkerName(b.Spec.ClusterRef.Name)}, marker)
	switch {
	case err == nil && marker.Data[dbbackup.MarkerKeyBackup] == b.Name:
		r.Recorder.Eventf(b, corev1.EventTypeWarning, "BackupInUse", "Deletion waits: ConfigMap %s records that LinstorCluster %s's database is being replaced from this backup; "+
			"recreate the LinstorCluster to finish it, or delete the ConfigMap if the database was deliberately abandoned", marker.Name, b.Spec.ClusterRef.Name)
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	return dbbackup.SetInUse(ctx, r.Database, b, lifecycle.FinalizerBackupInUse, false)
}

func (r *Reconciler) fail(ctx context.Context, b *linstorv1.LinstorBackup, msg string) error {
	r.Recorder.Event(b, corev1.EventTypeWarning, "BackupFailed", msg)
	return r.setStatus(ctx, b, func(st *linstorv1.LinstorBackupStatus) { st.Phase, st.Message = linstorv1.BackupFailed, msg })
}

func (r *Reconciler) setStatus(ctx context.Context, b *linstorv1.LinstorBackup, mutate func(*linstorv1.LinstorBackupStatus)) error {
	before := b.DeepCopy()
	mutate(&b.Status)
	setConditions(b)
	if equality.Semantic.DeepEqual(before.Status, b.Status) {
		return nil
	}
	// Optimistic lock: a status written since this pass read the backup (a completed,
	// verified copy; another operator replica during a leader handover) is never
	// overwritten; the conflict requeues the pass on what is stored.
	return r.Client.Status().Patch(ctx, b, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&linstorv1.LinstorBackup{}).
		// A deleted backup held for a database-replacement marker is released once the
		// marker goes: its deletion wakes the backups it may have held.
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.backupsHeldBy)).
		Complete(r)
}

// backupsHeldBy maps a database-replacement marker to its cluster's LinstorBackups that
// are being deleted and carry FinalizerBackupInUse.
func (r *Reconciler) backupsHeldBy(ctx context.Context, o client.Object) []reconcile.Request {
	cluster, ok := strings.CutSuffix(o.GetName(), lifecycle.MarkerName(""))
	if !ok || cluster == "" {
		return nil
	}
	var list linstorv1.LinstorBackupList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, b := range list.Items {
		if b.Spec.ClusterRef.Name == cluster && b.DeletionTimestamp != nil && controllerutil.ContainsFinalizer(&b, lifecycle.FinalizerBackupInUse) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&b)})
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

// setConditions derives the conditions from the phase.
func setConditions(b *linstorv1.LinstorBackup) {
	st := &b.Status
	st.ObservedGeneration = b.Generation
	set := func(typ string, status metav1.ConditionStatus, reason string) {
		phases.SetCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: st.Message, ObservedGeneration: b.Generation})
	}
	switch st.Phase {
	case linstorv1.BackupCompleted:
		set(linstorv1.ConditionAvailable, metav1.ConditionTrue, "Completed")
		set(linstorv1.ConditionProgressing, metav1.ConditionFalse, "Completed")
		set(linstorv1.ConditionDegraded, metav1.ConditionFalse, "Completed")
	case linstorv1.BackupFailed:
		set(linstorv1.ConditionAvailable, metav1.ConditionFalse, "Failed")
		set(linstorv1.ConditionProgressing, metav1.ConditionFalse, "Failed")
		set(linstorv1.ConditionDegraded, metav1.ConditionTrue, "Failed")
	default:
		set(linstorv1.ConditionAvailable, metav1.ConditionFalse, string(st.Phase))
		set(linstorv1.ConditionProgressing, metav1.ConditionTrue, string(st.Phase))
		set(linstorv1.ConditionDegraded, metav1.ConditionFalse, string(st.Phase))
	}
}
