package linstorbackup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/backuptarget"
	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
	"github.com/linstor-operator/linstor-operator/pkg/names"
	"github.com/linstor-operator/linstor-operator/pkg/offsite"
)

// Backups kept in a LinstorBackupTarget's bucket (spec.targetRef): the copy is streamed
// encrypted into the bucket while the LINSTOR controller is stopped, then read back
// (Verifying) with LINSTOR started again, and only then published (its manifest
// written) and Completed. An imported backup (spec.importFrom) is only read back.

// retryBucket is how soon a bucket that failed for a reason that may pass (down, slow,
// 5xx) is tried again, until the backup's deadline.
const retryBucket = 10 * time.Second

// byDeadline bounds a step's requests to the bucket by the backup's deadline: a bucket
// that takes a connection and never answers (a gateway on a hung disk) must not hold
// the worker, nor LINSTOR's controller stopped, past it; the next pass fails the backup.
func byDeadline(ctx context.Context, b *linstorv1.LinstorBackup) (context.Context, context.CancelFunc) {
	return context.WithDeadline(ctx, b.CreationTimestamp.Add(timeout(b)))
}

// recheckTimeout bounds one look at a bucket: a new backup's check of its target, a
// Completed backup's look at its copy.
const recheckTimeout = 30 * time.Second

// stayedStoppedEvery is how many bytes of the stream pass between two looks at whether
// the LINSTOR controller stayed stopped.
const stayedStoppedEvery = 8 << 20

// openTarget opens the bucket of the backup's target.
func (r *Reconciler) openTarget(ctx context.Context, b *linstorv1.LinstorBackup) (*offsite.Store, error) {
	t := &linstorv1.LinstorBackupTarget{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.TargetRef.Name}, t); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &backuptarget.MissingError{}
		}
		return nil, err
	}
	return backuptarget.Open(ctx, r.Client, t)
}

// bucketFailure says whether a bucket error ends the backup (it cannot pass by
// waiting: a missing Secret or target, bad credentials, no bucket, a damaged copy, the
// wrong key) or is retried.
func bucketFailure(err error) (final bool) {
	var missing *backuptarget.MissingError
	if errors.As(err, &missing) {
		return true
	}
	switch offsite.ReasonOf(err) {
	case offsite.ReasonInvalid, offsite.ReasonUnauthorized, offsite.ReasonNoSuchBucket, offsite.ReasonUntrusted,
		offsite.ReasonNotFound, offsite.ReasonCorrupt, offsite.ReasonWrongKey, offsite.ReasonExists:
		return true
	}
	return false
}

func targetError(b *linstorv1.LinstorBackup, err error) string {
	var missing *backuptarget.MissingError
	if errors.As(err, &missing) && missing.Error() == "" {
		return fmt.Sprintf("spec.targetRef: LinstorBackupTarget %s not found", b.Spec.TargetRef.Name)
	}
	return "spec.targetRef: " + err.Error()
}

// reconcileTargetUsable fails a new backup to a bucket that cannot be used, before the
// LINSTOR controller is stopped for it: a copy that cannot be sent must not keep
// LINSTOR down until the deadline.
func (r *Reconciler) reconcileTargetUsable(ctx context.Context, s *scope) (ctrl.Result, error) {
	b := s.backup
	if b.Spec.TargetRef == nil || b.Status.Phase != "" {
		return ctrl.Result{}, nil
	}
	store, err := r.openTarget(ctx, b)
	if err == nil {
		// The one worker waits on this; a bucket that does not answer the check soon
		// cannot take the copy either.
		checkCtx, cancel := context.WithTimeout(ctx, min(recheckTimeout, time.Until(b.CreationTimestamp.Add(timeout(b)))))
		err = store.Check(checkCtx)
		cancel()
	}
	if err != nil {
		return s.end(ctrl.Result{}, r.fail(ctx, b, targetError(b, err)+"; the LINSTOR controller was not stopped"))
	}
	return ctrl.Result{}, nil
}

