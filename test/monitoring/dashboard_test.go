package monitoring

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/linstor-operator/linstor-operator/config/grafana"
	"github.com/linstor-operator/linstor-operator/internal/promserver"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// dashboard is what the tests read of config/grafana/linstor.json (Grafana's classic
// dashboard JSON model).
type dashboard struct {
	Title         string `json:"title"`
	UID           string `json:"uid"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []dashboardPanel `json:"panels"`
}

type dashboardPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
		// Name makes the OpenShift console look for a data source plugin of that name
		// instead of querying the cluster's Prometheus.
		Name string `json:"name"`
	} `json:"datasource"`
	GridPos struct {
		H, W, X, Y int
	} `json:"gridPos"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
	} `json:"targets"`
}

// grafanaSchemaVersion is the newest classic dashboard schema: LATEST_VERSION of
// grafana/grafana apps/dashboard/pkg/migration/schemaversion/migrations.go. Grafana
// migrates an older model on load; a newer one it cannot know.
const grafanaSchemaVersion = 42

// dashboardRows are the rows issue #35 asks for, in order.
var dashboardRows = []string{"Cluster health", "Capacity", "Replicas", "Backups", "Upgrades", "Operator health"}

// consolePanelTypes are the panel types the OpenShift console's dashboards render
// (openshift/monitoring-plugin web/src/components/dashboards/legacy/legacy-dashboard.tsx
// skips any other); Grafana migrates graph and singlestat to timeseries and stat.
var consolePanelTypes = []string{"graph", "singlestat", "gauge", "table", "grafana-piechart-panel"}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	var d dashboard
	if err := json.Unmarshal(grafana.Dashboard, &d); err != nil {
		t.Fatalf("config/grafana/%s: %v", grafana.FileName, err)
	}
	return d
}

// rowsOf maps each row title to the panels below it, up to the next row.
func rowsOf(d dashboard) (titles []string, panels map[string][]dashboardPanel) {
	panels = map[string][]dashboardPanel{}
	current := ""
	for _, p := range d.Panels {
		if p.Type == "row" {
			current = p.Title
			titles = append(titles, current)
			continue
		}
		panels[current] = append(panels[current], p)
	}
	return titles, panels
}

