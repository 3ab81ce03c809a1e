package linstorcluster

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
	"github.com/linstor-operator/linstor-operator/pkg/satellite"
)

// MisplacedConfigurationReconciler tells a LinstorSatelliteConfiguration outside the
// LinstorCluster's namespace that it is ignored: without it the object would sit
// there with no status at all. The LinstorCluster controller writes the status of the
// configurations in its own namespace; this one touches only the others.
type MisplacedConfigurationReconciler struct {
	Client   client.Client
	Recorder record.EventRecorder
	// Namespace is the operator's namespace (see internal/manager Options.Namespace).
	Namespace string
}

// The Warning event is written in the configuration's namespace, which is not the
// operator's: events are the one thing the operator creates everywhere.
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile sets Applied=False (WrongNamespace) and emits one Warning event when the
// condition first says so; a resync that finds it already set writes nothing.
func (r *MisplacedConfigurationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cfg := &linstorv1.LinstorSatelliteConfiguration{}
	if err := r.Client.Get(ctx, req.NamespacedName, cfg); err != nil || !cfg.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var clusters linstorv1.LinstorClusterList
	if err := r.Client.List(ctx, &clusters); err != nil {
		return ctrl.Result{}, err
	}
	why := satellite.Misplaced("LinstorSatelliteConfiguration", cfg.Namespace, r.Namespace, clusters.Items)
	if why == "" {
		return ctrl.Result{}, nil // the LinstorCluster controller owns its status
	}
	already := meta.FindStatusCondition(cfg.Status.Conditions, linstorv1.ConditionApplied)
	wrote, err := reconciler.PatchStatus(ctx, r.Client, cfg, func() {
		reconciler.SetCondition(&cfg.Status.Conditions, metav1.Condition{
			Type: linstorv1.ConditionApplied, Status: metav1.ConditionFalse, Reason: linstorv1.ReasonWrongNamespace,
			ObservedGeneration: cfg.Generation, Message: why,
		})
		// Nodes it once matched (under another operator namespace) are matched no more.
		cfg.Status.MatchedNodes = nil
		cfg.Status.MatchedNodeCount = 0
	})
	if err != nil || !wrote {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if already == nil || already.Reason != linstorv1.ReasonWrongNamespace {
		r.Recorder.Event(cfg, corev1.EventTypeWarning, linstorv1.ReasonWrongNamespace, why)
	}
	return ctrl.Result{}, nil
}

// SetupWithManager watches configurations outside the operator's namespace (all of
// them when it has none: each namespace is then judged by its LinstorClusters).
func (r *MisplacedConfigurationReconciler) SetupWithManager(mgr ctrl.Manager) error {
	outside := predicate.NewPredicateFuncs(func(o client.Object) bool { return r.Namespace == "" || o.GetNamespace() != r.Namespace })
	return ctrl.NewControllerManagedBy(mgr).
		Named("misplaced-linstorsatelliteconfiguration").
		For(&linstorv1.LinstorSatelliteConfiguration{}, builder.WithPredicates(outside)).
		Complete(r)
}

// skippedMessage sums up the expandFrom properties left out, keeping the status short:
// the same label on many nodes gives the same reason many times.
func skippedMessage(skipped []string) string {
	const shown = 3
	uniq := map[string]bool{}
	for _, s := range skipped {
		uniq[s] = true
	}
	list := make([]string, 0, len(uniq))
	for s := range uniq {
		list = append(list, s)
	}
	sort.Strings(list)
	msg := "expandFrom generated properties that are left out: " + strings.Join(list[:min(shown, len(list))], "; ")
	if len(list) > shown {
		msg += fmt.Sprintf("; and %d more", len(list)-shown)
	}
	return msg
}
