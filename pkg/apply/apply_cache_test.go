package apply_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/linstor-operator/linstor-operator/pkg/apply"
)

// Against a real kube-apiserver and the informer cache the operator reads from: an
// object applied once is not sent again while nothing changed, is sent again when
// someone else changes a field the operator owns, and the cache's objects are never
// written to by the comparison.
func TestApplySendsOnlyWhatChanges(t *testing.T) {
	cfg, scheme := startAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	informers, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	var sent atomic.Int32
	cached, err := client.New(cfg, client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: informers}})
	if err != nil {
		t.Fatal(err)
	}
	a := &apply.Applier{Client: countingPatches{Client: cached, n: &sent}, Scheme: scheme}
	owner := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apply-test"}}
	if err := direct.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	desired := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "apply-test", Labels: map[string]string{"app": "x"}},
			Data:       map[string]string{"k": "v"},
		}
	}
	applyUntil := func(want int32, why string) {
		t.Helper()
		// The cache follows the writes by watch: apply until it has caught up, at most
		// a few times; every apply after that must send nothing.
		for i := 0; i < 50 && sent.Load() < want; i++ {
			if _, err := a.Apply(ctx, owner, []client.Object{desired()}); err != nil {
				t.Fatal(err)
			}
		}
		if sent.Load() < want {
			t.Fatalf("%s: %d sent, want %d", why, sent.Load(), want)
		}
	}
	applyUntil(1, "the first apply")
	settled := func() {
		t.Helper()
		deadline := 100
		for ; deadline > 0; deadline-- {
			before := sent.Load()
			if _, err := a.Apply(ctx, owner, []client.Object{desired()}); err != nil {
				t.Fatal(err)
			}
			if sent.Load() == before {
				break
			}
		}
		if deadline == 0 {
			t.Fatal("the apply never settled: every pass sends the object")
		}
		before := sent.Load()
		for range 20 {
			if _, err := a.Apply(ctx, owner, []client.Object{desired()}); err != nil {
				t.Fatal(err)
			}
		}
		if got := sent.Load() - before; got != 0 {
			t.Fatalf("20 applies of an unchanged object sent %d patches, want 0", got)
		}
	}
	settled()
	var cm corev1.ConfigMap
	if err := informers.Get(ctx, client.ObjectKey{Namespace: "apply-test", Name: "cm"}, &cm, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	if cm.APIVersion != "" || cm.Kind != "" {
		t.Fatalf("the cache's own object was written to: apiVersion %q kind %q", cm.APIVersion, cm.Kind)
	}

	// Someone else changes a field the operator owns: the next passes put it back.
	changed := sent.Load()
	live := &corev1.ConfigMap{}
	if err := direct.Get(ctx, client.ObjectKey{Namespace: "apply-test", Name: "cm"}, live); err != nil {
		t.Fatal(err)
	}
	live.Data["k"] = "drifted"
	if err := direct.Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	// The cache sees the edit when its watch delivers it: apply until then (by time, not
	// by count: a pass that finds the cache unchanged costs microseconds).
	for deadline := time.Now().Add(10 * time.Second); sent.Load() == changed && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := a.Apply(ctx, owner, []client.Object{desired()}); err != nil {
			t.Fatal(err)
		}
	}
	if sent.Load() == changed {
		t.Fatal("a field changed by someone else was never put back")
	}
	settled()
	if err := direct.Get(ctx, client.ObjectKey{Namespace: "apply-test", Name: "cm"}, live); err != nil || live.Data["k"] != "v" {
		t.Fatalf("after the drift: %v, data %v, want k=v", err, live.Data)
	}
}

// countingPatches counts the patches sent through it.
type countingPatches struct {
	client.Client
	n *atomic.Int32
}