// The dashboard has the rows the issue names, a data source variable every panel
// uses, namespace and cluster variables, and only panels both Grafana and the
// OpenShift console draw.
func TestDashboardModel(t *testing.T) {
	d := loadDashboard(t)
	if d.Title == "" || d.UID == "" {
		t.Errorf("title %q, uid %q: both are needed (the sidecar and the console key on them)", d.Title, d.UID)
	}
	if d.SchemaVersion != grafanaSchemaVersion {
		t.Errorf("schemaVersion %d, want Grafana's current %d", d.SchemaVersion, grafanaSchemaVersion)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Type == "datasource" && v.Query != "prometheus" {
			t.Errorf("variable %s: a datasource variable of %v, want prometheus", v.Name, v.Query)
		}
	}
	for name, typ := range map[string]string{"datasource": "datasource", "namespace": "query", "cluster": "query"} {
		if vars[name] != typ {
			t.Errorf("variable %s is %q, want a %s variable", name, vars[name], typ)
		}
	}

	titles, panels := rowsOf(d)
	if !slices.Equal(titles, dashboardRows) {
		t.Errorf("rows %q, want %q", titles, dashboardRows)
	}
	if len(panels[""]) > 0 {
		t.Errorf("%d panels above the first row", len(panels[""]))
	}
	ids := map[int]bool{}
	for _, row := range dashboardRows {
		if len(panels[row]) == 0 {
			t.Errorf("row %q has no panels", row)
		}
	}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d is used twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v does not fit Grafana's 24 columns", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if !slices.Contains(consolePanelTypes, p.Type) {
			t.Errorf("panel %q: type %q, which the OpenShift console does not draw (it draws %v)", p.Title, p.Type, consolePanelTypes)
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || p.Datasource.Name != "" {
			t.Errorf("panel %q: datasource %+v, want the ${datasource} variable by uid alone", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
	}
}

// substitute replaces the dashboard's variables as Grafana and the console do before
// a query goes to Prometheus.
func substitute(expr, namespace, cluster, rateInterval string) string {
	return strings.NewReplacer(
		"$__rate_interval", rateInterval,
		"$namespace", namespace,
		"$cluster", cluster,
	).Replace(expr)
}

// metricNames parses expr with the Prometheus server's own PromQL parser
// (/api/v1/parse_query answers with the syntax tree) and returns the metric name of
// every selector.
func metricNames(ctx context.Context, srv *promserver.Server, expr string) ([]string, error) {
	form := url.Values{"query": {expr}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/api/v1/parse_query", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("%s", body.Error)
	}
	var tree any
	if err := json.Unmarshal(body.Data, &tree); err != nil {
		return nil, err
	}
	var names []string
	var walk func(node any) error
	walk = func(node any) error {
		switch n := node.(type) {
		case map[string]any:
			if typ, _ := n["type"].(string); typ == "vectorSelector" || typ == "matrixSelector" {
				name, _ := n["name"].(string)
				if name == "" {
					return fmt.Errorf("a selector without a metric name: %v", n["matchers"])
				}
				names = append(names, name)
			}
			for _, child := range n {
				if err := walk(child); err != nil {
					return err
				}
			}
		case []any:
			for _, child := range n {
				if err := walk(child); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(tree); err != nil {
		return nil, err
	}
	return names, nil
}

// operatorRegisters reports whether the operator's registry (the one its manager
// serves, filled by the controllers' and controller-runtime's init) holds a metric of
// this name. Gathering would miss a vector that has no series yet, such as the
// backup schedules' before the first schedule; registering a probe of the same name
// with another help text fails exactly when the name is taken.
func operatorRegisters(name string) bool {
	for _, base := range []string{name, strings.TrimSuffix(name, "_bucket"), strings.TrimSuffix(name, "_sum"), strings.TrimSuffix(name, "_count")} {
		probe := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: base, Help: "dashboard test probe"}, []string{"dashboard_test_probe"})
		if err := ctrlmetrics.Registry.Register(probe); err != nil {
			return true
		}
		ctrlmetrics.Registry.Unregister(probe)
	}
	return false
}

// linstorExports is every metric family the LINSTOR controller's /metrics declares
// as the emulator serves it (v1.33.3's PrometheusBuilder), by its TYPE line: a
// family without samples (no satellites yet) is still one LINSTOR exports.
func linstorExports(t *testing.T) map[string]bool {
	t.Helper()
	resp, err := http.Get(linstorURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]bool{}
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if fields := strings.Fields(lines.Text()); len(fields) == 4 && fields[0] == "#" && fields[1] == "TYPE" {
			out[fields[2]] = true
		}
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// drbdReactorExports are the metrics of drbd-reactor's prometheus plugin
// (LINBIT/drbd-reactor src/plugin/prometheus.rs at v1.4.1). The satellite's sidecar
// (pkg/images) is v1.12.0 now; releases up to v1.11.0 keep every one of these and add
// drbd_device_open and drbd_peerdevice_{sent,received}_bytes, so a panel on this list
// reads a metric every shipped sidecar since v1.4.1 exports.
var drbdReactorExports = []string{
	"drbdreactor_up", "drbd_version",
	"drbd_resource_resources", "drbd_resource_role", "drbd_resource_suspended", "drbd_resource_maypromote",
	"drbd_resource_promotionscore", "drbd_resource_forceiofailures",
	"drbd_connection_state", "drbd_connection_congested", "drbd_connection_apinflight_bytes", "drbd_connection_rsinflight_bytes",
	"drbd_peerdevice_outofsync_bytes",
	"drbd_device_state", "drbd_device_client", "drbd_device_unintentionaldiskless", "drbd_device_quorum", "drbd_device_size_bytes",
	"drbd_device_read_bytes_total", "drbd_device_written_bytes_total", "drbd_device_alwrites_total", "drbd_device_bmwrites_total",
	"drbd_device_upperpending", "drbd_device_lowerpending", "drbd_device_alsuspended",
}

// prometheusOwn are the series Prometheus writes itself for every target.
var prometheusOwn = []string{"up", "scrape_duration_seconds", "scrape_samples_scraped"}

// Every panel query is valid PromQL after the variables are replaced, and reads only
// metrics someone exports: the operator (its registry), the LINSTOR controller (the
// emulator's /metrics) or drbd-reactor (its source).
func TestDashboardQueriesReadExportedMetrics(t *testing.T) {
	bin, err := promserver.Binary()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	srv, err := promserver.Start(ctx, promserver.Config{Binary: bin, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()

	linstor := linstorExports(t)
	sources := map[string][]string{}
	for _, p := range loadDashboard(t).Panels {
		for _, target := range p.Targets {
			names, err := metricNames(ctx, srv, substitute(target.Expr, "linstor", "linstor", "5m"))
			if err != nil {
				t.Errorf("panel %q: %s: %v", p.Title, target.Expr, err)
				continue
			}
			for _, name := range names {
				var from string
				switch {
				case operatorRegisters(name):
					from = "operator"
				case linstor[name]:
					from = "LINSTOR"
				case slices.Contains(drbdReactorExports, name):
					from = "drbd-reactor"
				case slices.Contains(prometheusOwn, name):
					from = "Prometheus"
				default:
					t.Errorf("panel %q reads %s, which neither the operator, LINSTOR, drbd-reactor nor Prometheus exports", p.Title, name)
					continue
				}
				if !slices.Contains(sources[from], name) {
					sources[from] = append(sources[from], name)
				}
			}
		}
	}
	for from, names := range sources {
		sort.Strings(names)
		t.Logf("%s: %s", from, strings.Join(names, ", "))
	}
	for _, from := range []string{"operator", "LINSTOR", "drbd-reactor"} {
		if len(sources[from]) == 0 {
			t.Errorf("no panel reads a metric of %s", from)
		}
	}
}

// The metric check is no rubber stamp: a name nobody exports is caught, and names
// every source exports pass.
func TestDashboardMetricCheckCatchesUnknownNames(t *testing.T) {
	for _, name := range []string{"linstor_operator_satellites", "controller_runtime_reconcile_errors_total", "workqueue_depth",
		"linstor_operator_linstor_request_duration_seconds_bucket", "linstor_operator_backup_schedule_last_run_timestamp_seconds"} {
		if !operatorRegisters(name) {
			t.Errorf("%s: the operator registers it, but the probe says no", name)
		}
	}
	for _, name := range []string{"linstor_operator_satellite", "linstor_node_state", "drbd_device_state"} {
		if operatorRegisters(name) {
			t.Errorf("%s: the operator does not register it, but the probe says yes", name)
		}
	}
	linstor := linstorExports(t)
	for _, name := range []string{"linstor_node_state", "linstor_storage_pool_error_count", "linstor_info"} {
		if !linstor[name] {
			t.Errorf("%s is missing from the emulator's /metrics", name)
		}
	}
	if linstor["linstor_node_states"] {
		t.Error("the emulator's /metrics has linstor_node_states")
	}
}

// mainPanels are the dashboard's panels the picture shows, at least one per row; each
// must have data from the run.
var mainPanels = []string{
	"Satellites by state", "Satellite connection state (LINSTOR)", "Certificates: days until expiry",
	"Storage pool usage per node", "Free capacity per pool and node", "Resources by replica state",
	"Volumes not UpToDate (LINSTOR)", "Clusters never backed up", "Time in the current upgrade phase",
	"LINSTOR API requests by code", "Webhook requests not 2xx", "Reconcile errors",
}

// dashboardImage is where the picture goes when UPDATE_DASHBOARD_IMAGE is set.
const dashboardImage = "docs/img/dashboard.svg"

// legend fills a Grafana legend format ({{label}}) from a series' labels.
func legend(format string, metric model.Metric) string {
	if format == "" {
		return metric.String()
	}
	out := format
	for name, value := range metric {
		out = strings.ReplaceAll(out, "{{"+string(name)+"}}", string(value))
	}
	return out
}

// drawDashboard queries every main panel over the run through Prometheus's
// query_range, as Grafana would with the run's namespace and cluster selected, fails
// on a panel without data, and draws the panels. With UPDATE_DASHBOARD_IMAGE set it
// writes the picture to docs/img.
func drawDashboard(t *testing.T, ctx context.Context, srv *promserver.Server, namespace, cluster string, start, end time.Time, events []chartEvent) {
	t.Helper()
	panels := map[string]dashboardPanel{}
	for _, p := range loadDashboard(t).Panels {
		panels[p.Title] = p
	}
	step := max(end.Sub(start)/240, time.Second).Round(time.Second)
	var charts []chart
	for _, title := range mainPanels {
		p, ok := panels[title]
		if !ok {
			t.Errorf("main panel %q is not on the dashboard", title)
			continue
		}
		c := chart{title: title, unit: p.FieldConfig.Defaults.Unit}
		for _, target := range p.Targets {
			// Grafana's $__rate_interval for a 1 s scrape at this step, rounded up.
			expr := substitute(target.Expr, namespace, cluster, "15s")
			value, _, err := srv.API.QueryRange(ctx, expr, promv1.Range{Start: start, End: end, Step: step})
			if err != nil {
				t.Errorf("panel %q: %s: %v", title, expr, err)
				continue
			}
			matrix, _ := value.(model.Matrix)
			for _, s := range matrix {
				cs := chartSeries{label: legend(target.LegendFormat, s.Metric)}
				for _, v := range s.Values {
					cs.points = append(cs.points, chartPoint{at: v.Timestamp.Time(), value: float64(v.Value)})
				}
				c.series = append(c.series, cs)
			}
		}
		sort.SliceStable(c.series, func(i, j int) bool { return c.series[i].label < c.series[j].label })
		if len(c.series) == 0 {
			t.Errorf("main panel %q has no data over the run", title)
		}
		charts = append(charts, c)
	}
	heading := fmt.Sprintf("LINSTOR dashboard: main panels over test/monitoring's run (%s); dashed: %s",
		end.Sub(start).Round(time.Second), eventNames(events))
	svg := renderDashboard(heading, charts, events, start, end, step, 3)
	if len(svg) > 2<<20 {
		t.Errorf("the picture is %d bytes, more than 2 MiB", len(svg))
	}
	t.Logf("dashboard picture: %d panels, %d bytes", len(charts), len(svg))
	if os.Getenv("UPDATE_DASHBOARD_IMAGE") == "" {
		return
	}
	path := filepath.Join(envtest.RepoRoot(), dashboardImage)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, svg, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}

func eventNames(events []chartEvent) string {
	var names []string
	for _, e := range events {
		names = append(names, e.label)
	}
	return strings.Join(names, ", ")
}
