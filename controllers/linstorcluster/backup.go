package linstorcluster

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/linstor-operator/linstor-operator/controllers/linstorbackup"
)

// reconcileBackups stops the LINSTOR controller while a backup of this cluster waits
// for it or runs: the database must not change while it is copied.
func (r *Reconciler) reconcileBackups(ctx context.Context, s *scope) (ctrl.Result, error) {
	b, err := linstorbackup.Active(ctx, r.Client, s.cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	if b != nil {
		s.stopController = "LinstorBackup " + b.Name + " is being taken"
	}
	return ctrl.Result{}, nil
}