// storedID is the backup's ID in the bucket: from its cluster and the copy's start, so
// a copy resumed after a restart goes to the same place.
func storedID(b *linstorv1.LinstorBackup, cluster *linstorv1.LinstorCluster) string {
	return offsite.NewID(offsite.ClusterIdentity{Namespace: cluster.Namespace, Name: cluster.Name, UID: string(cluster.UID)}, b.Status.StartedAt.Time, b.Name)
}

// takeToBucket streams the database into the bucket and leaves the backup Verifying:
// from here on LINSTOR may run again.
func (r *Reconciler) takeToBucket(ctx context.Context, b *linstorv1.LinstorBackup, cluster *linstorv1.LinstorCluster) error {
	started := time.Now()
	store, err := r.openTarget(ctx, b)
	if err != nil {
		if bucketFailure(err) {
			return r.fail(ctx, b, targetError(b, err))
		}
		return err
	}
	// A pass on a stale cache (the Verifying write not seen yet, LINSTOR not started
	// yet) would send the copy again: age encrypts anew, so the object would no longer
	// be the one Verifying reads back, and its last look could delete it. The copy
	// goes only on the backup as stored.
	stored := &linstorv1.LinstorBackup{}
	if err := r.Database.Get(ctx, client.ObjectKeyFromObject(b), stored); err != nil {
		return err
	}
	if stored.ResourceVersion != b.ResourceVersion {
		return apierrors.NewConflict(linstorv1.GroupVersion.WithResource("linstorbackups").GroupResource(), b.Name, errors.New("the backup changed since this pass read it"))
	}
	id := storedID(b, cluster)
	var counts dbbackup.Counts
	upCtx, cancel := byDeadline(ctx, b)
	defer cancel()
	up, err := store.Upload(upCtx, id, func(w io.Writer) error {
		cw := &stoppedWatch{w: w, check: func() error { return r.controllerStayedStopped(upCtx, cluster, started) }}
		var err error
		counts, err = dbbackup.Write(upCtx, r.Database, cw)
		return err
	})
	if err == nil {
		// The last look: a controller that started at the very end may have written.
		err = r.controllerStayedStopped(ctx, cluster, started)
		if err != nil {
			_ = store.Delete(ctx, id) // never published; its data goes too
		}
	}
	switch {
	case errors.Is(err, dbbackup.ErrNoDatabase), errors.Is(err, errControllerRan):
		return r.fail(ctx, b, err.Error())
	case err != nil && bucketFailure(err):
		return r.fail(ctx, b, targetError(b, err))
	case err != nil:
		return err
	}
	stopped := time.Since(b.CreationTimestamp.Time).Round(time.Millisecond)
	fp := store.Key().Fingerprint()
	if err := r.setStatus(ctx, b, func(st *linstorv1.LinstorBackupStatus) {
		st.Phase, st.Checksum, st.Size = linstorv1.BackupVerifying, up.Checksum, up.Size
		st.CRDs, st.Objects = int32(counts.CRDs), int32(counts.Objects)
		st.Stored = &linstorv1.StoredCopy{Target: b.Spec.TargetRef.Name, ID: id, Location: location(store), EncryptedSize: up.EncryptedSize, EncryptedChecksum: up.EncryptedChecksum,
			KeyFingerprint: fp, Cluster: cluster.Namespace + "/" + cluster.Name, ClusterUID: string(cluster.UID)}
		st.ControllerStopped = &metav1.Duration{Duration: stopped}
		st.Message = fmt.Sprintf("Sent %d CRDs, %d objects (%d bytes encrypted) to the bucket; reading it back with LINSTOR started again", counts.CRDs, counts.Objects, up.EncryptedSize)
	}); err != nil {
		return err
	}
	return nil
}

// stoppedWatch passes the stream on and looks every stayedStoppedEvery bytes whether
// the LINSTOR controller stayed stopped.
type stoppedWatch struct {
	w     io.Writer
	n     int
	check func() error
}

func (s *stoppedWatch) Write(p []byte) (int, error) {
	s.n += len(p)
	if s.n >= stayedStoppedEvery {
		s.n = 0
		if err := s.check(); err != nil {
			return 0, err
		}
	}
	return s.w.Write(p)
}

