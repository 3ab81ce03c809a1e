package manager

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// A cached node keeps what the operator reads (labels, conditions, taints) and loses
// its image list and managed fields, in both cache layouts.
func TestCachedNodesDropImagesAndManagedFields(t *testing.T) {
	for _, namespace := range []string{"", "linstor"} {
		opts := scopedCache(cache.Options{}, namespace)
		var transform func(any) (any, error)
		for obj, by := range opts.ByObject {
			if _, ok := obj.(*corev1.Node); ok {
				transform = by.Transform
			}
		}
		if transform == nil {
			t.Fatalf("namespace %q: no transform for nodes", namespace)
		}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"a": "b"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
			Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "t", Effect: corev1.TaintEffectNoExecute}}},
			Status: corev1.NodeStatus{
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
				Images:     []corev1.ContainerImage{{Names: []string{"registry.example/a:1"}, SizeBytes: 1}},
			},
		}
		out, err := transform(node)
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*corev1.Node)
		if len(got.Status.Images) != 0 || len(got.ManagedFields) != 0 {
			t.Fatalf("namespace %q: images %v, managed fields %v: want both dropped", namespace, got.Status.Images, got.ManagedFields)
		}
		if got.Labels["a"] != "b" || len(got.Spec.Taints) != 1 || len(got.Status.Conditions) != 1 {
			t.Fatalf("namespace %q: the node lost what the operator reads: %+v", namespace, got)
		}
	}
}
