package envtest

// The small helpers more than one test suite needs (envtest stories, e2e, OLM, the
// bundle tools), kept here once so each suite calls the same code.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Update re-reads obj into a fresh copy and applies mutate until the write does not conflict with another writer's.
func Update[T client.Object](ctx context.Context, c client.Client, obj T, mutate func(T)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		// A fresh object, not obj: decoding into obj would keep map keys the server no longer has.
		cur := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(T)
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
			return err
		}
		mutate(cur)
		return c.Update(ctx, cur)
	})
}

// RunningPods lists the pods matching opts that are Running and not being deleted.
func RunningPods(ctx context.Context, c client.Reader, opts ...client.ListOption) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, opts...); err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// WaitFor polls done every interval until it reports true or timeout passes; the error names done's last error.
func WaitFor(interval, timeout time.Duration, done func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := done()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			if last != nil {
				return fmt.Errorf("timed out after %s: %w", timeout, last)
			}
			return fmt.Errorf("timed out after %s", timeout)
		}
		time.Sleep(interval)
	}
}

// ShowTail prints the last lines of a log file to stderr, headed by who is showing it.
func ShowTail(who, path string, lines int) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	fmt.Fprintf(os.Stderr, "%s: the last %d lines of %s:\n%s\n", who, len(all), path, strings.Join(all, "\n"))
}

// OPMBinary is $OPM (make test sets it) or the newest opm in bin/opm (make opm builds it).
func OPMBinary(t testing.TB) string {
	t.Helper()
	opm := os.Getenv("OPM")
	if opm == "" {
		matches, _ := filepath.Glob(filepath.Join(RepoRoot(), "bin", "opm", "opm-v*"))
		if len(matches) == 0 {
			t.Fatal("no opm in bin/opm: run make opm")
		}
		opm = matches[len(matches)-1]
	}
	if _, err := os.Stat(opm); err != nil {
		t.Fatalf("opm not found at %s: run make opm", opm)
	}
	return opm
}

// ReadyNode creates a Kubernetes node with an InternalIP, Ready; it is deleted after the
// test. It plays the kubelet (status) and the node lifecycle controller, which envtest
// does not run: the API server taints every new node node.kubernetes.io/not-ready
// (admission plugin TaintNodesByCondition), and that controller lifts the taint once
// the node is Ready. A node left with it would get no satellite.
func ReadyNode(t testing.TB, c client.Client, name, ip string, labels map[string]string) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := c.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, node) })
	node.Status = corev1.NodeStatus{
		Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}},
		NodeInfo:   corev1.NodeSystemInfo{OSImage: "Ubuntu 24.04 LTS"},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
	}
	if err := c.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	var taints []corev1.Taint
	for _, taint := range node.Spec.Taints {
		if taint.Key != corev1.TaintNodeNotReady {
			taints = append(taints, taint)
		}
	}
	node.Spec.Taints = taints
	if err := c.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	return node
}
