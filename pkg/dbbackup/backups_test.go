package dbbackup

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

func TestStopsController(t *testing.T) {
	now := metav1.Now()
	target := &linstorv1.BackupTargetReference{Name: "offsite"}
	for _, row := range []struct {
		name   string
		backup linstorv1.LinstorBackup
		stops  bool
	}{
		{"new, in the cluster", linstorv1.LinstorBackup{}, true},
		{"new, to a bucket not checked yet", linstorv1.LinstorBackup{Spec: linstorv1.LinstorBackupSpec{TargetRef: target}}, false},
		{"accepted, to a bucket", linstorv1.LinstorBackup{Spec: linstorv1.LinstorBackupSpec{TargetRef: target}, Status: linstorv1.LinstorBackupStatus{Phase: linstorv1.BackupPending}}, true},
		{"pending", linstorv1.LinstorBackup{Status: linstorv1.LinstorBackupStatus{Phase: linstorv1.BackupPending}}, true},
		{"running", linstorv1.LinstorBackup{Status: linstorv1.LinstorBackupStatus{Phase: linstorv1.BackupRunning}}, true},
		{"verifying with LINSTOR started again", linstorv1.LinstorBackup{Spec: linstorv1.LinstorBackupSpec{TargetRef: target}, Status: linstorv1.LinstorBackupStatus{Phase: linstorv1.BackupVerifying}}, false},
		{"completed", linstorv1.LinstorBackup{Status: linstorv1.LinstorBackupStatus{Phase: linstorv1.BackupCompleted}}, false},
		{"failed", linstorv1.LinstorBackup{Status: linstorv1.LinstorBackupStatus{Phase: linstorv1.BackupFailed}}, false},
		{"an import reads only the bucket", linstorv1.LinstorBackup{Spec: linstorv1.LinstorBackupSpec{TargetRef: target, ImportFrom: "x"}, Status: linstorv1.LinstorBackupStatus{Phase: linstorv1.BackupPending}}, false},
		{"being deleted", linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: linstorv1.LinstorBackupStatus{Phase: linstorv1.BackupRunning}}, false},
	} {
		if got := StopsController(&row.backup); got != row.stops {
			t.Errorf("%s: StopsController = %v, want %v", row.name, got, row.stops)
		}
	}
}