func (c countingPatches) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.n.Add(1)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// startAPIServer starts a kube-apiserver for one test.
func startAPIServer(t *testing.T) (*rest.Config, *k8sruntime.Scheme) {
	t.Helper()
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		_, file, _, _ := runtime.Caller(0)
		dir = filepath.Join(filepath.Dir(file), "..", "..", "bin", "k8s", "v1.34.2")
	}
	te := &ctrlenvtest.Environment{BinaryAssetsDirectory: dir}
	cfg, err := te.Start()
	if err != nil {
		t.Fatalf("starting kube-apiserver from %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = te.Stop() })
	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return cfg, scheme
}

// A user's object under a name the operator wants (a ServiceMonitor applied from
// config/prometheus, say) is neither changed nor pruned, even when it carries some of
// the operator's labels and the cache has not seen it yet; what carries all of them and
// no other controller (what Prune would delete) is adopted.
func TestApplyOwnedLeavesOthersObjectsAlone(t *testing.T) {
	cfg, scheme := startAPIServer(t)
	ctx := context.Background()
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	// The cache has seen nothing yet: every read from it says missing.
	var sent atomic.Int32
	a := &apply.Applier{Client: countingPatches{Client: laggingCache{direct}, n: &sent}, Scheme: scheme, Uncached: direct}
	owner := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apply-owned"}}
	if err := direct.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	// What the operator's objects carry, and a part of it a user's copy may carry too.
	ours := client.MatchingLabels{"app.kubernetes.io/managed-by": "linstor-operator", "linstor.io/cluster": "linstor"}
	some := client.MatchingLabels{"app.kubernetes.io/managed-by": "linstor-operator"}
	cm := func(name, value string, labels map[string]string, controller *metav1.OwnerReference) *corev1.ConfigMap {
		c := &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: owner.Name, Labels: labels},
			Data:       map[string]string{"k": value},
		}
		if controller != nil {
			c.OwnerReferences = []metav1.OwnerReference{*controller}
		}
		return c
	}
	predecessor := &metav1.OwnerReference{APIVersion: "v1", Kind: "Namespace", Name: owner.Name, UID: "a-deleted-one", Controller: ptr.To(true)}
	stranger := &metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "someone", UID: "x", Controller: ptr.To(true)}
	existing := []*corev1.ConfigMap{
		cm("users", "the user's", some, nil),                     // config/prometheus's copy: not ours
		cm("strangers", "the stranger's", ours, stranger),        // our labels, someone else's controller
		cm("orphaned", "left by an orphaning delete", ours, nil), // ours: Prune would delete it too
		cm("predecessors", "of the deleted owner", ours, predecessor),
	}
	for _, c := range existing {
		if err := direct.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	var desired []client.Object
	for _, name := range []string{"users", "strangers", "orphaned", "predecessors", "operators"} {
		desired = append(desired, cm(name, "the operator's", ours, nil))
	}
	applied, notOwned, err := a.ApplyOwned(ctx, owner, ours, desired)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(notOwned, []string{"ConfigMap apply-owned/users", "ConfigMap apply-owned/strangers"}) {
		t.Errorf("notOwned %v, want the user's and the stranger's ConfigMaps", notOwned)
	}
	for _, name := range []string{"orphaned", "predecessors", "operators"} {
		if !applied.Sent(corev1.SchemeGroupVersion.WithKind("ConfigMap"), owner.Name, name) {
			t.Errorf("%s not applied (%v)", name, applied)
		}
		live := &corev1.ConfigMap{}
		if err := direct.Get(ctx, client.ObjectKey{Namespace: owner.Name, Name: name}, live); err != nil || live.Data["k"] != "the operator's" || !metav1.IsControlledBy(live, owner) {
			t.Errorf("%s: %v, data %v, controller %v: want it adopted", name, err, live.Data, metav1.GetControllerOf(live))
		}
	}
	if sent.Load() != 4 {
		t.Errorf("%d patches sent, want the operator's three and the predecessor's reference dropped", sent.Load())
	}
	// Pruning with the result, by labels they carry, leaves the others' alone.
	for _, sel := range []client.MatchingLabels{some, ours} {
		if _, err := a.Prune(ctx, owner, applied, owner.Name, sel, corev1.SchemeGroupVersion.WithKind("ConfigMap")); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range existing[:2] {
		live := &corev1.ConfigMap{}
		if err := direct.Get(ctx, client.ObjectKeyFromObject(c), live); err != nil || live.Data["k"] != c.Data["k"] || !equality.Semantic.DeepEqual(live.OwnerReferences, c.OwnerReferences) {
			t.Fatalf("%s after apply and prune: %v, data %v, owners %v", c.Name, err, live.Data, live.OwnerReferences)
		}
	}
	// Apply, unlike ApplyOwned, takes over (the operator's own workloads).
	if _, err := a.Apply(ctx, owner, []client.Object{cm("users", "the operator's", ours, nil)}); err != nil {
		t.Fatal(err)
	}
	live := &corev1.ConfigMap{}
	if err := direct.Get(ctx, client.ObjectKey{Namespace: owner.Name, Name: "users"}, live); err != nil || live.Data["k"] != "the operator's" {
		t.Fatalf("Apply: %v, data %v", err, live.Data)
	}
}

// laggingCache is a cache that has not caught up: every read says missing.
type laggingCache struct{ client.Client }

func (laggingCache) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
}
