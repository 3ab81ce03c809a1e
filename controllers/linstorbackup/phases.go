package linstorbackup

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
)

// waitPoll is how often a Pending backup looks again whether a restore, rollback or
// migration still runs (nothing wakes it when one ends).
const waitPoll = 2 * time.Second

// scope carries one pass of one backup.
type scope struct {
	backup  *linstorv1.LinstorBackup
	cluster *linstorv1.LinstorCluster
	// stop ends the pass: each step needs the one before it done.
	stop bool
	// copying: the LINSTOR controller was seen stopped, so this pass tries the copy; a
	// try that fails from here on says why in the status (saveStatus).
	copying bool
}

// end stops the pass at this step with its outcome.
func (s *scope) end(res ctrl.Result, err error) (ctrl.Result, error) {
	s.stop = true
	return res, err
}

// reconcileEnded: a completed backup only prunes the old ones; a failed one is done,
// once the copy it never published is deleted.
func (r *Reconciler) reconcileEnded(ctx context.Context, s *scope) (ctrl.Result, error) {
	switch s.backup.Status.Phase {
	case linstorv1.BackupCompleted:
		if err := r.prune(ctx, s.backup); err != nil {
			return s.end(ctrl.Result{}, err)
		}
		return s.end(r.recheckStored(ctx, s.backup))
	case linstorv1.BackupFailed:
		if st := s.backup.Status.Stored; st != nil && st.DeletePending {
			return s.end(r.deleteUnpublished(ctx, s.backup))
		}
		return s.end(ctrl.Result{}, nil)
	}
	return ctrl.Result{}, nil
}

// reconcileCluster finds the backup's LinstorCluster; a missing or unsupported one, or
// a backup past its deadline, fails the backup for good.
func (r *Reconciler) reconcileCluster(ctx context.Context, s *scope) (ctrl.Result, error) {
	b := s.backup
	cluster := &linstorv1.LinstorCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.ClusterRef.Name}, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return s.end(ctrl.Result{}, r.fail(ctx, b, fmt.Sprintf("LinstorCluster %s not found", b.Spec.ClusterRef.Name)))
		}
		return s.end(ctrl.Result{}, err)
	}
	if why := dbbackup.Unsupported(cluster); why != "" {
		return s.end(ctrl.Result{}, r.fail(ctx, b, why))
	}
	if deadline := b.CreationTimestamp.Add(timeout(b)); time.Now().After(deadline) {
		// A backup keeps LINSTOR's controller stopped: it must end, in failure if need be.
		msg := fmt.Sprintf("not completed within %s (%s); the LINSTOR controller starts again", timeout(b), or(b.Status.Message, string(b.Status.Phase)))
		return s.end(r.failUnpublished(ctx, b, msg))
	}
	s.cluster = cluster
	return ctrl.Result{}, nil
}

// reconcileAccepted makes a new backup Pending: the LinstorCluster reconciler stops the
// controller for it. Its write wakes the next pass.
func (r *Reconciler) reconcileAccepted(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.backup.Status.Phase != "" {
		return ctrl.Result{}, nil
	}
	return s.end(ctrl.Result{}, r.setStatus(ctx, s.backup, func(st *linstorv1.LinstorBackupStatus) {
		st.Phase, st.Message = linstorv1.BackupPending, "Waiting for the LINSTOR controller to stop"
	}))
}

// reconcileWaiting holds a Pending backup while a restore, rollback or migration runs.
func (r *Reconciler) reconcileWaiting(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.backup.Status.Phase != linstorv1.BackupPending {
		return ctrl.Result{}, nil
	}
	// Whether a copy may start is read from the API server: a restore, rollback or
	// migration saved a moment ago may not be in the cache yet.
	if err := r.Database.Get(ctx, client.ObjectKeyFromObject(s.cluster), s.cluster); err != nil {
		return s.end(ctrl.Result{}, err)
	}
	if why := lifecycle.BackupWaits(&s.cluster.Status); why != "" {
		if err := r.setStatus(ctx, s.backup, func(st *linstorv1.LinstorBackupStatus) { st.Message = "Waiting: " + why }); err != nil {
			return s.end(ctrl.Result{}, err)
		}
		return s.end(ctrl.Result{RequeueAfter: waitPoll}, nil)
	}
	return ctrl.Result{}, nil
}

// reconcileControllerStopped waits for the LINSTOR controller's pods to be gone.
func (r *Reconciler) reconcileControllerStopped(ctx context.Context, s *scope) (ctrl.Result, error) {
	stopped, err := dbbackup.ControllerStopped(ctx, r.Database, s.cluster)
	if err != nil {
		return s.end(ctrl.Result{}, err)
	}
	if !stopped {
		return s.end(ctrl.Result{RequeueAfter: time.Second}, nil)
	}
	s.copying = true
	return ctrl.Result{}, nil
}

// reconcileRunning saves Running before anything is read, and checks once more that no
// restore or rollback began: a restore or rollback reads the backups before its first
// write and waits for a Running one, so either it saw this one Running, or it was saved
// before the check here and is seen. Seen: the backup is Pending again and waits.
func (r *Reconciler) reconcileRunning(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.backup.Status.Phase != linstorv1.BackupPending {
		return ctrl.Result{}, nil
	}
	if err := r.setStatus(ctx, s.backup, func(st *linstorv1.LinstorBackupStatus) {
		st.Phase, st.Message, st.StartedAt = linstorv1.BackupRunning, "Copying the database", ptrTime(metav1.Now())
		// The version that wrote the database, taken when the copy starts: nothing
		// migrates it from here on (BackupWaits, BackupMayBeTorn).
		st.LinstorVersion = lifecycle.DatabaseVersion(&s.cluster.Status)
	}); err != nil {
		return s.end(ctrl.Result{}, err)
	}
	now := &linstorv1.LinstorCluster{}
	if err := r.Database.Get(ctx, client.ObjectKeyFromObject(s.cluster), now); err != nil {
		return s.end(ctrl.Result{}, err)
	}
	if why := lifecycle.BackupWaits(&now.Status); why != "" {
		if err := r.setStatus(ctx, s.backup, func(st *linstorv1.LinstorBackupStatus) {
			st.Phase, st.StartedAt, st.Message = linstorv1.BackupPending, nil, "Waiting: "+why
		}); err != nil {
			return s.end(ctrl.Result{}, err)
		}
		return s.end(ctrl.Result{RequeueAfter: waitPoll}, nil)
	}
	return ctrl.Result{}, nil
}

// reconcileCopy takes the copy (copy.go).
func (r *Reconciler) reconcileCopy(ctx context.Context, s *scope) (ctrl.Result, error) {
	return s.end(ctrl.Result{}, r.take(ctx, s.backup, s.cluster))
}
