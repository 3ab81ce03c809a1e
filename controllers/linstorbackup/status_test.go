package linstorbackup

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
)

// Every condition of a backup names its phase as the reason and carries the status
// message; which one is True follows the phase.
func TestSetConditions(t *testing.T) {
	const (
		T = metav1.ConditionTrue
		F = metav1.ConditionFalse
	)
	for _, tc := range []struct {
		phase                            linstorv1.BackupPhase
		message                          string
		available, progressing, degraded metav1.ConditionStatus
		reason                           string
	}{
		{linstorv1.BackupPending, "Waiting for the LINSTOR controller to stop", F, T, F, "Pending"},
		{linstorv1.BackupPending, "Waiting: a restore of b0 runs", F, T, F, "Pending"},
		{linstorv1.BackupRunning, "Copying the database", F, T, F, "Running"},
		{linstorv1.BackupRunning, "A try failed, retrying until 2025-01-01T00:00:00Z: writing Secret x: forbidden", F, T, F, "Running"},
		{linstorv1.BackupCompleted, "3 CRDs, 10 objects, 2048 bytes in 1 Secrets", T, F, F, "Completed"},
		{linstorv1.BackupFailed, "LinstorCluster linstor not found", F, F, T, "Failed"},
	} {
		t.Run(string(tc.phase)+": "+tc.message, func(t *testing.T) {
			b := &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: "b1", Generation: 3},
				Status: linstorv1.LinstorBackupStatus{Phase: tc.phase, Message: tc.message}}
			setConditions(b)
			if b.Status.ObservedGeneration != 3 {
				t.Errorf("observedGeneration %d, want 3", b.Status.ObservedGeneration)
			}
			for typ, want := range map[string]metav1.ConditionStatus{
				linstorv1.ConditionAvailable: tc.available, linstorv1.ConditionProgressing: tc.progressing, linstorv1.ConditionDegraded: tc.degraded,
			} {
				c := meta.FindStatusCondition(b.Status.Conditions, typ)
				if c == nil || c.Status != want || c.Reason != tc.reason || c.Message != tc.message || c.ObservedGeneration != 3 {
					t.Errorf("%s = %+v, want %s %s %q", typ, c, want, tc.reason, tc.message)
				}
			}
			if len(b.Status.Conditions) != 3 {
				t.Errorf("%d conditions, want 3", len(b.Status.Conditions))
			}
		})
	}
}

// A failure message as long as the error it quotes stays within the bound.
func TestSetConditionsBoundsTheMessage(t *testing.T) {
	b := &linstorv1.LinstorBackup{Status: linstorv1.LinstorBackupStatus{Phase: linstorv1.BackupFailed, Message: strings.Repeat("x", 2*reconciler.MaxMessage)}}
	setConditions(b)
	for _, c := range b.Status.Conditions {
		if len(c.Message) > reconciler.MaxMessage {
			t.Errorf("%s: %d bytes", c.Type, len(c.Message))
		}
	}
}
