package linstorcluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
)

// A pass that decided on a stale LinstorCluster (the cache still shows a restore as
// Restoring after it was saved Restored) must not start the restore again: the unchanged
// state asks for RestoreDatabase without a status write, so the guard is the
// optimistic-locked write before the job, which conflicts. Nothing is started, no
// marker is written, the stored status is untouched. Real kube-apiserver (envtest).
func TestAStaleViewNeverStartsARestoreJob(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("KUBEBUILDER_ASSETS is not set (make test sets it)")
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = linstorv1.AddToScheme(scheme)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &Reconciler{Client: c, Direct: c}
	go func() { _ = r.restores.run(ctx) }()

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "linstor"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	cluster := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor", Namespace: "linstor"}}
	if err := c.Create(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	cluster.Status.Restore = &linstorv1.RestoreStatus{BackupName: "nightly", Phase: lifecycle.RestoreRestoring, Message: "Replacing the database with nightly"}
	if err := c.Status().Update(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	stale := cluster.DeepCopy()
	// Another pass finished the restore and saved it.
	cluster.Status.Restore.Phase, cluster.Status.Restore.Message = lifecycle.RestoreRestored, "Restored nightly"
	if err := c.Status().Update(ctx, cluster); err != nil {
		t.Fatal(err)
	}

	done, _, err := r.databaseJob(ctx, stale, lifecycle.Action{Kind: lifecycle.RestoreDatabase, Backup: "nightly"})
	if !errors.Is(err, errLifecycleConflict) || done {
		t.Fatalf("databaseJob on a stale view: done %v, err %v; want errLifecycleConflict", done, err)
	}
	if _, busy := r.restores.restoring(client.ObjectKeyFromObject(cluster)); busy {
		t.Fatal("a restore job was started on a stale view")
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "linstor", Name: MarkerName("linstor")}, &corev1.ConfigMap{}); err == nil {
		t.Fatal("a marker was written on a stale view")
	}
	got := &linstorv1.LinstorCluster{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cluster), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Restore.Phase != lifecycle.RestoreRestored || got.Status.Restore.Message != "Restored nightly" {
		t.Fatalf("the stored status changed: %+v", got.Status.Restore)
	}

	// The same request on the fresh object proves its view and records the marker
	// before the job starts.
	fresh := got.DeepCopy()
	fresh.Status.Restore.Phase = lifecycle.RestoreRestoring
	if err := c.Status().Update(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.databaseJob(ctx, fresh, lifecycle.Action{Kind: lifecycle.RestoreDatabase, Backup: "nightly"}); err != nil {
		t.Fatalf("databaseJob on a fresh view: %v", err)
	}
	m, err := r.readMarker(ctx, fresh)
	if err != nil || m == nil || m.Backup != "nightly" || m.Operation != lifecycle.MarkerRestore || m.ClusterUID != string(fresh.UID) {
		t.Fatalf("marker %+v, %v", m, err)
	}
}
