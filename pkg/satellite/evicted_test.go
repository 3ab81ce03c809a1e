package satellite

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An evicted node is restored only when it is back: Kubernetes reports the node Ready
// and its satellite pod running and Ready on it, for long enough that a node that just
// died (still reported ready) does not count, or LINSTOR itself sees the satellite
// ONLINE; and not again at once after a restore LINSTOR undid.
func TestRestoreEvicted(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	settle := 2 * time.Minute
	node := func(status corev1.ConditionStatus) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
		if status != "" {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "KubeletReady", Message: "kubelet is posting ready status"}}
		}
		return n
	}
	pod := func(nodeName string, phase corev1.PodPhase, ready bool, readySince time.Time) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sat-" + nodeName}, Spec: corev1.PodSpec{NodeName: nodeName}, Status: corev1.PodStatus{Phase: phase}}
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(readySince)}}
		return p
	}
	terminating := pod("n1", corev1.PodRunning, true, now.Add(-time.Hour))
	terminating.DeletionTimestamp = &metav1.Time{Time: now}
	readyPod := pod("n1", corev1.PodRunning, true, now.Add(-time.Hour))
	long := now.Add(-settle - time.Second)
	cases := []struct {
		name        string
		in          Evicted
		restore     bool
		back        bool
		recheck     time.Duration
		waitHas     []string
		nothingElse bool
	}{
		{name: "node NotReady (it is still dead)", in: Evicted{Node: node(corev1.ConditionFalse), Pods: []corev1.Pod{readyPod}, BackSince: long},
			waitHas: []string{"Ready=False", "node n1"}},
		{name: "node Ready unknown (unreachable)", in: Evicted{Node: node(corev1.ConditionUnknown), Pods: []corev1.Pod{readyPod}},
			waitHas: []string{"Ready=Unknown"}},
		{name: "node without a Ready condition", in: Evicted{Node: node(""), Pods: []corev1.Pod{readyPod}},
			waitHas: []string{"no Ready condition"}},
		{name: "no satellite pod", in: Evicted{Node: node(corev1.ConditionTrue), BackSince: long},
			waitHas: []string{"no satellite pod runs on the node"}},
		{name: "the satellite pod is on another node", in: Evicted{Node: node(corev1.ConditionTrue), Pods: []corev1.Pod{pod("n2", corev1.PodRunning, true, long)}, BackSince: long},
			waitHas: []string{"no satellite pod runs on the node"}},
		{name: "the satellite pod is pending", in: Evicted{Node: node(corev1.ConditionTrue), Pods: []corev1.Pod{pod("n1", corev1.PodPending, false, now)}},
			waitHas: []string{"sat-n1 is Pending, not Running"}},
		{name: "the satellite pod runs but is not ready", in: Evicted{Node: node(corev1.ConditionTrue), Pods: []corev1.Pod{pod("n1", corev1.PodRunning, false, now)}},
			waitHas: []string{"sat-n1 is not Ready"}},
		{name: "the satellite pod is terminating", in: Evicted{Node: node(corev1.ConditionTrue), Pods: []corev1.Pod{terminating}},
			waitHas: []string{"terminating"}},
		{name: "back, seen for the first time: wait the settle time", in: Evicted{Node: node(corev1.ConditionTrue), Pods: []corev1.Pod{readyPod}},
			back: true, recheck: settle, waitHas: []string{"once that has held for 2m0s"}},
		{name: "back for less than the settle time", in: Evicted{Node: node(corev1.ConditionTrue), Pods: []corev1.Pod{readyPod}, BackSince: now.Add(-30 * time.Second)},
			back: true, recheck: 90 * time.Second, waitHas: []string{"sat-n1 ready since 2025-06-01T11:59:30Z"}},
		{name: "back for the settle time: restored", in: Evicted{Node: node(corev1.ConditionTrue), Pods: []corev1.Pod{readyPod}, BackSince: now.Add(-settle)},
			restore: true, back: true},
		{name: "LINSTOR sees it ONLINE (a controller restart connected it): restored at once", in: Evicted{Node: node(corev1.ConditionTrue), Pods: []corev1.Pod{readyPod}, Connection: "ONLINE"},
			restore: true, back: true},
		{name: "ONLINE in LINSTOR but the node is NotReady", in: Evicted{Node: node(corev1.ConditionFalse), Pods: []corev1.Pod{readyPod}, Connection: "ONLINE"},
			waitHas: []string{"Ready=False"}},
		{name: "evicted again after a restore, the pod unchanged: stays evicted", in: Evicted{Node: node(corev1.ConditionTrue), Pods: []corev1.Pod{readyPod}, BackSince: long, LastRestore: now.Add(-30 * time.Minute)},
			back: true, waitHas: []string{"again after the operator restored it at 2025-06-01T11:30:00Z", "linstor node restore n1", "restart the satellite pod"}},
		{name: "evicted again after a restore, the pod restarted since: restored", in: Evicted{Node: node(corev1.ConditionTrue), Pods: []corev1.Pod{pod("n1", corev1.PodRunning, true, now.Add(-10*time.Minute))}, BackSince: long, LastRestore: now.Add(-30 * time.Minute)},
			restore: true, back: true},
		{name: "one of two pods is ready (an old one terminating)", in: Evicted{Node: node(corev1.ConditionTrue), Pods: []corev1.Pod{terminating, readyPod}, BackSince: long},
			restore: true, back: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := RestoreEvicted(tc.in, settle, now)
			if got.Restore != tc.restore || got.Back != tc.back || got.RecheckAfter != tc.recheck {
				t.Errorf("got restore %t back %t recheck %s, want %t %t %s (%s)", got.Restore, got.Back, got.RecheckAfter, tc.restore, tc.back, tc.recheck, got.Wait)
			}
			if tc.restore != (got.Wait == "") {
				t.Errorf("wait %q with restore %t", got.Wait, got.Restore)
			}
			for _, s := range tc.waitHas {
				if !strings.Contains(got.Wait, s) {
					t.Errorf("wait %q does not contain %q", got.Wait, s)
				}
			}
		})
	}
}
