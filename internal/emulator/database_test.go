package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
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
// holds in memory, at the schema its controller reads and writes through.
func databaseEqualsMemory(t *testing.T, e *Emulator, c client.Client) {
	t.Helper()
	e.mu.Lock()
	schema := e.writeSchema()
	memory := e.rows()
	e.mu.Unlock()
	stored, err := readDatabaseRows(context.Background(), c, tablesOf(schema))
	must(t, err)
	for plural, rows := range memory {
		for name, r := range rows {
			if !rowEqual(stored[plural][name], r) {
				t.Errorf("row %s/%s: database %v, memory %v", plural, name, stored[plural][name], r)
			}
		}
	}
	for plural, rows := range stored {
		for name := range rows {
			if _, ok := memory[plural][name]; !ok {
				t.Errorf("row %s/%s is in the database, not in memory", plural, name)
			}
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

// storedVersion is the database's LinstorVersion (last migration applied + 1).
func storedVersion(t *testing.T, c client.Client) int {
	t.Helper()
	v, err := StoredVersion(context.Background(), c)
	must(t, err)
	return v
}

// An older controller starts on a database a newer version migrated, as LINSTOR does
// (DbK8sCrd.migrate runs no migration for it): it loads the rows, and its commits
// leave the stored version as it is.
func TestOlderControllerStartsOnANewerDatabase(t *testing.T) {
	c := apiServer(t)
	e := New()
	runController(t, c, "1.32.3")
	srv := coupledWithDatabase(t, e, c, c, "1.32.3")
	if status, body := call(t, srv, http.MethodPost, "/v1/resource-definitions", createRD("before-upgrade")); status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, body)
	}
	runController(t, c, "1.33.3") // runs 29 and 30
	waitForVersion(t, e, srv, "1.33.3")
	if status, body := call(t, srv, http.MethodPost, "/v1/resource-definitions", createRD("after-upgrade")); status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, body)
	}

	runController(t, c, "1.32.3") // the old image again, without restoring the database
	waitForVersion(t, e, srv, "1.32.3")
	if got := definitions(t, srv); len(got) != 2 {
		t.Errorf("the old controller loaded %v, want both definitions", got)
	}
	if status, body := call(t, srv, http.MethodPost, "/v1/resource-definitions", createRD("on-rollback")); status != http.StatusCreated {
		t.Fatalf("create on the old controller: %d %s", status, body)
	}
	if v := storedVersion(t, c); v != 31 {
		t.Errorf("the stored version after the old controller committed: %d, want 31 (it never migrates down)", v)
	}
	databaseEqualsMemory(t, e, c)
}

// withTestNodes adds satellites with an LVM-thin pool DfltStorPool, in memory.
func withTestNodes(e *Emulator, names ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, name := range names {
		e.nodes[strings.ToLower(name)] = &node{Node: lapi.Node{Name: name, Type: "SATELLITE"}, online: true,
			pools: map[string]*lapi.StoragePool{"dfltstorpool": {StoragePoolName: "DfltStorPool", NodeName: name, ProviderKind: lapi.LVM_THIN}}}
	}
}

// populated is an emulator of version with two DRBD resources over three nodes (one
// replica diskless), properties, and opaque rows of a user's database.
func populated(t *testing.T, version string) *Emulator {
	t.Helper()
	e := New()
	e.SetVersion(version)
	withTestNodes(e, "n1", "n2", "n3")
	must(t, e.PlaceResource("pvc-a", "n1", "DfltStorPool", true))
	must(t, e.PlaceResource("pvc-a", "n2", "DfltStorPool", false))
	must(t, e.PlaceResource("pvc-a", "n3", "", false))
	must(t, e.PlaceResource("pvc-b", "n2", "DfltStorPool", false))
	e.mu.Lock()
	e.controllerProps["DrbdOptions/Net/max-buffers"] = "10000"
	if e.rds["pvc-a"].Props == nil {
		e.rds["pvc-a"].Props = map[string]string{}
	}
	e.rds["pvc-a"].Props["Aux/owner"] = "test"
	e.mu.Unlock()
	must(t, e.SeedRow("ResourceDefinitions", map[string]any{"uuid": "u-snap", "resource_name": "PVC-A", "snapshot_name": "SNAP1",
		"resource_dsp_name": "pvc-a", "snapshot_dsp_name": "snap1", "resource_flags": 0, "layer_stack": `["DRBD","STORAGE"]`, "resource_group_name": "DFLTRSCGRP"}))
	must(t, e.SeedRow("layerdrbdresources", map[string]any{"layer_resource_id": 99, "peer_slots": 7, "al_stripes": 1, "al_stripe_size": 32, "flags": 0, "node_id": 0}))
	must(t, e.SeedRow("PropsContainers", map[string]any{"props_instance": "/NODES/N1", "prop_key": "Aux/zone", "prop_value": "a"}))
	must(t, e.SeedRow("KeyValueStore", map[string]any{"kvs_name": "csi", "kvs_dsp_name": "csi"}))
	return e
}