// reconcileVerifying reads a sent copy back, publishes it and completes the backup.
func (r *Reconciler) reconcileVerifying(ctx context.Context, s *scope) (ctrl.Result, error) {
	b := s.backup
	if b.Status.Phase != linstorv1.BackupVerifying || b.Spec.ImportFrom != "" {
		return ctrl.Result{}, nil
	}
	st := b.Status.Stored
	store, err := r.openTarget(ctx, b)
	bucketCtx, cancel := byDeadline(ctx, b)
	defer cancel()
	if err == nil {
		ctx := bucketCtx
		up := offsite.Upload{ID: st.ID, Size: b.Status.Size, Checksum: b.Status.Checksum, EncryptedSize: st.EncryptedSize, EncryptedChecksum: st.EncryptedChecksum}
		if err = store.Verify(ctx, up); err == nil {
			err = store.Publish(ctx, offsite.Manifest{ID: st.ID,
				Cluster: offsite.ClusterIdentity{Namespace: s.cluster.Namespace, Name: s.cluster.Name, UID: st.ClusterUID},
				Backup:  b.Name, Schedule: b.Labels[names.LabelBackupSchedule], LinstorVersion: b.Status.LinstorVersion,
				OperatorVersion: operatorVersion(), CreatedAt: b.Status.StartedAt.Time.UTC(), CRDs: int(b.Status.CRDs), Objects: int(b.Status.Objects),
				Size: up.Size, Checksum: up.Checksum, EncryptedSize: up.EncryptedSize, EncryptedChecksum: up.EncryptedChecksum})
		}
	}
	switch {
	case err != nil && bucketFailure(err):
		return s.end(r.failUnpublished(ctx, b, "the copy in the bucket did not read back as written: "+targetError(b, err)))
	case err != nil:
		return s.end(ctrl.Result{RequeueAfter: retryBucket}, r.setStatus(ctx, b, func(st *linstorv1.LinstorBackupStatus) {
			st.Message = "Reading the copy back failed, retrying: " + err.Error()
		}))
	}
	if err := r.setStatus(ctx, b, func(st *linstorv1.LinstorBackupStatus) {
		st.Phase, st.CompletedAt = linstorv1.BackupCompleted, ptrTime(metav1.Now())
		st.Message = fmt.Sprintf("%d CRDs, %d objects; %d bytes encrypted in the bucket as %s, read back and verified", b.Status.CRDs, b.Status.Objects, st.Stored.EncryptedSize, st.Stored.ID)
	}); err != nil {
		return s.end(ctrl.Result{}, err)
	}
	r.Recorder.Eventf(b, corev1.EventTypeNormal, "BackupCompleted", "Backed up LINSTOR %s to the bucket of LinstorBackupTarget %s as %s (%s); the controller was stopped for %s",
		b.Status.LinstorVersion, st.Target, st.ID, b.Status.Checksum, b.Status.ControllerStopped.Duration)
	return s.end(ctrl.Result{}, nil)
}

// failUnpublished fails a backup whose copy was sent but did not become Completed
// (it did not read back, or the deadline passed while Verifying), and deletes that
// copy: never published, it restores nothing, yet holds the encrypted database and
// costs storage, and no retention sees it. Failed is saved first, with the copy marked
// deletePending, under the optimistic lock: a pass on a stale copy of the backup (the
// cache lagging a Completed write, an old leader) conflicts there and deletes nothing.
// The deletion follows (deleteUnpublished), and every later pass of the Failed backup
// retries it while the mark stands, so neither a bucket that refuses nor an operator
// that stops between the two writes leaves the copy behind.
func (r *Reconciler) failUnpublished(ctx context.Context, b *linstorv1.LinstorBackup, msg string) (ctrl.Result, error) {
	if b.Status.Phase != linstorv1.BackupVerifying || b.Spec.ImportFrom != "" || b.Status.Stored == nil {
		return ctrl.Result{}, r.fail(ctx, b, msg)
	}
	r.Recorder.Event(b, corev1.EventTypeWarning, "BackupFailed", msg)
	if err := r.setStatus(ctx, b, func(st *linstorv1.LinstorBackupStatus) {
		st.Phase, st.Message = linstorv1.BackupFailed, msg+copyBeingDeleted
		st.Stored.DeletePending = true
	}); err != nil {
		return ctrl.Result{}, err
	}
	return r.deleteUnpublished(ctx, b)
}

