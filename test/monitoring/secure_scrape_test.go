package monitoring

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/common/model"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/bundle"
	"github.com/linstor-operator/linstor-operator/internal/promserver"
	"github.com/linstor-operator/linstor-operator/pkg/metricsproxy"
	"github.com/linstor-operator/linstor-operator/pkg/render"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// A real Prometheus, configured as the Prometheus Operator would from the operator's
// own ServiceMonitor, scrapes controller-runtime's secure metrics endpoint (set up as
// main.go sets it up) on the envtest API server: with the token of the scraper account
// and the RBAC config/rbac ships for it, the scrape succeeds and the operator's series
// arrive; with the token of an account without that grant, the endpoint refuses it.
func TestPrometheusScrapesTheSecureEndpointWithTheScraperToken(t *testing.T) {
	bin, err := promserver.Binary()
	if err != nil {
		t.Fatal(err)
	}
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.Namespace(t) // creates config/rbac's ServiceAccounts, the scraper's among them
	scraper := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: render.MetricsScraperAccount, Namespace: ns}
	installScraperRBAC(t, ctx, ns, scraper)
	ungranted := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "without-metrics-grant", Namespace: ns}}
	g.Expect(env.Client.Create(ctx, ungranted)).To(Succeed())

	// The endpoint caches a denial for 30 s: it is first asked once the API server's
	// authorizer has seen the binding. If it never does, the checks below say so.
	waitForMetricsGrant(ctx, scraper, 5*time.Second)

	// The token the API server would mint into the ServiceMonitor's Secret: one of the
	// account the Secret names.
	cluster := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor", Namespace: ns}}
	tokenSecret := render.MetricsScraper(cluster)[0].(*corev1.Secret)
	g.Expect(tokenSecret.Annotations).To(HaveKeyWithValue(corev1.ServiceAccountNameKey, render.MetricsScraperAccount))
	scraperToken := requestToken(g, ctx, ns, render.MetricsScraperAccount)
	ungrantedToken := requestToken(g, ctx, ns, ungranted.Name)

	addr := startSecureMetrics(t, ctx, env.Config)

	// Each token directly first, so that a failure below tells which side refused:
	// the operator's page and LINSTOR's, which the operator serves beside it.
	for _, path := range []string{"/metrics", metricsproxy.Path} {
		g.Expect(getMetrics(addr, path, "")).To(Equal(http.StatusUnauthorized), "GET %s without a token", path)
		g.Expect(getMetrics(addr, path, scraperToken)).To(Equal(http.StatusOK),
			"GET %s with the token of %s, bound by config/rbac (403: the shipped RBAC does not satisfy the endpoint's SubjectAccessReview)", path, render.MetricsScraperAccount)
		g.Expect(getMetrics(addr, path, ungrantedToken)).To(Equal(http.StatusForbidden), "GET %s with the token of %s, which has no grant", path, ungranted.Name)
	}

	// Prometheus with each of the ServiceMonitor's endpoints twice: the token of its
	// Secret, and one without the grant.
	endpoints := operatorMonitorEndpoints(t, cluster)
	dir := t.TempDir()
	scraperFile, ungrantedFile := writeToken(t, dir, "scraper-token", scraperToken), writeToken(t, dir, "ungranted-token", ungrantedToken)
	const grantedJob, ungrantedJob = "operator-scraper-token", "operator-ungranted-token"
	// LINSTOR's endpoint names its own job (render.LinstorControllerJob); a static label
	// tells the two tokens' targets apart.
	linstorJob := func(name, token, file string) promserver.Job {
		j := scrapeJobFor(t, name, endpoints[1], addr, file)
		j.Labels = map[string]string{"token": token}
		return j
	}
	srv, err := promserver.Start(ctx, promserver.Config{Binary: bin, Dir: dir, Jobs: []promserver.Job{
		scrapeJobFor(t, grantedJob, endpoints[0], addr, scraperFile),
		scrapeJobFor(t, ungrantedJob, endpoints[0], addr, ungrantedFile),
		linstorJob("linstor-scraper-token", "scraper", scraperFile),
		linstorJob("linstor-ungranted-token", "ungranted", ungrantedFile),
	}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("prometheus log:\n%s", srv.LogTail(50))
		}
		_ = srv.Stop()
	})
	prom := srv.API

	query := func(g Gomega, expr string) model.Vector {
		v, _, err := prom.Query(ctx, expr, time.Now())
		g.Expect(err).NotTo(HaveOccurred(), expr)
		vec, ok := v.(model.Vector)
		g.Expect(ok).To(BeTrue(), "%s: %s, not a vector", expr, v.Type())
		return vec
	}
	g.Eventually(func(g Gomega) {
		targets, err := prom.Targets(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		health := map[string]string{}
		for _, tg := range targets.Active {
			health[string(tg.Labels["job"])] = fmt.Sprintf("%s %q", tg.Health, tg.LastError)
		}
		g.Expect(query(g, fmt.Sprintf(`up{job=%q} == 1`, grantedJob))).To(HaveLen(1), "targets: %v", health)
		g.Expect(query(g, fmt.Sprintf(`up{job=%q} == 0`, ungrantedJob))).To(HaveLen(1), "targets: %v", health)
		g.Expect(health[ungrantedJob]).To(ContainSubstring("403"))
		// The operator's own series, e.g. the reconcile counter of its LinstorCluster
		// controller, come through the granted job only.
		g.Expect(query(g, fmt.Sprintf(`controller_runtime_reconcile_total{job=%q, controller="linstorcluster"}`, grantedJob))).NotTo(BeEmpty())
		g.Expect(query(g, fmt.Sprintf(`{job=%q, __name__=~"controller_runtime_.+|linstor_operator_.+"}`, ungrantedJob))).To(BeEmpty())
		// LINSTOR's page, as the LINSTOR emulator serves it (v1.33.3's PrometheusBuilder),
		// through the operator: its own series only, and only with the grant.
		linstor := render.LinstorControllerJob
		g.Expect(query(g, fmt.Sprintf(`up{job=%q, token="scraper"} == 1`, linstor))).To(HaveLen(1), "targets: %v", health)
		g.Expect(query(g, fmt.Sprintf(`up{job=%q, token="ungranted"} == 0`, linstor))).To(HaveLen(1), "targets: %v", health)
		// Its samples carry no replica's instance (a new leader continues the series).
		g.Expect(query(g, fmt.Sprintf(`linstor_info{job=%q, token="scraper", instance=""}`, linstor))).NotTo(BeEmpty())
		g.Expect(query(g, fmt.Sprintf(`{job=%q, __name__=~"controller_runtime_.+|linstor_operator_.+"}`, linstor))).To(BeEmpty())
		g.Expect(query(g, fmt.Sprintf(`linstor_info{job!=%q}`, linstor))).To(BeEmpty(), "LINSTOR's series under the operator's job")
	}, 20*time.Second, 250*time.Millisecond).Should(Succeed())
}

