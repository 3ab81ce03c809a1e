package satellite

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Selects reports whether a node selector (empty selects all) matches the node.
func Selects(selector map[string]string, node *corev1.Node) bool {
	return labels.SelectorFromSet(selector).Matches(labels.Set(node.Labels))
}

// Selected decides whether node gets a LinstorSatellite. Every rule that limits where a
// satellite pod may run counts: the cluster's nodeSelector and nodeAffinity, and the
// satellite pods' own nodeSelector and required node affinity (spec.satellite). A node
// only the pods exclude would otherwise get a LinstorSatellite whose pod never runs.
//
// Node affinity is matched as the scheduler matches it (the scheduler's own code): terms
// are ORed, the expressions and fields of a term ANDed, an empty term matches nothing.
// An error (an unparsable term, or no terms at all) means "cannot decide": the caller
// keeps what exists rather than remove satellites on a typo.
func Selected(cluster *linstorv1.LinstorCluster, node *corev1.Node) (bool, error) {
	if !Selects(cluster.Spec.NodeSelector, node) {
		return false, nil
	}
	if ok, err := matchAffinity("spec.nodeAffinity", cluster.Spec.NodeAffinity, node); !ok || err != nil {
		return false, clusterError(err)
	}
	sat := cluster.Spec.Satellite
	if sat == nil {
		return true, nil
	}
	if !Selects(sat.NodeSelector, node) {
		return false, nil
	}
	if sat.Affinity == nil || sat.Affinity.NodeAffinity == nil {
		return true, nil
	}
	ok, err := matchAffinity("spec.satellite.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
		sat.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution, node)
	return ok, clusterError(err)
}

func clusterError(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("LinstorCluster %w", err)
}

func matchAffinity(path string, sel *corev1.NodeSelector, node *corev1.Node) (bool, error) {
	if sel == nil {
		return true, nil
	}
	if len(sel.NodeSelectorTerms) == 0 {
		// The Pod API refuses this too; read literally it would select no node at all.
		return false, fmt.Errorf("%s: nodeSelectorTerms is empty, which would select no node; remove the field to select every node", path)
	}
	ok, err := nodeaffinity.NewLazyErrorNodeSelector(sel).Match(node)
	if err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return ok, nil
}

// Applies decides whether a LinstorSatelliteConfiguration applies to node: its
// nodeSelector and its nodeAffinity (matched as the scheduler would) both select it.
func Applies(cfg *linstorv1.LinstorSatelliteConfiguration, node *corev1.Node) (bool, error) {
	if cfg.DeletionTimestamp != nil || !Selects(cfg.Spec.NodeSelector, node) {
		return false, nil
	}
	ok, err := matchAffinity("spec.nodeAffinity", cfg.Spec.NodeAffinity, node)
	if err != nil {
		return false, fmt.Errorf("LinstorSatelliteConfiguration %s: %w", cfg.Name, err)
	}
	return ok, nil
}
