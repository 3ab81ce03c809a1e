package linstorcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/linstorbackup"
	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
)

// Restore phases.
const (
	restoreRunning = "Restoring"
	restoreDone    = "Restored"
	restoreFailed  = "Failed"
)

// reconcileRestore restores spec.database.restoreFrom once: with the controller
// stopped, the database is replaced by the verified backup, and the controller starts
// again at the backup's version.
func (r *Reconciler) reconcileRestore(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	s.restoreStatus = c.Status.Restore.DeepCopy()
	name := ""
	if c.Spec.Database != nil {
		name = c.Spec.Database.RestoreFrom
	}
	if name == "" && s.restoreStatus != nil && s.restoreStatus.Phase != restoreRunning {
		// Clearing the field forgets the finished restore, so the same backup can be
		// named again; the Events keep the history.
		s.restoreStatus = nil
		return ctrl.Result{}, nil
	}
	if st := s.restoreStatus; name == "" || (st != nil && st.BackupName == name && st.Phase != restoreRunning) {
		if st != nil && st.BackupName == name && st.Phase == restoreFailed {
			s.restoreErr = st.Message
		}
		return ctrl.Result{}, nil
	}
	fail := func(msg string) (ctrl.Result, error) {
		s.restoreStatus = &linstorv1.RestoreStatus{BackupName: name, Phase: restoreFailed, Message: msg}
		s.restoreErr = msg
		r.Recorder.Event(c, corev1.EventTypeWarning, "RestoreFailed", msg)
		return ctrl.Result{}, nil
	}
	if why := linstorbackup.Unsupported(c); why != "" {
		return fail("spec.database.restoreFrom: " + why)
	}
	if st := c.Status.Upgrade; st != nil && inProgress(st.Phase) {
		s.restoreErr = "spec.database.restoreFrom waits: an upgrade is in progress"
		return ctrl.Result{RequeueAfter: upgradePoll}, nil
	}
	b := &linstorv1.LinstorBackup{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, b); err != nil {
		return fail(fmt.Sprintf("spec.database.restoreFrom: LinstorBackup %s: %v", name, err))
	}
	v, err := upgrade.Parse(b.Status.LinstorVersion)
	if err != nil || !r.runs(v) {
		return fail(fmt.Sprintf("spec.database.restoreFrom: LinstorBackup %s was taken with LINSTOR %q, which this operator release cannot run", name, b.Status.LinstorVersion))
	}
	dump, _, err := linstorbackup.Load(ctx, r.Direct, b)
	if err != nil {
		return fail("spec.database.restoreFrom: " + err.Error())
	}
	// Stop the controller first; the restore happens once it is gone.
	s.restoreStatus = &linstorv1.RestoreStatus{BackupName: name, Phase: restoreRunning, LinstorVersion: b.Status.LinstorVersion,
		Message: "Stopping the LINSTOR controller to restore " + name}
	s.stopController = "the database is being restored from " + name
	s.deployed = versions(b.Status.LinstorVersion, b.Status.LinstorVersion)
	stopped, err := linstorbackup.ControllerStopped(ctx, r.Direct, c)
	if err != nil || !stopped {
		return ctrl.Result{RequeueAfter: upgradePoll}, err
	}
	if err := dbbackup.Restore(ctx, r.Direct, dump); err != nil {
		s.restoreStatus.Message = "Restoring failed, will retry: " + err.Error()
		return ctrl.Result{RequeueAfter: upgradePoll}, nil
	}
	now := metav1.Now()
	s.restoreStatus.Phase, s.restoreStatus.CompletedAt = restoreDone, &now
	s.restoreStatus.Message = fmt.Sprintf("Restored %s (%d objects, %s); LINSTOR %s starts on it", name, b.Status.Objects, b.Status.Checksum, b.Status.LinstorVersion)
	s.restored = true
	s.stopController = ""
	r.Recorder.Event(c, corev1.EventTypeNormal, "Restored", s.restoreStatus.Message)
	return next, nil
}

func (r *Reconciler) runs(v upgrade.Version) bool {
	for _, x := range r.release().Runnable {
		if x.Compare(v) == 0 {
			return true
		}
	}
	return false
}
