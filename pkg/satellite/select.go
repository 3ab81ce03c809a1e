package satellite

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
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

// MaxSkippedNodes is how many skipped nodes the LinstorCluster's status lists (the API's
// limit on status.skippedNodes); status.satellites.skipped counts them all.
const MaxSkippedNodes = 50

// SkippedForTaints decides whether node, selected for a satellite, gets none because it
// carries a NoSchedule or NoExecute taint that pod (the satellite pod as rendered for
// the node) does not tolerate: the DaemonSet controller would never start the pod
// there, and the LinstorSatellite would wait for it for ever. It returns nil when the
// node gets its satellite.
//
// A node that has a LinstorSatellite keeps it, whatever taints it gets later (the HA
// controller's, kubectl cordon or drain, not-ready or unreachable when the node dies):
// removing it would run its deletion policy (evacuate or delete the LINSTOR node)
// because of a maintenance or an outage. The DaemonSet controller itself keeps a
// running daemon pod that tolerates the node's NoExecute taints.
func SkippedForTaints(node *corev1.Node, pod corev1.PodSpec, hasSatellite bool) *linstorv1.SkippedNode {
	if hasSatellite {
		return nil
	}
	taint, found := corev1helpers.FindMatchingUntoleratedTaint(node.Spec.Taints, daemonPodTolerations(pod), func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	})
	if !found {
		return nil
	}
	msg := fmt.Sprintf("Taint %s is not tolerated by the satellite pod, so the node gets no satellite; ", taint.ToString())
	if strings.HasPrefix(taint.Key, "node.kubernetes.io/") {
		msg += "Kubernetes sets this taint for a node condition and the satellite follows once it lifts it"
	} else {
		msg += "tolerate it in spec.satellite.tolerations (or a LinstorSatelliteConfiguration's podTemplate), or remove it from the node"
	}
	msg += ". Only a node without a satellite is skipped: one that has a satellite keeps it whatever it is tainted with."
	return &linstorv1.SkippedNode{Name: node.Name, Reason: linstorv1.ReasonUntoleratedTaint, Message: msg}
}

// daemonPodTolerations are pod's tolerations as the DaemonSet controller creates the
// pod: it adds to every daemon pod tolerations of the node-condition taints
// (k8s.io/kubernetes pkg/controller/daemon/util AddOrUpdateDaemonPodTolerations, used
// by NewPod, whose taints NodeShouldRunDaemonPod checks): not-ready and unreachable
// NoExecute, disk, memory and PID pressure and unschedulable NoSchedule, and
// network-unavailable NoSchedule for a pod on the host network.
func daemonPodTolerations(pod corev1.PodSpec) []corev1.Toleration {
	exists := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	out := append(slices.Clone(pod.Tolerations),
		exists(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule))
	if pod.HostNetwork {
		out = append(out, exists(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule))
	}
	return out
}

// SkippedNodeList is what the status lists of the skipped nodes: the first max by
// name, and how many there are.
func SkippedNodeList(skipped []linstorv1.SkippedNode, max int) ([]linstorv1.SkippedNode, int32) {
	if len(skipped) == 0 {
		return nil, 0
	}
	sorted := slices.SortedFunc(slices.Values(skipped), func(a, b linstorv1.SkippedNode) int { return strings.Compare(a.Name, b.Name) })
	return sorted[:min(max, len(sorted))], int32(len(sorted))
}
