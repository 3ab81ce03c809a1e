package apply_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
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
	for i := 0; i < 100 && sent.Load() == changed; i++ {
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
// config/prometheus, say) is neither changed nor pruned, even when it carries the
// operator's labels and the cache has not seen it yet; the operator's own objects are
// applied as ever.
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
	ours := map[string]string{"app.kubernetes.io/managed-by": "linstor-operator"}
	cm := func(name, value string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: owner.Name, Labels: ours},
			Data:       map[string]string{"k": value},
		}
	}
	users := cm("users", "the user's")
	if err := direct.Create(ctx, users); err != nil {
		t.Fatal(err)
	}
	applied, notOwned, err := a.ApplyOwned(ctx, owner, []client.Object{cm("users", "the operator's"), cm("operators", "the operator's")})
	if err != nil {
		t.Fatal(err)
	}
	if len(notOwned) != 1 || notOwned[0] != "ConfigMap apply-owned/users" {
		t.Errorf("notOwned %v, want the user's ConfigMap", notOwned)
	}
	if sent.Load() != 1 || !applied.Sent(corev1.SchemeGroupVersion.WithKind("ConfigMap"), owner.Name, "operators") {
		t.Errorf("%d sent (%v), want only the operator's own ConfigMap", sent.Load(), applied)
	}
	// Pruning with the result, by the labels both carry, leaves the user's alone.
	if _, err := a.Prune(ctx, owner, applied, owner.Name, client.MatchingLabels(ours), corev1.SchemeGroupVersion.WithKind("ConfigMap")); err != nil {
		t.Fatal(err)
	}
	live := &corev1.ConfigMap{}
	if err := direct.Get(ctx, client.ObjectKeyFromObject(users), live); err != nil || live.Data["k"] != "the user's" || metav1.GetControllerOf(live) != nil {
		t.Fatalf("the user's ConfigMap after apply and prune: %v, data %v, controller %v", err, live.Data, metav1.GetControllerOf(live))
	}
	// The operator's own ConfigMap is its to change.
	if _, notOwned, err = a.ApplyOwned(ctx, owner, []client.Object{cm("operators", "changed")}); err != nil || len(notOwned) != 0 {
		t.Fatalf("applying the operator's own ConfigMap: %v, notOwned %v", err, notOwned)
	}
	if err := direct.Get(ctx, client.ObjectKey{Namespace: owner.Name, Name: "operators"}, live); err != nil || live.Data["k"] != "changed" {
		t.Fatalf("the operator's own ConfigMap: %v, data %v", err, live.Data)
	}
	// Apply, unlike ApplyOwned, takes over (the operator's own workloads).
	if _, err := a.Apply(ctx, owner, []client.Object{cm("users", "the operator's")}); err != nil {
		t.Fatal(err)
	}
	if err := direct.Get(ctx, client.ObjectKeyFromObject(users), live); err != nil || live.Data["k"] != "the operator's" {
		t.Fatalf("Apply: %v, data %v", err, live.Data)
	}
}

// laggingCache is a cache that has not caught up: every read says missing.
type laggingCache struct{ client.Client }

func (laggingCache) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
}
