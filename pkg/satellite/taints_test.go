package satellite

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

func taint(key, value string, effect corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: key, Value: value, Effect: effect}
}

// A node that never had a satellite gets none while it carries a NoSchedule or
// NoExecute taint the satellite pod (as its DaemonSet runs it) does not tolerate: the
// DaemonSet controller would never start the pod there. A node that has a satellite
// keeps it whatever it is tainted with: removing it would run its deletion policy
// (evacuate, delete) because someone cordoned the node or it died.
func TestSkippedForTaints(t *testing.T) {
	haTolerations := []corev1.Toleration{
		{Key: "drbd.linbit.com/lost-quorum", Operator: corev1.TolerationOpExists},
		{Key: "drbd.linbit.com/force-io-error", Operator: corev1.TolerationOpExists},
	}
	hostNet := corev1.PodSpec{HostNetwork: true, Tolerations: haTolerations}
	cases := []struct {
		name         string
		taints       []corev1.Taint
		pod          corev1.PodSpec
		hasSatellite bool
		wantSkipped  bool
		wantMessage  []string
	}{
		{name: "no taint", pod: hostNet},
		{name: "PreferNoSchedule does not keep a pod off", pod: hostNet, taints: []corev1.Taint{taint("dedicated", "db", corev1.TaintEffectPreferNoSchedule)}},
		{name: "an untolerated NoSchedule taint on a new node", pod: hostNet, taints: []corev1.Taint{taint("dedicated", "db", corev1.TaintEffectNoSchedule)},
			wantSkipped: true, wantMessage: []string{"dedicated=db:NoSchedule", "spec.satellite.tolerations", "keeps it"}},
		{name: "an untolerated NoExecute taint on a new node", pod: hostNet, taints: []corev1.Taint{taint("maintenance", "", corev1.TaintEffectNoExecute)},
			wantSkipped: true, wantMessage: []string{"maintenance:NoExecute"}},
		{name: "the same taint on a node with a satellite keeps it", pod: hostNet, hasSatellite: true, taints: []corev1.Taint{taint("dedicated", "db", corev1.TaintEffectNoSchedule)}},
		{name: "a NoExecute taint on a node with a satellite keeps it", pod: hostNet, hasSatellite: true, taints: []corev1.Taint{taint("maintenance", "", corev1.TaintEffectNoExecute)}},
		{name: "a tolerated taint", taints: []corev1.Taint{taint("dedicated", "db", corev1.TaintEffectNoSchedule)},
			pod: corev1.PodSpec{HostNetwork: true, Tolerations: append(haTolerations, corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db", Effect: corev1.TaintEffectNoSchedule})}},
		{name: "a toleration of another value does not tolerate", taints: []corev1.Taint{taint("dedicated", "db", corev1.TaintEffectNoSchedule)},
			pod:         corev1.PodSpec{HostNetwork: true, Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule}}},
			wantSkipped: true},
		{name: "tolerate-everything", taints: []corev1.Taint{taint("dedicated", "db", corev1.TaintEffectNoExecute)}, pod: corev1.PodSpec{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}},
		{name: "the HA controller's taints on a new node", pod: hostNet, taints: []corev1.Taint{
			taint("drbd.linbit.com/lost-quorum", "", corev1.TaintEffectNoSchedule), taint("drbd.linbit.com/force-io-error", "", corev1.TaintEffectNoSchedule)}},
		// The DaemonSet controller adds these to every pod it creates
		// (AddOrUpdateDaemonPodTolerations): a cordoned node, or one under pressure,
		// still runs the satellite.
		{name: "cordoned (unschedulable)", pod: hostNet, taints: []corev1.Taint{taint(corev1.TaintNodeUnschedulable, "", corev1.TaintEffectNoSchedule)}},
		{name: "disk, memory and PID pressure", pod: hostNet, taints: []corev1.Taint{taint(corev1.TaintNodeDiskPressure, "", corev1.TaintEffectNoSchedule),
			taint(corev1.TaintNodeMemoryPressure, "", corev1.TaintEffectNoSchedule), taint(corev1.TaintNodePIDPressure, "", corev1.TaintEffectNoSchedule)}},
		{name: "not ready and unreachable NoExecute", pod: hostNet, taints: []corev1.Taint{taint(corev1.TaintNodeNotReady, "", corev1.TaintEffectNoExecute), taint(corev1.TaintNodeUnreachable, "", corev1.TaintEffectNoExecute)}},
		{name: "network unavailable, with the host network", pod: hostNet, taints: []corev1.Taint{taint(corev1.TaintNodeNetworkUnavailable, "", corev1.TaintEffectNoSchedule)}},
		{name: "network unavailable, without the host network", pod: corev1.PodSpec{}, taints: []corev1.Taint{taint(corev1.TaintNodeNetworkUnavailable, "", corev1.TaintEffectNoSchedule)},
			wantSkipped: true},
		// A new node is NotReady (NoSchedule) until its kubelet and network are up: the
		// satellite follows once Kubernetes lifts the taint.
		{name: "a new node that is not ready yet", pod: hostNet, taints: []corev1.Taint{taint(corev1.TaintNodeNotReady, "", corev1.TaintEffectNoSchedule)},
			wantSkipped: true, wantMessage: []string{"node.kubernetes.io/not-ready:NoSchedule", "Kubernetes sets", "lifts it"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{Taints: tc.taints}}
			got := SkippedForTaints(node, tc.pod, tc.hasSatellite)
			if (got != nil) != tc.wantSkipped {
				t.Fatalf("skipped = %+v, want skipped %t", got, tc.wantSkipped)
			}
			if got == nil {
				return
			}
			if got.Name != "n1" || got.Reason != linstorv1.ReasonUntoleratedTaint {
				t.Errorf("got %+v, want node n1 with reason %s", got, linstorv1.ReasonUntoleratedTaint)
			}
			for _, s := range tc.wantMessage {
				if !strings.Contains(got.Message, s) {
					t.Errorf("message %q does not contain %q", got.Message, s)
				}
			}
		})
	}
}

// At most MaxSkippedNodes are listed, in name order; the count covers them all.
func TestSkippedNodeList(t *testing.T) {
	var all []linstorv1.SkippedNode
	for _, n := range []string{"c", "a", "b"} {
		all = append(all, linstorv1.SkippedNode{Name: n, Reason: "R"})
	}
	listed, count := SkippedNodeList(all, 2)
	if count != 3 || len(listed) != 2 || listed[0].Name != "a" || listed[1].Name != "b" {
		t.Errorf("listed %+v, count %d; want a, b of 3", listed, count)
	}
	if listed, count := SkippedNodeList(nil, 2); listed != nil || count != 0 {
		t.Errorf("nothing skipped: listed %+v, count %d", listed, count)
	}
}
