// Package printcolumns checks what `kubectl get` prints for the linstor.io kinds: the
// CRDs' additionalPrinterColumns evaluated by a real kube-apiserver, asked for a Table
// as kubectl asks. No operator runs here, so no controller rewrites the status under test.
package printcolumns

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	corev1 "k8s.io/api/core/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

var (
	cfg *rest.Config
	cl  client.Client
)

func TestMain(m *testing.M) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join(envtest.RepoRoot(), "bin", "k8s", "v1.34.2")
	}
	scheme := runtime.NewScheme()
	_ = linstorv1.AddToScheme(scheme)
	_ = corev1.AddToScheme(scheme)
	te := &ctrlenvtest.Environment{
		BinaryAssetsDirectory: dir,
		CRDDirectoryPaths:     []string{filepath.Join(envtest.RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	var err error
	if cfg, err = te.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting kube-apiserver:", err)
		os.Exit(1)
	}
	if cl, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = te.Stop()
		os.Exit(1)
	}
	code := m.Run()
	_ = te.Stop()
	os.Exit(code)
}

// table GETs one object as kubectl get does and returns its row by column name.
func table(t *testing.T, resource, namespace, name string) map[string]string {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("%s/apis/linstor.io/v1/namespaces/%s/%s/%s", strings.TrimSuffix(cfg.Host, "/"), namespace, resource, name)
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, body)
	}
	var tab metav1.Table
	if err := json.Unmarshal(body, &tab); err != nil {
		t.Fatal(err)
	}
	if len(tab.Rows) != 1 {
		t.Fatalf("%d rows", len(tab.Rows))
	}
	row := map[string]string{}
	for i, c := range tab.ColumnDefinitions {
		row[c.Name] = fmt.Sprint(tab.Rows[0].Cells[i])
	}
	return row
}

func namespace(t *testing.T) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "columns-"}}
	if err := cl.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func conditions(statuses ...string) []metav1.Condition {
	var out []metav1.Condition
	for i := 0; i < len(statuses); i += 2 {
		out = append(out, metav1.Condition{Type: statuses[i], Status: metav1.ConditionStatus(statuses[i+1]),
			Reason: "Test", LastTransitionTime: metav1.NewTime(time.Now())})
	}
	return out
}

func expect(t *testing.T, row map[string]string, want map[string]string) {
	t.Helper()
	for col, v := range want {
		if got, ok := row[col]; !ok || got != v {
			t.Errorf("column %s = %q (present %v), want %q; row %v", col, got, ok, v, row)
		}
	}
}

func TestLinstorClusterColumns(t *testing.T) {
	ctx := context.Background()
	c := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor", Namespace: namespace(t)}}
	if err := cl.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Status = linstorv1.LinstorClusterStatus{
		Conditions: conditions(linstorv1.ConditionAvailable, "True", linstorv1.ConditionProgressing, "True",
			linstorv1.ConditionDegraded, "False", linstorv1.ConditionUpgradeable, "False"),
		Version:           "1.33.3",
		SatellitesSummary: "2/3",
		Upgrade:           &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeSatellites, From: "1.32.3", To: "1.33.3"},
	}
	if err := cl.Status().Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	expect(t, table(t, "linstorclusters", c.Namespace, c.Name), map[string]string{
		"Available": "True", "Progressing": "True", "Degraded": "False",
		"Version": "1.33.3", "Upgrade": "Satellites", "Satellites": "2/3",
	})
}

func TestLinstorSatelliteColumns(t *testing.T) {
	ctx := context.Background()
	s := &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Namespace: namespace(t)},
		Spec: linstorv1.LinstorSatelliteSpec{ClusterRef: linstorv1.ClusterReference{Name: "linstor"}}}
	if err := cl.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	s.Status = linstorv1.LinstorSatelliteStatus{
		Conditions:       conditions(linstorv1.ConditionAvailable, "False", linstorv1.ConditionDegraded, "True"),
		ConnectionStatus: "OFFLINE", Version: "1.33.3", PoolsSummary: "1/2",
	}
	if err := cl.Status().Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	expect(t, table(t, "linstorsatellites", s.Namespace, s.Name), map[string]string{
		"Available": "False", "Degraded": "True", "Connection": "OFFLINE", "Version": "1.33.3", "Pools": "1/2",
	})
}

// TestLinstorSatelliteConfigurationColumns: the count is printed, never the node list,
// which grows with the cluster.
func TestLinstorSatelliteConfigurationColumns(t *testing.T) {
	ctx := context.Background()
	lsc := &linstorv1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "all", Namespace: namespace(t)}}
	if err := cl.Create(ctx, lsc); err != nil {
		t.Fatal(err)
	}
	lsc.Status = linstorv1.LinstorSatelliteConfigurationStatus{
		Conditions:   conditions(linstorv1.ConditionApplied, "True"),
		MatchedNodes: []string{"node-a", "node-b", "node-c"}, MatchedNodeCount: 3,
	}
	if err := cl.Status().Update(ctx, lsc); err != nil {
		t.Fatal(err)
	}
	row := table(t, "linstorsatelliteconfigurations", lsc.Namespace, lsc.Name)
	expect(t, row, map[string]string{"Nodes": "3", "Applied": "True"})
	for col, v := range row {
		if v == "[node-a node-b node-c]" || v == `["node-a","node-b","node-c"]` {
			t.Errorf("column %s prints the node list", col)
		}
	}
}