// The state written as rows and loaded again gives the same rows: every column the
// emulator writes is one it reads back, and opaque rows are carried unchanged. Loaded
// with no baseline (every column rendered from the state), the rows are still the same.
func TestRowsRoundTrip(t *testing.T) {
	for _, version := range []string{"1.31.3", "1.32.3", "1.33.2", "1.33.3"} {
		t.Run(version, func(t *testing.T) {
			e := populated(t, version)
			e.mu.Lock()
			first := e.rows()
			e.mu.Unlock()

			loaded := New()
			loaded.SetVersion(version)
			loaded.mu.Lock()
			defer loaded.mu.Unlock()
			must(t, loaded.load(first.clone()))
			if again := loaded.rows(); !tablesEqual(first, again) {
				t.Errorf("rows -> load -> rows differ:\nfirst %v\nagain %v", first, again)
			}
			loaded.persisted = nil
			if fromState := loaded.rows(); !tablesEqual(first, fromState) {
				t.Errorf("rows rendered from the loaded state alone differ:\nfirst %v\nstate %v", first, fromState)
			}
			if got := loaded.opaque["layerdrbdresources"]; len(got) != 1 {
				t.Errorf("opaque layerdrbdresources rows: %v, want the orphan", got)
			}
			if got := loaded.rds["pvc-a"].Props["Aux/owner"]; got != "test" {
				t.Errorf("pvc-a's property after the load: %q", got)
			}
		})
	}
}

