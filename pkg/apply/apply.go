package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// FieldOwner is the operator's server-side apply field manager.
const FieldOwner = client.FieldOwner(names.FieldOwner)

// Applier applies and prunes the objects of one owner.
type Applier struct {
	Client client.Client
	Scheme *runtime.Scheme
	// Uncached reads the kinds Scheme does not know (a third party's, whose CRDs may
	// be missing: no informer may be started for them); nil sends them every time.
	Uncached client.Reader
}

// Apply server-side applies objs, setting owner as controller of namespaced ones.
// It returns the keys applied, for Prune.
//
// An object is sent only when it would change something: its live copy (read from the
// cache) carries the hash of this desired state and holds every field of it with the
// same value. The hash catches a field the operator stopped setting (server-side apply
// removes it; a comparison would not see it); the comparison catches someone else
// changing a field the operator owns.
func (a *Applier) Apply(ctx context.Context, owner client.Object, objs []client.Object) (Applied, error) {
	applied, _, err := a.apply(ctx, owner, objs, nil)
	return applied, err
}

// ApplyOwned is Apply for objects someone else may have created under the same names
// (a ServiceMonitor applied from config/prometheus before the operator made its own):
// an object that exists and is not owner's is neither changed nor, by a Prune given
// the result, deleted; notOwned names each ("Kind namespace/name"). An object is
// owner's when owner controls it, or when it carries every label of ours (the labels
// Prune selects by) and is controlled by nothing or by a predecessor of owner (its
// kind and name, another UID: deleted with its dependents orphaned, then created
// again), so what Prune would delete is what ApplyOwned adopts. An object missing from
// the cache is looked for once more without it, so a stale cache does not hand
// someone's object to the operator.
func (a *Applier) ApplyOwned(ctx context.Context, owner client.Object, ours client.MatchingLabels, objs []client.Object) (applied Applied, notOwned []string, err error) {
	return a.apply(ctx, owner, objs, ours)
}

// owns reports whether live is owner's (ApplyOwned).
func (a *Applier) owns(owner, live client.Object, ours client.MatchingLabels) bool {
	ref := metav1.GetControllerOfNoCopy(live)
	if ref != nil && ref.UID == owner.GetUID() {
		return true
	}
	for k, v := range ours {
		if live.GetLabels()[k] != v {
			return false
		}
	}
	if ref == nil {
		return true
	}
	gvk, err := apiutil.GVKForObject(owner, a.Scheme)
	return err == nil && ref.APIVersion == gvk.GroupVersion().String() && ref.Kind == gvk.Kind && ref.Name == owner.GetName()
}

