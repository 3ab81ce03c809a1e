package render

import (
	"fmt"
	"slices"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
)

// The HA controller's node taints (piraeus-ha-controller pkg/metadata
// NodeLostQuorumTaint, NodeForceIoErrorTaint). Its agent sets them with effect
// NoSchedule on a node where a DRBD resource lost quorum or forces I/O errors
// (pkg/agent ManageOwnTaints, failoverReconciler.evictPods,
// reconcile_force_io_error_pods.go), so that no new pod with a volume lands there.

// ControllerFailoverSeconds is how long the LINSTOR controller's pod stays on a node
// that is not ready or unreachable before it is evicted and started elsewhere.
// Kubernetes' default (the DefaultTolerationSeconds admission plugin) is 300 s, five
// minutes without a LINSTOR API: no volume created, attached or resized meanwhile.
const ControllerFailoverSeconds = 30

// haTaintTolerations keep the pods that serve and watch DRBD on a node the HA
// controller tainted: the satellite (the node's replicas need it, and a pod replaced
// by an update must start again there), the CSI node plugin (unmounts the volumes the
// HA controller moves away) and the HA controller (it lifts the taint once quorum is
// back). Any effect is tolerated: an admin's NoExecute variant must not evict storage.
func haTaintTolerations() []corev1.Toleration {
	return []corev1.Toleration{
		{Key: names.TaintLostQuorum, Operator: corev1.TolerationOpExists},
		{Key: names.TaintForceIOError, Operator: corev1.TolerationOpExists},
	}
}

// controllerTolerations move the LINSTOR controller off a dead node in
// ControllerFailoverSeconds once the node lifecycle controller taints the node.
func controllerTolerations() []corev1.Toleration {
	return []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](ControllerFailoverSeconds)},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](ControllerFailoverSeconds)},
	}
}

// MergeTolerations returns the tolerations of base that extra does not override,
// followed by extra: a toleration of extra with the key and effect of one of base
// replaces it (the user's toleration wins over a default). extra is kept whole, so
// two of its tolerations of one key and effect (values "a" and "b") both stay. base is
// not modified.
func MergeTolerations(base, extra []corev1.Toleration) []corev1.Toleration {
	var out []corev1.Toleration
	for _, b := range base {
		if !slices.ContainsFunc(extra, func(e corev1.Toleration) bool { return e.Key == b.Key && e.Effect == b.Effect }) {
			out = append(out, b)
		}
	}
	return append(out, extra...)
}

// SatellitePodSpec is the pod spec the satellite DaemonSet of node runs: the cluster's
// and the satellite's podTemplates and patches applied, pinned to the node.
func SatellitePodSpec(cluster *linstorv1.LinstorCluster, sat *linstorv1.LinstorSatellite, node *corev1.Node, imgs images.Set) (corev1.PodSpec, error) {
	objs, err := Satellite(cluster, sat, node, imgs)
	if err == nil {
		objs, err = WithSatellitePatches(cluster, sat, objs)
	}
	if err != nil {
		return corev1.PodSpec{}, err
	}
	for _, o := range objs {
		if ds, ok := o.(*appsv1.DaemonSet); ok && ds.Name == names.SatelliteDaemonSetName(node.Name) {
			return ds.Spec.Template.Spec, nil
		}
	}
	return corev1.PodSpec{}, fmt.Errorf("no satellite DaemonSet rendered for node %s", node.Name)
}
