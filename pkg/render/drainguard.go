package render

import (
	"fmt"
	"hash/fnv"
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/names"
)

// drainGuardLabels are the guard pod's labels; the budget selects the pod by the
// component, the cluster and the node's hash.
func drainGuardLabels(cluster *linstorv1.LinstorCluster, node string) map[string]string {
	l := labels(cluster, names.DrainGuardComponent)
	h := fnv.New64a()
	_, _ = h.Write([]byte(node))
	l[names.LabelDrainGuard] = fmt.Sprintf("%016x", h.Sum64())
	return l
}

func drainGuardSelector(cluster *linstorv1.LinstorCluster, node string) map[string]string {
	l := drainGuardLabels(cluster, node)
	return map[string]string{names.LabelName: l[names.LabelName], names.LabelInstance: l[names.LabelInstance], names.LabelDrainGuard: l[names.LabelDrainGuard]}
}

// DrainGuardPod renders the node's drain guard: a pod that only sleeps, which
// `kubectl drain` evicts through the Eviction API (so the node's budget decides),
// unlike the satellite's DaemonSet pod. satellite is the satellite's pod spec as it
// runs (patches applied).
//   - Bound to the node by spec.nodeName, bypassing the scheduler: it guards this node
//     or none.
//   - The satellite's image, already on the node, so the guard needs no pull of its own
//     (a pending pod is evicted without asking its budget).
//   - Admitted by the restricted Pod Security level: a fixed non-root user, no
//     privilege, no capability, a read-only root, RuntimeDefault seccomp.
//   - The satellite's tolerations, and those the DaemonSet controller gives the
//     satellite, except node.kubernetes.io/unschedulable: the guard stays off a
//     cordoned node (the operator does not re-create it there either).
//   - The satellite's priority: the kubelet makes room for it rather than refuse it.
//
// It is created once and never updated (a pod's spec is immutable).
func DrainGuardPod(cluster *linstorv1.LinstorCluster, sat *linstorv1.LinstorSatellite, satellite corev1.PodSpec) *corev1.Pod {
	image := ""
	for _, c := range satellite.Containers {
		if c.Name == names.SatelliteComponent {
			image = c.Image
		}
	}
	return &corev1.Pod{
		TypeMeta:   typeMeta("v1", "Pod"),
		ObjectMeta: metav1.ObjectMeta{Name: names.DrainGuardName(sat.Name), Namespace: sat.Namespace, Labels: drainGuardLabels(cluster, sat.Name)},
		Spec: corev1.PodSpec{
			NodeName:          sat.Name,
			PriorityClassName: satellite.PriorityClassName,
			// The satellite's account exists wherever satellites run; its one grant (an
			// OpenShift SCC) admits the fixed user below, which the restricted SCC of
			// an account without a grant would not.
			ServiceAccountName:           satellite.ServiceAccountName,
			AutomountServiceAccountToken: ptr.To(false),
			ImagePullSecrets:             satellite.ImagePullSecrets,
			Tolerations:                  drainGuardTolerations(satellite.Tolerations),
			// sleep as PID 1 ignores SIGTERM: there is nothing to shut down.
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](65534),
				RunAsGroup:     ptr.To[int64](65534),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            names.DrainGuardComponent,
				Image:           image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{"sleep", "infinity"},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m"), corev1.ResourceMemory: resource.MustParse("4Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Mi")},
				},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}

// drainGuardTolerations are the satellite's tolerations and the DaemonSet controller's
// (k8s.io/kubernetes pkg/controller/daemon/util AddOrUpdateDaemonPodTolerations: a dead
// node's NoExecute taints without a time limit, the pressure taints), without any of
// node.kubernetes.io/unschedulable.
func drainGuardTolerations(satellite []corev1.Toleration) []corev1.Toleration {
	daemon := []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	return slices.DeleteFunc(MergeTolerations(daemon, satellite), func(t corev1.Toleration) bool {
		return t.Key == corev1.TaintNodeUnschedulable
	})
}

// DrainGuardPDB renders the budget of the node's guard pod. The guard's controller (a
// LinstorSatellite) has no scale subresource, so the disruption controller counts only
// an integer minAvailable for it (pkg/controller/disruption getExpectedPodCount; a
// percentage or maxUnavailable asks the owner's scale and fails): 1 refuses the
// eviction of the one guard, 0 allows it. The default unhealthy-pod policy
// (IfHealthyBudget) keeps refusing while the guard is not ready. reason lands in an
// annotation.
func DrainGuardPDB(cluster *linstorv1.LinstorCluster, sat *linstorv1.LinstorSatellite, allowed bool, reason string) *policyv1.PodDisruptionBudget {
	minAvailable := intstr.FromInt32(1)
	if allowed {
		minAvailable = intstr.FromInt32(0)
	}
	return &policyv1.PodDisruptionBudget{
		TypeMeta: typeMeta("policy/v1", "PodDisruptionBudget"),
		ObjectMeta: metav1.ObjectMeta{Name: names.DrainGuardName(sat.Name), Namespace: sat.Namespace, Labels: labels(cluster, names.DrainGuardComponent),
			Annotations: map[string]string{names.AnnotationDrainReason: reason}},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &minAvailable,
			Selector:     &metav1.LabelSelector{MatchLabels: drainGuardSelector(cluster, sat.Name)},
		},
	}
}