// installScraperRBAC creates config/rbac's ClusterRoleBindings that name the scraper
// account, and the ClusterRoles they bind, as a deployment gets them (only a
// ClusterRole bound cluster-wide can grant a non-resource URL such as /metrics).
func installScraperRBAC(t *testing.T, ctx context.Context, ns string, scraper rbacv1.Subject) {
	t.Helper()
	rbac, err := bundle.ReadRBAC(envtest.RepoRoot(), ns)
	if err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for _, b := range rbac.ClusterRoleBindings {
		if !slices.Contains(b.Subjects, scraper) {
			continue
		}
		i := slices.IndexFunc(rbac.ClusterRoles, func(r *rbacv1.ClusterRole) bool { return r.Name == b.RoleRef.Name })
		if b.RoleRef.Kind != "ClusterRole" || i < 0 {
			t.Fatalf("ClusterRoleBinding %s binds %s %s, which config/rbac does not define", b.Name, b.RoleRef.Kind, b.RoleRef.Name)
		}
		objs = append(objs, rbac.ClusterRoles[i], b)
	}
	if len(objs) == 0 {
		t.Fatalf("config/rbac binds nothing to %s", scraper.Name)
	}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
}

// waitForMetricsGrant waits, at most within, until a SubjectAccessReview lets subject
// GET /metrics.
func waitForMetricsGrant(ctx context.Context, subject rbacv1.Subject, within time.Duration) {
	user := "system:serviceaccount:" + subject.Namespace + ":" + subject.Name
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
			Groups:                []string{"system:serviceaccounts", "system:serviceaccounts:" + subject.Namespace, "system:authenticated"},
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}}
		if env.Client.Create(ctx, sar) == nil && sar.Status.Allowed {
			return
		}
	}
}

// requestToken has the API server sign a token of the account (TokenRequest; envtest
// runs no token Secret controller).
func requestToken(g Gomega, ctx context.Context, ns, account string) string {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: account, Namespace: ns}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(600))}}
	g.Expect(env.Client.SubResource("token").Create(ctx, sa, tr)).To(Succeed(), "TokenRequest for %s", account)
	g.Expect(tr.Status.Token).NotTo(BeEmpty())
	return tr.Status.Token
}

func ptrTo[T any](v T) *T { return &v }