// copyBeingDeleted ends the message of a Failed backup whose copy deleteUnpublished
// deletes; copyDeleted replaces it once the copy is gone.
const (
	copyBeingDeleted = "; its copy, never published, is being deleted from the bucket"
	copyDeleted      = "; its copy, never published, was deleted from the bucket"
)

// deleteUnpublished carries out lifecycle.DecideUnpublished for the copy of a Failed
// backup marked deletePending: it observes (LINSTOR's controller stopped for a backup of
// the cluster, the target's own check, the target, the manifest, the data), decides,
// and acts. Tries are spaced every retryBucket at first and at most every 10 minutes
// later, and a status write happens only when the message changes.
func (r *Reconciler) deleteUnpublished(ctx context.Context, b *linstorv1.LinstorBackup) (ctrl.Result, error) {
	stored := b.Status.Stored
	base := strings.TrimSuffix(strings.SplitN(b.Status.Message, copyBeingDeleted, 2)[0], copyDeleted)
	where := or(stored.Location, "the target's bucket")
	retry := min(max(retryBucket, time.Since(b.CreationTimestamp.Time)/10), 10*time.Minute)
	confirm := r.confirmAbsent()
	if wait := r.unpublished.wait(b.UID, min(retry, confirm)); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	o := lifecycle.UnpublishedObservation{Now: time.Now(), FailedAt: b.CreationTimestamp.Time, AbsentSince: r.unpublished.absentSince(b.UID)}
	bucketCtx, cancel := context.WithTimeout(ctx, recheckTimeout)
	defer cancel()
	store, err := r.observeUnpublished(bucketCtx, b, &o)
	if err != nil {
		return ctrl.Result{}, err
	}
	d := lifecycle.DecideUnpublished(o, confirm)
	if d.Action == lifecycle.UnpublishedDelete {
		if err := store.Delete(bucketCtx, stored.ID); err != nil {
			d = lifecycle.UnpublishedDecision{Action: lifecycle.UnpublishedRetry, Why: "deleting it: " + string(offsite.ReasonOf(err))}
		}
	}
	end := func(msg string) (ctrl.Result, error) {
		r.unpublished.forget(b.UID)
		return ctrl.Result{}, r.setStatus(ctx, b, func(st *linstorv1.LinstorBackupStatus) {
			st.Message, st.Stored.DeletePending = base+msg, false
		})
	}
	switch d.Action {
	case lifecycle.UnpublishedDelete:
		return end(copyDeleted)
	case lifecycle.UnpublishedKeep:
		r.Recorder.Event(b, corev1.EventTypeWarning, "CopyKept", fmt.Sprintf("its copy %s is kept in the bucket: %s", stored.ID, d.Why))
		return end(fmt.Sprintf("; its copy %s is kept in the bucket: %s", stored.ID, d.Why))
	case lifecycle.UnpublishedLeave:
		left := fmt.Sprintf("; its copy %s, never published, is left at %s: %s; delete it there", stored.ID, where, d.Why)
		r.Recorder.Event(b, corev1.EventTypeWarning, "CopyNotDeleted", strings.TrimPrefix(left, "; "))
		return end(left)
	case lifecycle.UnpublishedConfirm:
		r.unpublished.tried(b.UID, o.Manifest == lifecycle.ManifestAbsent)
		return ctrl.Result{RequeueAfter: confirm}, nil
	}
	r.unpublished.tried(b.UID, false)
	// The reason, not the whole error: a message that changes with every try (a port
	// number) would wake the next pass at once through the status write.
	msg := base + copyBeingDeleted + "; not yet: " + d.Why
	if msg == b.Status.Message {
		return ctrl.Result{RequeueAfter: retry}, nil
	}
	r.Recorder.Event(b, corev1.EventTypeWarning, "CopyNotDeleted", fmt.Sprintf("its copy %s, never published, is not deleted yet: %s; retrying", stored.ID, d.Why))
	return ctrl.Result{RequeueAfter: retry}, r.setStatus(ctx, b, func(st *linstorv1.LinstorBackupStatus) { st.Message = msg })
}