func (a *Applier) apply(ctx context.Context, owner client.Object, objs []client.Object, ours client.MatchingLabels) (Applied, []string, error) {
	onlyOwned := ours != nil
	applied := Applied{}
	var notOwned []string
	for _, obj := range objs {
		if obj.GetNamespace() != "" {
			if err := controllerutil.SetControllerReference(owner, obj, a.Scheme); err != nil {
				return applied, notOwned, err
			}
		}
		u, err := toUnstructured(obj)
		if err != nil {
			return applied, notOwned, err
		}
		key := keyOf(u.GroupVersionKind(), u.GetNamespace(), u.GetName())
		if err := setHash(u); err != nil {
			return applied, notOwned, err
		}
		live, found, err := a.live(ctx, u, onlyOwned)
		if err != nil {
			return applied, notOwned, err
		}
		if onlyOwned && found && !a.owns(owner, live, ours) {
			applied[key] = false // kept from Prune
			notOwned = append(notOwned, fmt.Sprintf("%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName()))
			continue
		}
		if onlyOwned && found {
			if ref := metav1.GetControllerOfNoCopy(live); ref != nil && ref.UID != owner.GetUID() {
				// A predecessor's: its reference goes first (an object has one controller),
				// whoever wrote it.
				if err := a.dropController(ctx, live, ref.UID); err != nil {
					return applied, notOwned, fmt.Errorf("adopting %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
				}
			}
		}
		if found && upToDate(live, u) {
			applied[key] = false
			continue
		}
		if err := a.Client.Patch(ctx, u, client.Apply, FieldOwner, client.ForceOwnership); err != nil {
			return applied, notOwned, fmt.Errorf("applying %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
		applied[key] = true
	}
	return applied, notOwned, nil
}

// dropController removes the owner reference of uid from live (read-only: a copy is
// patched), if live has not changed since it was read.
func (a *Applier) dropController(ctx context.Context, live client.Object, uid types.UID) error {
	obj, ok := live.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("%T is not an object", live)
	}
	base, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("%T is not an object", live)
	}
	obj.SetOwnerReferences(slices.DeleteFunc(obj.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == uid }))
	return a.Client.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}

// Keep marks objs as applied, unsent: a Prune given the result leaves them alone (they
// are another pass's to apply, whether or not that pass got to them).
func (a Applied) Keep(objs ...client.Object) {
	for _, o := range objs {
		key := keyOf(o.GetObjectKind().GroupVersionKind(), o.GetNamespace(), o.GetName())
		if _, ok := a[key]; !ok {
			a[key] = false
		}
	}
}

// Merge adds other's keys to a.
func (a Applied) Merge(other Applied) {
	for k, v := range other {
		a[k] = a[k] || v
	}
}

// setHash annotates u with the hash of its content (without that annotation).
func setHash(u *unstructured.Unstructured) error {
	raw, err := json.Marshal(u.Object) // map keys are sorted: the same object, the same bytes
	if err != nil {
		return err
	}
	sum := sha256.Sum256(raw)
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[names.AnnotationAppliedHash] = hex.EncodeToString(sum[:16])
	u.SetAnnotations(ann)
	return nil
}

// live reads desired's live copy: typed kinds from the cache, the others without it.
// found is false when it is missing or cannot be read: then it is applied, which only
// costs a write. sure (for ApplyOwned) asks the API server again when the cache says
// missing; only that read's error is returned.
func (a *Applier) live(ctx context.Context, desired *unstructured.Unstructured, sure bool) (obj client.Object, found bool, err error) {
	key := client.ObjectKeyFromObject(desired)
	uncached := func() (client.Object, bool, error) {
		if a.Uncached == nil {
			return nil, false, nil
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(desired.GroupVersionKind())
		switch err := a.Uncached.Get(ctx, key, u); {
		case apierrors.IsNotFound(err):
			return nil, false, nil
		case err != nil:
			return nil, false, fmt.Errorf("reading %s %s: %w", desired.GetKind(), key, err)
		}
		return u, true, nil
	}
	typed, err := a.typed(desired.GroupVersionKind())
	if err != nil {
		o, found, err := uncached()
		if !sure {
			err = nil
		}
		return o, found, err
	}
	// Only read: the cache's own object, not a copy (a pass compares every satellite's
	// objects; copying each was most of the operator's allocations at 1,000 nodes).
	if err := a.Client.Get(ctx, key, typed, client.UnsafeDisableDeepCopy); err != nil {
		if sure && apierrors.IsNotFound(err) {
			return uncached()
		}
		return nil, false, nil
	}
	return typed, true, nil
}

// upToDate reports whether live already is what applying desired would make it.
func upToDate(live client.Object, desired *unstructured.Unstructured) bool {
	if live.GetAnnotations()[names.AnnotationAppliedHash] != desired.GetAnnotations()[names.AnnotationAppliedHash] || live.GetDeletionTimestamp() != nil {
		return false
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return false
	}
	// The cache's own object has no apiVersion and kind (a copy gets them set; this
	// one must not be written to): the read was by desired's kind, so they are its.
	m["apiVersion"], m["kind"] = desired.GetAPIVersion(), desired.GetKind()
	return Contains(m, desired.Object)
}

// typed returns an empty typed object of gvk: typed reads are served by the cache,
// unstructured ones would go to the API server.
func (a *Applier) typed(gvk schema.GroupVersionKind) (client.Object, error) {
	o, err := a.Scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	obj, ok := o.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%s is not an object", gvk)
	}
	return obj, nil
}

// Contains reports whether every field of want is in have with an equal value; lists
// must have the same length and contain each other element by element. Fields the API
// server defaulted (present in have only) do not count.
func Contains(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, v := range w {
			if !Contains(h[k], v) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return len(w) == 0 && have == nil
		}
		for i := range w {
			if !Contains(h[i], w[i]) {
				return false
			}
		}
		return true
	case nil:
		return have == nil
	default:
		return equalScalar(have, want)
	}
}

// equalScalar compares JSON scalars; numbers may be int64 on one side and float64 on
// the other after conversion.
func equalScalar(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return a == b
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	}
	return 0, false
}

// Applied records the objects of one pass: true for those sent to the API server,
// false for those already up to date.
type Applied map[string]bool

// Sent reports whether the object was written in this pass.
func (a Applied) Sent(gvk schema.GroupVersionKind, namespace, name string) bool {
	return a[keyOf(gvk, namespace, name)]
}

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
		// A typed list is served by the cache; an unstructured one costs a request.
		var list client.ObjectList
		reader := client.Reader(a.Client)
		if o, err := a.Scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List")); err == nil {
			l, ok := o.(client.ObjectList)
			if !ok {
				return deleted, fmt.Errorf("%s is not a list", gvk.Kind)
			}
			list = l
		} else if a.Uncached != nil {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			list, reader = l, a.Uncached
		} else {
			return deleted, err
		}
		// Only read, and copied before a deletion: the cache's own objects.
		opts := []client.ListOption{selector, client.UnsafeDisableDeepCopy}
		if namespace != "" {
			opts = append(opts, client.InNamespace(namespace))
		}
		if err := reader.List(ctx, list, opts...); err != nil {
			return deleted, fmt.Errorf("listing %s to prune: %w", gvk.Kind, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return deleted, err
		}
		for _, it := range items {
			item, ok := it.(client.Object)
			if !ok {
				continue
			}
			if _, ok := applied[keyOf(gvk, item.GetNamespace(), item.GetName())]; ok || item.GetDeletionTimestamp() != nil {
				continue
			}
			if ref := metav1.GetControllerOfNoCopy(item); ref != nil && ref.UID != owner.GetUID() {
				continue
			}
			item, ok = item.DeepCopyObject().(client.Object)
			if !ok {
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
