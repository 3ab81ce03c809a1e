package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	lapiconst "github.com/LINBIT/golinstor"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
)

// These tests run the emulator's database against a real kube-apiserver (envtest), as
// LINSTOR's k8s backend writes to one.

const dbNamespace = "linstor"

// apiServer starts kube-apiserver and etcd for one test and returns a client without
// a cache, the kind the emulator's Database needs.
func apiServer(t *testing.T) client.WithWatch {
	t.Helper()
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		_, file, _, _ := runtime.Caller(0)
		dir = filepath.Join(filepath.Dir(file), "..", "..", "..", "bin", "k8s", "v1.34.2")
	}
	te := &ctrlenvtest.Environment{BinaryAssetsDirectory: dir}
	cfg, err := te.Start()
	if err != nil {
		t.Fatalf("starting kube-apiserver from %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = te.Stop() })
	scheme := k8sruntime.NewScheme()
	must(t, clientgoscheme.AddToScheme(scheme))
	must(t, apiextensionsv1.AddToScheme(scheme))
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	must(t, err)
	must(t, c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: dbNamespace}}))
	return c
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// runController deploys a LINSTOR controller Deployment (once) and a Running controller
// pod of version, replacing the previous pod: what the emulator follows when coupled.
func runController(t *testing.T, c client.Client, version string) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{names.LabelName: names.ControllerName}
	containers := []corev1.Container{{Name: names.ControllerName, Image: "quay.io/piraeusdatastore/piraeus-server:v" + version}}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: dbNamespace, Name: names.ControllerName, Labels: labels},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: containers}}}}
	if err := c.Create(ctx, dep); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	var pods corev1.PodList
	must(t, c.List(ctx, &pods, client.InNamespace(dbNamespace)))
	for i := range pods.Items {
		must(t, c.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0)))
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: dbNamespace, GenerateName: "linstor-controller-", Labels: labels},
		Spec: corev1.PodSpec{Containers: containers}}
	must(t, c.Create(ctx, pod))
	pod.Status.Phase = corev1.PodRunning
	must(t, c.Status().Update(ctx, pod))
}

// coupledWithDatabase couples e to the API server, its state kept in db, and waits
// until its controller answers at version.
func coupledWithDatabase(t *testing.T, e *Emulator, c, db client.Client, version string) *httptest.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Couple(ctx, Cluster{Reader: c, Namespace: dbNamespace, Database: db, Interval: 20 * time.Millisecond})
	}()
	t.Cleanup(func() { cancel(); <-done })
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(srv.Close)
	waitForVersion(t, e, srv, version)
	return srv
}

// started: the controller pod's process has loaded its database and answers.
func (e *Emulator) started() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.controllerPod != "" && !e.controllerStarting && e.controllerFailure == "" && !e.controllerDown
}

func waitForVersion(t *testing.T, e *Emulator, srv *httptest.Server, version string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		status, body := call(t, srv, http.MethodGet, "/v1/controller/version", nil)
		var v struct{ Version string }
		if e.started() && status == http.StatusOK && json.Unmarshal(body, &v) == nil && v.Version == version {
			return
		}
		last = fmt.Sprintf("%d %s", status, body)
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the controller never answered at %s; last answer: %s", version, last)
}

func call(t *testing.T, srv *httptest.Server, method, path string, body any) (int, []byte) {
	t.Helper()
	var in bytes.Buffer
	if body != nil {
		must(t, json.NewEncoder(&in).Encode(body))
	}
	req, err := http.NewRequest(method, srv.URL+path, &in)
	must(t, err)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	return resp.StatusCode, out.Bytes()
}

func createRD(name string) map[string]any {
	return map[string]any{"resource_definition": map[string]any{"name": name}}
}

// databaseEqualsMemory compares the rows in the API server with what the emulator
// holds in memory, at the schema its database has.
func databaseEqualsMemory(t *testing.T, e *Emulator, c client.Client) {
	t.Helper()
	e.mu.Lock()
	version := e.databaseVersion()
	known := e.tablesOf(e.version)
	memory := onlyTables(e.rows(version), known)
	e.mu.Unlock()
	stored, err := readRows(context.Background(), c, known)
	must(t, err)
	for key, raw := range memory {
		if stored[key] != raw {
			t.Errorf("row %s: database %q, memory %q", key, stored[key], raw)
		}
	}
	for key := range stored {
		if _, ok := memory[key]; !ok {
			t.Errorf("row %s is in the database, not in memory", key)
		}
	}
}