// observeUnpublished fills o, looking only as far as the decision needs, and returns
// the opened target.
func (r *Reconciler) observeUnpublished(ctx context.Context, b *linstorv1.LinstorBackup, o *lifecycle.UnpublishedObservation) (*offsite.Store, error) {
	busy, err := r.controllerStoppedForBackup(ctx, b)
	if err != nil || busy {
		o.ControllerStopped = busy
		return nil, err
	}
	if t := (&linstorv1.LinstorBackupTarget{}); b.Spec.TargetRef != nil && r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.TargetRef.Name}, t) == nil {
		if c := meta.FindStatusCondition(t.Status.Conditions, linstorv1.ConditionAvailable); c != nil && c.Status == metav1.ConditionFalse &&
			(c.Reason == string(offsite.ReasonUnreachable) || c.Reason == string(offsite.ReasonSlow)) {
			o.BucketDown = strings.ToLower(c.Reason)
			return nil, nil
		}
	}
	store, err := r.openTarget(ctx, b)
	var missing *backuptarget.MissingError
	switch {
	case errors.As(err, &missing):
		o.TargetUnusable = targetError(b, err)
		return nil, nil
	case err != nil:
		o.TargetUnusable = "opening the target: " + string(offsite.ReasonOf(err))
		return nil, nil
	}
	stored := b.Status.Stored
	if stored.Location != "" && stored.Location != location(store) || stored.KeyFingerprint != "" && stored.KeyFingerprint != store.Key().Fingerprint() {
		o.Moved = true
		return store, nil
	}
	m, err := store.Get(ctx, stored.ID)
	switch reason := offsite.ReasonOf(err); {
	case err == nil:
		o.Manifest = lifecycle.ManifestFound
		if serr := store.Stat(ctx, m); serr != nil {
			o.DataProblem = serr.Error()
		}
	case reason == offsite.ReasonNotFound:
		o.Manifest = lifecycle.ManifestAbsent
	case reason == offsite.ReasonCorrupt || reason == offsite.ReasonWrongKey || reason == offsite.ReasonInvalid:
		o.Manifest, o.ManifestProblem = lifecycle.ManifestUnreadable, err.Error()
	default:
		o.Manifest, o.ManifestProblem = lifecycle.ManifestUnknown, "reading its manifest: "+string(reason)
	}
	return store, nil
}

// unpublishedConfirm is how long after a first "no manifest" a second must come before
// a copy is deleted.
const unpublishedConfirm = time.Minute

// confirmAbsent is unpublishedConfirm, or RecheckInterval where tests shorten it.
func (r *Reconciler) confirmAbsent() time.Duration {
	if r.RecheckInterval > 0 {
		return r.RecheckInterval
	}
	return unpublishedConfirm
}

// controllerStoppedForBackup: a backup of b's cluster is Pending or Running, so
// LINSTOR's controller is (about to be) stopped for it.
func (r *Reconciler) controllerStoppedForBackup(ctx context.Context, b *linstorv1.LinstorBackup) (bool, error) {
	var list linstorv1.LinstorBackupList
	if err := r.Client.List(ctx, &list, client.InNamespace(b.Namespace)); err != nil {
		return false, err
	}
	for _, x := range list.Items {
		if x.Spec.ClusterRef.Name == b.Spec.ClusterRef.Name && (x.Status.Phase == linstorv1.BackupPending || x.Status.Phase == linstorv1.BackupRunning) {
			return true, nil
		}
	}
	return false, nil
}

// unpublishedTries remembers, per backup, when its copy's deletion was last tried and
// when its manifest was first found absent. In memory: a restarted operator only starts
// the two-look wait again.
type unpublishedTries struct {
	mu    sync.Mutex
	tries map[types.UID]*unpublishedTry
}

type unpublishedTry struct{ last, absent time.Time }