// rowsWhere are the rows of a table whose columns have the given values.
func rowsWhere(db dbTables, plural string, match row) []row {
	var out []row
	for _, r := range db[plural] {
		ok := true
		for k, v := range match {
			ok = ok && reflect.DeepEqual(r[k], v)
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

// A DRBD resource's layer rows and its initial-sync source are what the server of the
// version writes: ports per definition up to 1.31, per resource from 1.32
// (tcp_port_list); DrbdPrimarySetOn up to 1.33.1, InitialUptoDateOn and
// DRBD_INITIALIZED from 1.33.2.
func TestLayerRowsPerVersion(t *testing.T) {
	tests := []struct {
		version            string
		rscDfnPort         any    // LayerDrbdResourceDefinitions.tcp_port of pvc-a
		portList           any    // LayerDrbdResources.tcp_port_list of pvc-a's replicas
		primarySetOn       string // pvc-a's DrbdPrimarySetOn
		upToDateOn         string // pvc-a volume 0's InitialUptoDateOn
		vlmFlags           int64
		secondRscDfnPort   any
		secondPortListOnN2 any
	}{
		{version: "1.31.3", rscDfnPort: int64(7000), portList: nil, primarySetOn: "N1", secondRscDfnPort: int64(7001)},
		{version: "1.32.3", portList: "[7000]", primarySetOn: "N1", secondPortListOnN2: "[7001]"},
		{version: "1.33.1", portList: "[7000]", primarySetOn: "N1", secondPortListOnN2: "[7001]"},
		{version: "1.33.2", portList: "[7000]", upToDateOn: "N1", vlmFlags: 32, secondPortListOnN2: "[7001]"},
	}
	for _, tc := range tests {
		t.Run(tc.version, func(t *testing.T) {
			e := populated(t, tc.version)
			e.mu.Lock()
			db := e.rows()
			e.mu.Unlock()
			dfn := rowsWhere(db, "layerdrbdresourcedefinitions", row{"resource_name": "PVC-A"})
			if len(dfn) != 1 || dfn[0]["tcp_port"] != tc.rscDfnPort || dfn[0]["secret"] == "" {
				t.Errorf("pvc-a's DRBD rsc-dfn rows: %v, want one with tcp_port %v and a secret", dfn, tc.rscDfnPort)
			}
			if dfn := rowsWhere(db, "layerdrbdresourcedefinitions", row{"resource_name": "PVC-B"}); len(dfn) != 1 || dfn[0]["tcp_port"] != tc.secondRscDfnPort {
				t.Errorf("pvc-b's DRBD rsc-dfn rows: %v, want tcp_port %v", dfn, tc.secondRscDfnPort)
			}
			nodeIDs := map[int64]bool{}
			for _, n := range []string{"N1", "N2", "N3"} {
				drbd := rowsWhere(db, "layerresourceids", row{"resource_name": "PVC-A", "node_name": n, "layer_resource_kind": "DRBD"})
				if len(drbd) != 1 || drbd[0]["layer_resource_parent_id"] != nil {
					t.Fatalf("pvc-a on %s: DRBD layer ids %v, want one at the top", n, drbd)
				}
				storage := rowsWhere(db, "layerresourceids", row{"resource_name": "PVC-A", "node_name": n, "layer_resource_kind": "STORAGE"})
				if len(storage) != 1 || storage[0]["layer_resource_parent_id"] != drbd[0]["layer_resource_id"] {
					t.Errorf("pvc-a on %s: STORAGE layer ids %v, want one below DRBD %v", n, storage, drbd[0]["layer_resource_id"])
				}
				data := rowsWhere(db, "layerdrbdresources", row{"layer_resource_id": drbd[0]["layer_resource_id"]})
				if len(data) != 1 || data[0]["tcp_port_list"] != tc.portList {
					t.Fatalf("pvc-a on %s: DRBD rows %v, want tcp_port_list %v", n, data, tc.portList)
				}
				id, _ := int64Column(data[0], "node_id")
				nodeIDs[id] = true
			}
			if len(nodeIDs) != 3 {
				t.Errorf("pvc-a's node ids: %v, want three different", nodeIDs)
			}
			if tc.secondPortListOnN2 != nil {
				drbd := rowsWhere(db, "layerresourceids", row{"resource_name": "PVC-B", "node_name": "N2", "layer_resource_kind": "DRBD"})
				data := rowsWhere(db, "layerdrbdresources", row{"layer_resource_id": drbd[0]["layer_resource_id"]})
				if data[0]["tcp_port_list"] != tc.secondPortListOnN2 {
					t.Errorf("pvc-b on N2: tcp_port_list %v, want %v (the node's next free port)", data[0]["tcp_port_list"], tc.secondPortListOnN2)
				}
			}
			primary := rowsWhere(db, "propscontainers", row{"props_instance": "/RSC_DFNS/PVC-A", "prop_key": "DrbdPrimarySetOn"})
			if got := propValue(primary); got != tc.primarySetOn {
				t.Errorf("pvc-a's DrbdPrimarySetOn: %q, want %q", got, tc.primarySetOn)
			}
			upToDate := rowsWhere(db, "propscontainers", row{"props_instance": "/VLM_DFNS/PVC-A/0", "prop_key": "Linstor/Drbd/InitialUptoDateOn"})
			if got := propValue(upToDate); got != tc.upToDateOn {
				t.Errorf("pvc-a volume 0's InitialUptoDateOn: %q, want %q", got, tc.upToDateOn)
			}
			vd := rowsWhere(db, "volumedefinitions", row{"resource_name": "PVC-A", "vlm_nr": int64(0)})
			if flags, _ := int64Column(vd[0], "vlm_flags"); len(vd) != 1 || flags != tc.vlmFlags {
				t.Errorf("pvc-a volume 0: %v, want vlm_flags %d", vd, tc.vlmFlags)
			}
		})
	}
}

func propValue(rows []row) string {
	if len(rows) != 1 {
		return ""
	}
	return stringColumn(rows[0], "prop_value")
}

// A new layer resource id skips the ids of opaque rows, so a new resource never takes
// the name of a row the emulator carries.
func TestNewLayerIDsSkipOpaqueRows(t *testing.T) {
	e := New()
	withTestNodes(e, "n1")
	must(t, e.SeedRow("LayerResourceIds", map[string]any{"layer_resource_id": 0, "node_name": "GONE", "resource_name": "GONE", "snapshot_name": "",
		"layer_resource_kind": "DRBD", "layer_resource_suffix": "", "layer_resource_suspended": false}))
	must(t, e.PlaceResource("pvc-a", "n1", "DfltStorPool", false))
	e.mu.Lock()
	defer e.mu.Unlock()
	if ids := e.rds["pvc-a"].resources["n1"].layerIDs; len(ids) != 2 || ids[0] == 0 || ids[1] == 0 {
		t.Errorf("pvc-a's layer ids %v took the opaque row's 0", ids)
	}
}

// controllerFailure is the failure of the current controller pod's start, "" when none.
func controllerFailure(e *Emulator) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.controllerFailure
}

func waitForFailure(t *testing.T, e *Emulator, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if f := controllerFailure(e); strings.Contains(f, want) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the controller's start never failed with %q; failure %q", want, controllerFailure(e))
}

func tableStorageVersion(t *testing.T, c client.Client, plural string) string {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	must(t, c.Get(context.Background(), client.ObjectKey{Name: plural + "." + dbbackup.Group}, crd))
	return storageVersion(crd)
}

// A database a 1.31 controller created is what migrations 28–30 act on: 1.32.3 runs 28
// (ports to the resources, schema v1-31-1), 1.33.3 runs 29 and 30; each start loads the
// migrated rows.
func TestUpgradeFrom1_31RunsTheMigrations(t *testing.T) {
	c := apiServer(t)
	e := New()
	withTestNodes(e, "n1", "n2")
	runController(t, c, "1.31.3")
	srv := coupledWithDatabase(t, e, c, c, "1.31.3")
	must(t, e.PlaceResource("pvc-a", "n1", "DfltStorPool", false))
	must(t, e.PlaceResource("pvc-a", "n2", "DfltStorPool", false))
	if v, s := storedVersion(t, c), tableStorageVersion(t, c, "layerdrbdresources"); v != 28 || s != "v1-27-1" {
		t.Fatalf("a database 1.31.3 created: stored %d at %s, want 28 at v1-27-1", v, s)
	}

	runController(t, c, "1.32.3")
	waitForVersion(t, e, srv, "1.32.3")
	db, err := readDatabaseRows(context.Background(), c, tablesOf("v1-31-1"))
	must(t, err)
	if v, s := storedVersion(t, c), tableStorageVersion(t, c, "layerdrbdresources"); v != 29 || s != "v1-31-1" {
		t.Errorf("after 1.32.3 started: stored %d at %s, want 29 at v1-31-1", v, s)
	}
	for _, r := range db["layerdrbdresources"] {
		if r["tcp_port_list"] != "[7000]" {
			t.Errorf("after migration 28 a DRBD resource row is %v, want tcp_port_list [7000] (its definition's port)", r)
		}
	}
	databaseEqualsMemory(t, e, c)

	runController(t, c, "1.33.3")
	waitForVersion(t, e, srv, "1.33.3")
	if v := storedVersion(t, c); v != 31 {
		t.Errorf("after 1.33.3 started: stored %d, want 31", v)
	}
	e.mu.Lock()
	rd := e.rds["pvc-a"]
	props, vd := maps.Clone(rd.Props), rd.volumes[0]
	e.mu.Unlock()
	if props["Linstor/Drbd/auto-block-size"] != "False" || props[primarySetOnKey] != "" {
		t.Errorf("pvc-a's properties after 29 and 30: %v, want auto-block-size False and no DrbdPrimarySetOn", props)
	}
	if vd.Props[initialUpToDateOnKey] != "N1" || !slices.Contains(vd.Flags, "DRBD_INITIALIZED") {
		t.Errorf("pvc-a's volume after 30: props %v flags %v, want InitialUptoDateOn N1 and DRBD_INITIALIZED", vd.Props, vd.Flags)
	}
	databaseEqualsMemory(t, e, c)
}

// A failing migration step fails the start: the stored version stays at the step, and
// the next controller pod resumes there.
func TestFailedMigrationStepFailsTheStartAndResumes(t *testing.T) {
	c := apiServer(t)
	e := New()
	runController(t, c, "1.32.3")
	srv := coupledWithDatabase(t, e, c, c, "1.32.3")
	if status, body := call(t, srv, http.MethodPost, "/v1/resource-definitions", createRD("kept")); status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, body)
	}
	e.FailNextMigration()
	runController(t, c, "1.33.3")
	waitForFailure(t, e, "injected")
	if v := storedVersion(t, c); v != 29 {
		t.Errorf("stored version after the failed step: %d, want 29", v)
	}
	runController(t, c, "1.33.3") // the pod restarts
	waitForVersion(t, e, srv, "1.33.3")
	if v := storedVersion(t, c); v != 31 {
		t.Errorf("stored version after the resumed start: %d, want 31", v)
	}
	if got := definitions(t, srv); len(got) != 1 || got[0] != "kept" {
		t.Errorf("definitions after the migration: %v, want [kept]", got)
	}
	databaseEqualsMemory(t, e, c)
}

// A migration fails on data of the user's database: an orphaned LayerDrbdResources
// row stops 28 ("LayerResourceId N not found!"), and every start fails the same.
func TestOrphanedLayerRowFailsMigration28(t *testing.T) {
	c := apiServer(t)
	e := New()
	runController(t, c, "1.31.3")
	coupledWithDatabase(t, e, c, c, "1.31.3")
	must(t, e.SeedRow("LayerDrbdResources", map[string]any{"layer_resource_id": 99, "peer_slots": 7, "al_stripes": 1, "al_stripe_size": 32, "flags": 0, "node_id": 0}))
	runController(t, c, "1.32.3")
	waitForFailure(t, e, "LayerResourceId 99 not found")
	if v := storedVersion(t, c); v != 28 {
		t.Errorf("stored version after 28 failed: %d, want 28", v)
	}
}