// startSecureMetrics serves the operator's registry (controller-runtime's
// metrics.Registry, which the server always serves) on loopback, configured as main.go
// configures its metrics server with --metrics-secure (the default) and without
// --enable-http2. Keep in step with main.go: its options are built in package main.
func startSecureMetrics(t *testing.T, ctx context.Context, cfg *rest.Config) string {
	t.Helper()
	tlsOpts := []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	opts := metricsserver.Options{BindAddress: "127.0.0.1:0", SecureServing: true, TLSOpts: tlsOpts,
		FilterProvider: filters.WithAuthenticationAndAuthorization,
		// As internal/manager adds it: LINSTOR's page, here the emulator's.
		ExtraHandlers: map[string]http.Handler{metricsproxy.Path: metricsproxy.Handler(func(context.Context) (string, *http.Client, error) {
			return linstorURL, http.DefaultClient, nil
		}, func() bool { return true })}}
	// The manager's own HTTP client for its config, as ctrl.NewManager builds it.
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := metricsserver.NewServer(opts, cfg, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("metrics server: %v", err)
		}
	})
	// The server picks the port; it tells which once it listens.
	bound := srv.(interface{ GetBindAddr() string })
	for deadline := time.Now().Add(10 * time.Second); bound.GetBindAddr() == ""; time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("metrics server exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("metrics server does not listen after 10s")
		}
	}
	return bound.GetBindAddr()
}

// getMetrics is the status of GET https://addr<path> with the bearer token (none if
// empty), not verifying the self-signed certificate, as the ServiceMonitor does not.
func getMetrics(addr, path, token string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+path, nil)
	if err != nil {
		return 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// operatorMonitorEndpoints are the endpoints of the operator's ServiceMonitor as the
// operator renders it for cluster: its own page, then LINSTOR's.
func operatorMonitorEndpoints(t *testing.T, cluster *linstorv1.LinstorCluster) []map[string]any {
	t.Helper()
	objs, err := render.PrometheusOperatorObjects(cluster)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if u, ok := o.(*unstructured.Unstructured); ok && u.GetName() == render.OperatorMonitorName {
			eps, _, _ := unstructured.NestedSlice(u.Object, "spec", "endpoints")
			if len(eps) != 2 || eps[0].(map[string]any)["path"] != "/metrics" || eps[1].(map[string]any)["path"] != metricsproxy.Path {
				t.Fatalf("ServiceMonitor %s: endpoints %v, want /metrics and %s", u.GetName(), eps, metricsproxy.Path)
			}
			return []map[string]any{eps[0].(map[string]any), eps[1].(map[string]any)}
		}
	}
	t.Fatalf("no ServiceMonitor %s rendered", render.OperatorMonitorName)
	return nil
}

// scrapeJobFor translates a ServiceMonitor endpoint into a Prometheus scrape job the way
// the Prometheus Operator does, with the Service's port replaced by target and the
// credentials Secret's key by tokenFile. A field it does not know fails the test, so
// that the ServiceMonitor cannot gain one this test ignores.
func scrapeJobFor(t *testing.T, name string, ep map[string]any, target, tokenFile string) promserver.Job {
	t.Helper()
	job := promserver.Job{Name: name, Targets: []string{target}, Settings: map[string]any{}}
	for field, v := range ep {
		switch field {
		case "port": // the target stands for the Service's port
		case "scheme":
			job.Settings["scheme"] = v
		case "path":
			job.MetricsPath = v.(string)
		case "honorLabels":
			job.Settings["honor_labels"] = v
		case "authorization":
			auth := v.(map[string]any)
			cred, _, _ := unstructured.NestedStringMap(auth, "credentials")
			if cred["name"] != render.MetricsScraperTokenName || cred["key"] != corev1.ServiceAccountTokenKey || len(auth) != 2 {
				t.Fatalf("authorization %v: want the token of Secret %s", auth, render.MetricsScraperTokenName)
			}
			job.Settings["authorization"] = map[string]any{"type": auth["type"], "credentials_file": tokenFile}
		case "tlsConfig":
			tc := v.(map[string]any)
			if len(tc) != 1 || tc["insecureSkipVerify"] == nil {
				t.Fatalf("tlsConfig %v: only insecureSkipVerify is translated here", tc)
			}
			job.Settings["tls_config"] = map[string]any{"insecure_skip_verify": tc["insecureSkipVerify"]}
		case "relabelings", "metricRelabelings":
			// The Prometheus Operator's RelabelConfig fields, in Prometheus's spelling.
			var configs []any
			for _, rc := range v.([]any) {
				out := map[string]any{}
				for k, val := range rc.(map[string]any) {
					key, ok := map[string]string{"action": "action", "targetLabel": "target_label", "replacement": "replacement", "regex": "regex", "sourceLabels": "source_labels"}[k]
					if !ok {
						t.Fatalf("%s field %s: not translated; extend scrapeJobFor", field, k)
					}
					out[key] = val
				}
				configs = append(configs, out)
			}
			job.Settings[map[string]string{"relabelings": "relabel_configs", "metricRelabelings": "metric_relabel_configs"}[field]] = configs
		default:
			t.Fatalf("ServiceMonitor endpoint field %s=%v: not translated into the scrape job; extend scrapeJobFor", field, v)
		}
	}
	return job
}

func writeToken(t *testing.T, dir, name, token string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