// Many clients create and delete resource definitions while the periodic save runs:
// every answered change is in the database, and nothing the memory no longer holds.
func TestDatabaseEqualsMemoryUnderConcurrentWrites(t *testing.T) {
	c := apiServer(t)
	e := New()
	runController(t, c, DefaultVersion)
	db := slowWrites(c)
	srv := coupledWithDatabase(t, e, c, db, DefaultVersion)

	// The periodic save runs every 20 ms (Couple); two more loops keep it running all
	// the time, as a slow API server would make the saves overlap.
	stop := make(chan struct{})
	var savers sync.WaitGroup
	for range 2 {
		savers.Add(1)
		go func() {
			defer savers.Done()
			for {
				select {
				case <-stop:
					return
				default:
					_ = e.SyncWithCluster(context.Background(), Cluster{Reader: c, Namespace: dbNamespace, Database: db})
				}
			}
		}()
	}
	var wg sync.WaitGroup
	for w := 0; w < 12; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				name := fmt.Sprintf("pvc-%d-%d", w, i)
				if status, body := call(t, srv, http.MethodPost, "/v1/resource-definitions", createRD(name)); status != http.StatusCreated {
					t.Errorf("create %s: %d %s", name, status, body)
				}
				// Every writer changes the same row too: the controller's properties.
				setProp := map[string]any{"override_props": map[string]string{fmt.Sprintf("Aux/writer-%d", w): fmt.Sprint(i)}}
				if status, body := call(t, srv, http.MethodPost, "/v1/controller/properties", setProp); status != http.StatusCreated {
					t.Errorf("set a property: %d %s", status, body)
				}
				if i%3 == 0 {
					if status, body := call(t, srv, http.MethodDelete, "/v1/resource-definitions/"+name, nil); status != http.StatusOK {
						t.Errorf("delete %s: %d %s", name, status, body)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	savers.Wait()
	// Every request is answered after its commit: the database holds all of them now,
	// and the periodic save that keeps running may not make it lag.
	databaseEqualsMemory(t, e, c)
	time.Sleep(200 * time.Millisecond)
	databaseEqualsMemory(t, e, c)
}

// slowWrites delays every write of a row by up to 3 ms, as a busy API server does.
func slowWrites(c client.WithWatch) client.Client {
	pause := func() { time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond) }
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			pause()
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			pause()
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			pause()
			return c.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			pause()
			return c.Delete(ctx, obj, opts...)
		},
	})
}

// failingWrites makes every write of a LINSTOR table row fail while fail is set; the
// API server itself and the CRDs are not touched.
func failingWrites(c client.WithWatch, fail *atomic.Bool) client.Client {
	refuse := func(obj client.Object) error {
		if fail.Load() && obj.GetObjectKind().GroupVersionKind().Group == dbbackup.Group {
			return apierrors.NewServiceUnavailable("injected: the database does not accept writes")
		}
		return nil
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := refuse(obj); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := refuse(obj); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := refuse(obj); err != nil {
				return err
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if err := refuse(obj); err != nil {
				return err
			}
			return c.Delete(ctx, obj, opts...)
		},
	})
}

// A change whose commit fails is answered with an error and undone in memory, as the
// server's transaction rollback does: memory stays what the database holds.
func TestFailedCommitFailsTheRequestAndRevertsMemory(t *testing.T) {
	c := apiServer(t)
	var fail atomic.Bool
	e := New()
	runController(t, c, DefaultVersion)
	srv := coupledWithDatabase(t, e, c, failingWrites(c, &fail), DefaultVersion)

	if status, body := call(t, srv, http.MethodPost, "/v1/resource-definitions", createRD("kept")); status != http.StatusCreated {
		t.Fatalf("create kept: %d %s", status, body)
	}
	fail.Store(true)
	status, body := call(t, srv, http.MethodPost, "/v1/resource-definitions", createRD("lost"))
	var answer []apiCallRc
	_ = json.Unmarshal(body, &answer)
	if status != http.StatusInternalServerError || len(answer) != 1 || uint64(answer[0].RetCode)&lapiconst.MaskBitsCode != lapiconst.FailUnknownError&lapiconst.MaskBitsCode {
		t.Errorf("a create whose commit failed answered %d %s, want 500 with FAIL_UNKNOWN_ERROR", status, body)
	}
	if status, body := call(t, srv, http.MethodDelete, "/v1/resource-definitions/kept", nil); status != http.StatusInternalServerError {
		t.Errorf("a delete whose commit failed answered %d %s, want 500", status, body)
	}
	if got := definitions(t, srv); len(got) != 1 || got[0] != "kept" {
		t.Errorf("resource definitions after two changes that were not committed: %v, want [kept]", got)
	}
	fail.Store(false)
	databaseEqualsMemory(t, e, c)
	// The database works again: the next change is committed.
	if status, body := call(t, srv, http.MethodPost, "/v1/resource-definitions", createRD("later")); status != http.StatusCreated {
		t.Fatalf("create later: %d %s", status, body)
	}
	databaseEqualsMemory(t, e, c)
}

