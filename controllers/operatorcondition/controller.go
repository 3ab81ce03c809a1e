// Package operatorcondition tells OLM when replacing the operator is unsafe: it mirrors
// the LinstorClusters' Upgradeable conditions into the operator's OperatorCondition
// (through operator-lib), so OLM holds an operator upgrade while a LINSTOR upgrade, a
// backup or a restore runs. A degraded cluster holds none: the next release may fix it.
package operatorcondition

import (
	"context"
	"fmt"
	"strings"

	"github.com/operator-framework/operator-lib/conditions"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Reasons of the OperatorCondition's Upgradeable condition.
const (
	ReasonUpgradeable    = "AllClustersUpgradeable"
	ReasonNotUpgradeable = "ClusterNotUpgradeable"
)

// Reconciler keeps the Upgradeable condition of the OperatorCondition.
type Reconciler struct {
	Client client.Client
	// Condition is the OperatorCondition's Upgradeable condition (operator-lib).
	Condition conditions.Condition
}

// No RBAC marker: OLM grants the operator get, update and patch of its own
// OperatorCondition (a Role named after it, operatorcondition_controller.go in OLM).

// Reconcile computes the condition from every LinstorCluster and writes it when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (ctrl.Result, error) {
	var clusters linstorv1.LinstorClusterList
	if err := r.Client.List(ctx, &clusters); err != nil {
		return ctrl.Result{}, err
	}
	status, reason, message := Aggregate(clusters.Items)
	current, err := r.Condition.Get(ctx)
	if err == nil && current.Status == status && current.Reason == reason && current.Message == message {
		return ctrl.Result{}, nil // nothing changed: no write
	}
	if err := r.Condition.Set(ctx, status, conditions.WithReason(reason), conditions.WithMessage(message)); err != nil {
		return ctrl.Result{}, fmt.Errorf("setting the OperatorCondition: %w", err)
	}
	return ctrl.Result{}, nil
}

// Aggregate is False when any cluster says it is not upgradeable, naming each one.
func Aggregate(clusters []linstorv1.LinstorCluster) (metav1.ConditionStatus, string, string) {
	var blocked []string
	for _, c := range clusters {
		cond := meta.FindStatusCondition(c.Status.Conditions, linstorv1.ConditionUpgradeable)
		if cond != nil && cond.Status == metav1.ConditionFalse {
			blocked = append(blocked, fmt.Sprintf("LinstorCluster %s/%s: %s", c.Namespace, c.Name, cond.Message))
		}
	}
	if len(blocked) == 0 {
		return metav1.ConditionTrue, ReasonUpgradeable, "No LinstorCluster is changing LINSTOR (an upgrade past its preflight or a rollback), backing up or restoring"
	}
	return metav1.ConditionFalse, ReasonNotUpgradeable, strings.Join(blocked, "; ")
}

// SetupWithManager registers the controller: every LinstorCluster change re-evaluates
// the one OperatorCondition.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: "upgradeable"}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("operatorcondition").
		Watches(&linstorv1.LinstorCluster{}, one).
		Complete(r)
}