func (u *unpublishedTries) get(uid types.UID) *unpublishedTry {
	if u.tries == nil {
		u.tries = map[types.UID]*unpublishedTry{}
	}
	if u.tries[uid] == nil {
		u.tries[uid] = &unpublishedTry{}
	}
	return u.tries[uid]
}

// wait is how long until the next try is due, every spacing (0: now).
func (u *unpublishedTries) wait(uid types.UID, spacing time.Duration) time.Duration {
	u.mu.Lock()
	defer u.mu.Unlock()
	if t := u.get(uid); !t.last.IsZero() {
		return time.Until(t.last.Add(spacing))
	}
	return 0
}

// tried records a try; absent: it found no manifest (the first such stays recorded),
// otherwise an earlier absence no longer counts.
func (u *unpublishedTries) tried(uid types.UID, absent bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	t := u.get(uid)
	t.last = time.Now()
	switch {
	case !absent:
		t.absent = time.Time{}
	case t.absent.IsZero():
		t.absent = t.last
	}
}

func (u *unpublishedTries) absentSince(uid types.UID) time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.get(uid).absent
}

func (u *unpublishedTries) forget(uid types.UID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.tries, uid)
}

// reconcileImport reads a backup another cluster (or this one) left in the bucket: it
// is Completed once it read back whole with the target's key. Nothing is stopped.
func (r *Reconciler) reconcileImport(ctx context.Context, s *scope) (ctrl.Result, error) {
	b := s.backup
	if b.Spec.ImportFrom == "" {
		return ctrl.Result{}, nil
	}
	s.stop = true
	if deadline := b.CreationTimestamp.Add(timeout(b)); time.Now().After(deadline) {
		return ctrl.Result{}, r.fail(ctx, b, fmt.Sprintf("not imported within %s (%s)", timeout(b), or(b.Status.Message, string(b.Status.Phase))))
	}
	if b.Status.Phase == "" {
		return ctrl.Result{}, r.setStatus(ctx, b, func(st *linstorv1.LinstorBackupStatus) {
			st.Phase, st.Message = linstorv1.BackupVerifying, "Reading "+b.Spec.ImportFrom+" back from the bucket"
		})
	}
	store, err := r.openTarget(ctx, b)
	var m offsite.Manifest
	bucketCtx, cancel := byDeadline(ctx, b)
	defer cancel()
	if err == nil {
		ctx := bucketCtx
		if m, err = store.Get(ctx, b.Spec.ImportFrom); err == nil {
			err = store.Verify(ctx, offsite.Upload{ID: m.ID, Size: m.Size, Checksum: m.Checksum, EncryptedSize: m.EncryptedSize, EncryptedChecksum: m.EncryptedChecksum})
		}
	}
	var missing *backuptarget.MissingError
	switch {
	case errors.As(err, &missing):
		// Applied together, the import may come before its target or the target's
		// Secrets: it waits for them until its deadline.
		return ctrl.Result{RequeueAfter: retryBucket}, r.setStatus(ctx, b, func(st *linstorv1.LinstorBackupStatus) {
			st.Message = "Waiting: " + targetError(b, err)
		})
	case err != nil && bucketFailure(err):
		return ctrl.Result{}, r.fail(ctx, b, fmt.Sprintf("spec.importFrom: %s cannot be imported: %s", b.Spec.ImportFrom, targetError(b, err)))
	case err != nil:
		return ctrl.Result{RequeueAfter: retryBucket}, r.setStatus(ctx, b, func(st *linstorv1.LinstorBackupStatus) {
			st.Message = "Reading " + b.Spec.ImportFrom + " failed, retrying: " + err.Error()
		})
	}
	created := metav1.NewTime(m.CreatedAt)
	if err := r.setStatus(ctx, b, func(st *linstorv1.LinstorBackupStatus) {
		st.Phase, st.LinstorVersion, st.Checksum, st.Size = linstorv1.BackupCompleted, m.LinstorVersion, m.Checksum, m.Size
		st.CRDs, st.Objects = int32(m.CRDs), int32(m.Objects)
		st.StartedAt, st.CompletedAt = &created, ptrTime(metav1.Now())
		st.Stored = &linstorv1.StoredCopy{Target: b.Spec.TargetRef.Name, ID: m.ID, Location: location(store), EncryptedSize: m.EncryptedSize, EncryptedChecksum: m.EncryptedChecksum,
			KeyFingerprint: m.KeyFingerprint, Cluster: m.Cluster.Namespace + "/" + m.Cluster.Name, ClusterUID: m.Cluster.UID}
		st.Message = fmt.Sprintf("Imported %s: LINSTOR %s, %d CRDs, %d objects, taken %s of LinstorCluster %s/%s; read back and verified",
			m.ID, m.LinstorVersion, m.CRDs, m.Objects, m.CreatedAt.UTC().Format(time.RFC3339), m.Cluster.Namespace, m.Cluster.Name)
	}); err != nil {
		return ctrl.Result{}, err
	}
	r.Recorder.Eventf(b, corev1.EventTypeNormal, "BackupImported", "Imported %s (LINSTOR %s, %d objects) from LinstorBackupTarget %s", m.ID, m.LinstorVersion, m.Objects, b.Spec.TargetRef.Name)
	return ctrl.Result{}, nil
}