func definitions(t *testing.T, srv *httptest.Server) []string {
	t.Helper()
	status, body := call(t, srv, http.MethodGet, "/v1/resource-definitions", nil)
	var rds []struct{ Name string }
	if status != http.StatusOK || json.Unmarshal(body, &rds) != nil {
		t.Fatalf("list resource definitions: %d %s", status, body)
	}
	var names []string
	for _, rd := range rds {
		names = append(names, rd.Name)
	}
	return names
}

// storedVersion is the version the database's linstorversion row names.
func storedVersion(t *testing.T, c client.Client) string {
	t.Helper()
	v, err := readStoredVersion(context.Background(), c)
	must(t, err)
	return v
}

// An older controller starts on a database a newer version migrated, as LINSTOR does
// (DbK8sCrd.migrate runs no migration for it): it loads the rows, and its commits
// leave the schema and the stored version as they are.
func TestOlderControllerStartsOnANewerDatabase(t *testing.T) {
	c := apiServer(t)
	e := New()
	runController(t, c, "1.33.2")
	srv := coupledWithDatabase(t, e, c, c, "1.33.2")
	if status, body := call(t, srv, http.MethodPost, "/v1/resource-definitions", createRD("before-upgrade")); status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, body)
	}
	runController(t, c, "1.33.3") // migrates
	waitForVersion(t, e, srv, "1.33.3")
	if status, body := call(t, srv, http.MethodPost, "/v1/resource-definitions", createRD("after-upgrade")); status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, body)
	}

	runController(t, c, "1.33.2") // the old image again, without restoring the database
	waitForVersion(t, e, srv, "1.33.2")
	if got := definitions(t, srv); len(got) != 2 {
		t.Errorf("the old controller loaded %v, want both definitions", got)
	}
	if status, body := call(t, srv, http.MethodPost, "/v1/resource-definitions", createRD("on-rollback")); status != http.StatusCreated {
		t.Fatalf("create on the old controller: %d %s", status, body)
	}
	if v := storedVersion(t, c); v != "1.33.3" {
		t.Errorf("the stored version after the old controller committed: %s, want 1.33.3 (it never migrates down)", v)
	}
	databaseEqualsMemory(t, e, c)
}

// A migration that drops a table deletes its CRD and rows; the new version runs
// without it, and the old version does not start until the table is back.
func TestMigrationDropsATable(t *testing.T) {
	c := apiServer(t)
	e := New()
	if err := e.DropTableAtNextMigration("linstorversion"); err == nil {
		t.Error("dropping linstorversion was accepted")
	}
	if err := e.DropTableAtNextMigration("no-such-table"); err == nil {
		t.Error("dropping an unknown table was accepted")
	}
	runController(t, c, "1.33.2")
	srv := coupledWithDatabase(t, e, c, c, "1.33.2")
	if status, body := call(t, srv, http.MethodPost, "/v1/resource-definitions", createRD("kept")); status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, body)
	}
	must(t, e.DropTableAtNextMigration("nodeconnections"))
	runController(t, c, "1.33.3")
	waitForVersion(t, e, srv, "1.33.3")
	crd := &apiextensionsv1.CustomResourceDefinition{}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.Get(context.Background(), client.ObjectKey{Name: "nodeconnections." + dbbackup.Group}, crd)
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dropped table's CRD is still there: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := definitions(t, srv); len(got) != 1 || got[0] != "kept" {
		t.Errorf("after the migration: %v, want [kept]", got)
	}
	if status, body := call(t, srv, http.MethodPost, "/v1/resource-definitions", createRD("later")); status != http.StatusCreated {
		t.Fatalf("create after the migration: %d %s", status, body)
	}
	databaseEqualsMemory(t, e, c)
	// The old version needs the table: it does not start while its CRD is missing.
	runController(t, c, "1.33.2")
	time.Sleep(time.Second)
	e.mu.Lock()
	failure := e.controllerFailure
	e.mu.Unlock()
	if !strings.Contains(failure, "nodeconnections") {
		t.Errorf("the old controller on a database without its table: failure %q, want a missing nodeconnections table", failure)
	}
}
