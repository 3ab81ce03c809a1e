package apply

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// FieldOwner is the operator's server-side apply field manager.
const FieldOwner = client.FieldOwner("linstor-operator")

// Applier applies and prunes the objects of one owner.
type Applier struct {
	Client client.Client
	Scheme *runtime.Scheme
}

// Apply server-side applies objs, setting owner as controller of namespaced ones.
// It returns the keys applied, for Prune.
func (a *Applier) Apply(ctx context.Context, owner client.Object, objs []client.Object) (Applied, error) {
	applied := Applied{}
	for _, obj := range objs {
		if obj.GetNamespace() != "" {
			if err := controllerutil.SetControllerReference(owner, obj, a.Scheme); err != nil {
				return applied, err
			}
		}
		u, err := toUnstructured(obj)
		if err != nil {
			return applied, err
		}
		if err := a.Client.Patch(ctx, u, client.Apply, FieldOwner, client.ForceOwnership); err != nil {
			return applied, fmt.Errorf("applying %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
		applied[keyOf(u.GroupVersionKind(), u.GetNamespace(), u.GetName())] = true
	}
	return applied, nil
}

// Applied records the objects of one pass.
type Applied map[string]bool

func keyOf(gvk schema.GroupVersionKind, ns, name string) string {
	return gvk.GroupKind().String() + "/" + ns + "/" + name
}

// Prune deletes objects of the given kinds that match selector and were not applied.
// namespace "" lists cluster-scoped kinds. An object whose controller is not owner (a
// satellite's DaemonSet carries the cluster's labels but belongs to its
// LinstorSatellite) is left alone.
func (a *Applier) Prune(ctx context.Context, owner client.Object, applied Applied, namespace string, selector client.MatchingLabels, kinds ...schema.GroupVersionKind) (int, error) {
	deleted := 0
	for _, gvk := range kinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		opts := []client.ListOption{selector}
		if namespace != "" {
			opts = append(opts, client.InNamespace(namespace))
		}
		if err := a.Client.List(ctx, list, opts...); err != nil {
			return deleted, fmt.Errorf("listing %s to prune: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			item := &list.Items[i]
			if applied[keyOf(gvk, item.GetNamespace(), item.GetName())] || item.GetDeletionTimestamp() != nil {
				continue
			}
			if ref := metav1.GetControllerOfNoCopy(item); ref != nil && ref.UID != owner.GetUID() {
				continue
			}
			if err := a.Client.Delete(ctx, item, client.PropagationPolicy("Background")); err != nil && !apierrors.IsNotFound(err) {
				return deleted, fmt.Errorf("pruning %s %s/%s: %w", gvk.Kind, item.GetNamespace(), item.GetName(), err)
			}
			deleted++
		}
	}
	return deleted, nil
}

func toUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	if obj.GetObjectKind().GroupVersionKind().Kind == "" {
		return nil, fmt.Errorf("object %s has no kind set", obj.GetName())
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	return &unstructured.Unstructured{Object: m}, nil
}