// recheckInterval is how often a Completed backup's copy in a bucket is looked at (one
// HEAD request): a bucket lifecycle rule or a hand may delete it.
const recheckInterval = 5 * time.Minute

// recheckStored fails a Completed backup whose copy in the bucket is gone or truncated:
// nothing that cannot be restored stays Completed. A bucket that cannot be reached now
// proves nothing; it is looked at again later.
func (r *Reconciler) recheckStored(ctx context.Context, b *linstorv1.LinstorBackup) (ctrl.Result, error) {
	st := b.Status.Stored
	if st == nil || b.Spec.TargetRef == nil || b.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	t := &linstorv1.LinstorBackupTarget{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.TargetRef.Name}, t); err != nil {
		return ctrl.Result{RequeueAfter: recheckInterval}, client.IgnoreNotFound(err)
	}
	if c := meta.FindStatusCondition(t.Status.Conditions, linstorv1.ConditionAvailable); c != nil && c.Status == metav1.ConditionFalse &&
		(c.Reason == string(offsite.ReasonUnreachable) || c.Reason == string(offsite.ReasonSlow)) {
		// The target's own check found the bucket unreachable or hanging: a look per
		// backup would only hold the one worker new backups need, up to recheckTimeout
		// each, and prove nothing. Other reasons fail a look at once; a target that
		// cannot list (one unreadable manifest) must not end the rechecks.
		return ctrl.Result{RequeueAfter: r.recheck()}, nil
	}
	store, err := backuptarget.Open(ctx, r.Client, t)
	if err != nil {
		return ctrl.Result{RequeueAfter: recheckInterval}, nil // the target's own status says why
	}
	if st.Location != "" && st.Location != location(store) || st.KeyFingerprint != "" && st.KeyFingerprint != store.Key().Fingerprint() {
		// The target was edited (another bucket, prefix or key) since: its bucket says
		// nothing about this copy, which may well be intact where it was written.
		return ctrl.Result{RequeueAfter: r.recheck()}, nil
	}
	statCtx, cancel := context.WithTimeout(ctx, recheckTimeout)
	defer cancel()
	err = store.Stat(statCtx, offsite.Manifest{ID: st.ID, EncryptedSize: st.EncryptedSize})
	switch offsite.ReasonOf(err) {
	case offsite.ReasonNotFound, offsite.ReasonCorrupt:
		return ctrl.Result{}, r.fail(ctx, b, "its copy in the bucket can no longer be restored (a bucket lifecycle rule, or deleted by hand?): "+err.Error())
	}
	return ctrl.Result{RequeueAfter: r.recheck()}, nil
}

// location names where a store reads and writes.
func location(store *offsite.Store) string {
	loc := store.Location()
	return strings.TrimSuffix(loc.Endpoint, "/") + "/" + loc.Bucket + "/" + strings.Trim(loc.Prefix, "/")
}

func (r *Reconciler) recheck() time.Duration {
	if r.RecheckInterval > 0 {
		return r.RecheckInterval
	}
	return recheckInterval
}

func operatorVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		return info.Main.Version
	}
	return ""
}
