package olm

import (
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/bundle"
	"github.com/linstor-operator/linstor-operator/internal/kwokcluster"
	"github.com/linstor-operator/linstor-operator/internal/runbundle"
	"github.com/linstor-operator/linstor-operator/internal/sim"
	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
)

const (
	timeout = 3 * time.Minute
	tick    = 250 * time.Millisecond
	// metricsReader is the bundle's ClusterRole for scraping the operator's metrics.
	metricsReader = "linstor-operator-metrics-reader"
)

// installed is what the tests leave for the ones after them: the release that runs.
var installed struct {
	csv        string
	deployment *appsv1.Deployment
	op         *operatorPod
}

// requireInstalled stops a test whose predecessors did not leave an installed operator.
func requireInstalled(t *testing.T) {
	t.Helper()
	if installed.op == nil {
		t.Fatal("the tests before this one did not install the operator")
	}
}

// The release of the oldest LINSTOR line in the catalog (0.1.0, LINSTOR 1.31.3),
// subscribed to in that line's channel of the project's catalog with Manual approval
// through make run-bundle's code (which approves its InstallPlan and waits for the CSV),
// the operator binary built from that release's commit running as the pod OLM created,
// the LinstorCluster created from that release's samples: Available. Then data in every
// table LINSTOR's migrations 28-30 read or write, as that LINSTOR writes it.
func installThroughOLM(t *testing.T) {
	g := newG(t)
	c := world.client
	previous, err := oldestRelease()
	g.Expect(err).NotTo(HaveOccurred())

	// Nodes for the operator's pods (and later LINSTOR's).
	g.Expect(kwokcluster.AddNodes(ctx, c, "node", 0, 3)).To(Succeed())
	opts := runBundleOptions(logWriter{t})
	opts.BundleDir = previous.Dir
	opts.Channel = bundle.LineChannel(upgrade.MustParse(previous.CSV.Annotations[bundle.LinstorVersionAnnotation]))
	start := time.Now()
	rec := startRecorder(t, start, "the subscription")
	res, err := runbundle.Install(ctx, opts)
	rec.stop()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.CSV).To(Equal(previous.CSV.Name))
	g.Expect(res.ApprovedInstallPlan).NotTo(BeEmpty(), "Manual approval: run-bundle approved the InstallPlan")
	// No target namespaces: the global OperatorGroup, the only install mode the CSV
	// supports (conversion webhooks serve every namespace).
	og := &operatorsv1.OperatorGroup{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: res.OperatorGroup}, og)).To(Succeed())
	g.Expect(og.Spec.TargetNamespaces).To(BeEmpty())
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: res.CSV}, csv)).To(Succeed())

	op, dep := startRelease(t, csv)
	installed.csv, installed.deployment, installed.op = csv.Name, dep, op
	var ips []string
	for _, p := range op.pods {
		ips = append(ips, p.Name+"="+p.Status.PodIP)
	}
	t.Logf("%6.1fs after subscribing: the operator binary of %s (commit %s) runs as pods %v, ServiceAccount %s, serving certificate from Secret %s",
		time.Since(start).Seconds(), csv.Name, previous.SourceCommit, ips, op.account, op.certSecret)
	// The pod's environment as OLM wrote it: the OperatorCondition OLM made for this CSV,
	// the operand images, the namespace from the downward API.
	g.Expect(op.env).To(HaveKeyWithValue("OPERATOR_CONDITION_NAME", csv.Name))
	g.Expect(op.env).To(HaveKeyWithValue("OPERATOR_NAMESPACE", namespace))
	g.Expect(op.env).To(HaveKey("RELATED_IMAGE_LINSTOR_CONTROLLER"))
	g.Expect(op.account).To(Equal(csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.ServiceAccountName), "the CSV's account, with the CSV's RBAC")
	// The process's identity has the CSV's permissions, not an admin's.
	podCfg, err := clientcmd.BuildConfigFromFlags("", op.kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	podClient, err := client.New(podCfg, client.Options{Scheme: c.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podClient.List(ctx, &corev1.SecretList{}, client.InNamespace("kube-system"))).To(Satisfy(apierrors.IsForbidden))
	g.Expect(podClient.List(ctx, &linstorv1.LinstorClusterList{})).To(Succeed())

	// The cluster as that release's users made it: its own samples.
	g.Expect(sim.ApplySamples(ctx, c, sourceOf(world.work, previous.SourceCommit), namespace)).To(Succeed())
	linstorVersion := csv.Annotations[bundle.LinstorVersionAnnotation]
	g.Expect(linstorVersion).NotTo(BeEmpty())
	waitAvailable(g, linstorVersion)
	served, _ := linstorState()
	t.Logf("%6.1fs after subscribing: LinstorCluster linstor Available on LINSTOR %s (served over HTTPS with client certificates at the controller pod's address %s)",
		time.Since(start).Seconds(), linstorVersion, served)
	// The operator keeps Upgradeable in the OperatorCondition OLM created (operator-lib);
	// it writes it on LinstorCluster events, so once there is a cluster.
	g.Eventually(func(g Gomega) {
		up := operatorUpgradeable(g, csv.Name)
		g.Expect(up.Status).To(Equal(metav1.ConditionTrue), "nothing upgrades or backs up: %+v", up)
	}, timeout, tick).Should(Succeed())
	seedOldLineData(g)
}

// oldestRelease is the oldest frozen release: the one on the oldest LINSTOR line.
func oldestRelease() (*runbundle.Bundle, error) {
	dirs, err := filepath.Glob(filepath.Join(world.root, "bundles", "*"))
	if err != nil {
		return nil, err
	}
	var oldest *runbundle.Bundle
	for _, dir := range dirs {
		b, err := runbundle.ReadBundle(dir)
		if err != nil {
			return nil, err
		}
		if oldest == nil || b.CSV.Spec.Version.LT(oldest.CSV.Spec.Version.Version) {
			oldest = b
		}
	}
	if oldest == nil {
		return nil, fmt.Errorf("no release in %s", filepath.Join(world.root, "bundles"))
	}
	return oldest, nil
}

// startRelease waits for the pods of the Deployment OLM made for csv to run csv's image,
// stops the operator process of the release they replace (its pods are gone), and runs
// csv's binary as them.
func startRelease(t *testing.T, csv *operatorsv1alpha1.ClusterServiceVersion) (*operatorPod, *appsv1.Deployment) {
	t.Helper()
	g := newG(t)
	specs := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	g.Expect(specs).To(HaveLen(1))
	image := csv.Annotations["containerImage"]
	dep := &appsv1.Deployment{}
	g.Eventually(func(g Gomega) {
		g.Expect(world.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: specs[0].Name}, dep)).To(Succeed())
		pods, err := runningPodsOf(ctx, dep)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pods).To(HaveLen(int(*dep.Spec.Replicas)))
		for _, p := range pods {
			ctr, err := managerContainer(&p)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ctr.Image).To(Equal(image), "pod %s", p.Name)
		}
	}, timeout, tick).Should(Succeed())
	if installed.op != nil {
		g.Expect(installed.op.proc.stop()).To(Succeed())
	}
	op, err := startOperatorAsPod(dep)
	g.Expect(err).NotTo(HaveOccurred())
	return op, dep
}

// waitAvailable waits for the LinstorCluster to be Available on LINSTOR version with
// every satellite ready.
func waitAvailable(g Gomega, version string) *linstorv1.LinstorCluster {
	cl := &linstorv1.LinstorCluster{}
	g.Eventually(func(g Gomega) {
		if ended, err := installed.op.proc.exited(); ended {
			g.Expect(err).NotTo(HaveOccurred(), "the operator exited")
		}
		_, serveErr := linstorState()
		g.Expect(serveErr).NotTo(HaveOccurred(), "serving LINSTOR at the controller pod")
		g.Expect(world.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "linstor"}, cl)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(cl.Status.Conditions, linstorv1.ConditionAvailable)).To(BeTrue(), "%+v", cl.Status.Conditions)
		g.Expect(cl.Status.Version).To(Equal(version))
		g.Expect(cl.Status.Satellites).To(Equal(linstorv1.SatelliteCounts{Ready: 3, Total: 3}))
	}, timeout, tick).Should(Succeed())
	return cl
}

// operatorUpgradeable is the Upgradeable condition OLM acts on: the OperatorCondition's
// status, as OLM copied it from the spec the operator wrote, for the current generation.
func operatorUpgradeable(g Gomega, csv string) metav1.Condition {
	oc := &operatorsv2.OperatorCondition{}
	g.Expect(world.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: csv}, oc)).To(Succeed())
	up := meta.FindStatusCondition(oc.Status.Conditions, operatorsv2.Upgradeable)
	g.Expect(up).NotTo(BeNil(), "OperatorCondition %s: %+v", csv, oc.Spec)
	g.Expect(up.ObservedGeneration).To(Equal(oc.Generation), "OLM has not copied the spec yet")
	return *up
}

// logWriter shows what make run-bundle prints in the test's log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// The API server calls the operator's conversion and validating webhooks through the
// Service OLM created for the Deployment, at its pods' addresses.
func webhooksReachedThroughOLMService(t *testing.T) {
	g := newG(t)
	c := world.client
	requireInstalled(t)
	service := installed.deployment.Name + "-service"
	for _, name := range []string{"linstorclusters.linstor.io", "linstorsatelliteconfigurations.linstor.io", "linstorsatellites.linstor.io"} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
		conv := crd.Spec.Conversion
		g.Expect(conv.Strategy).To(Equal(apiextensionsv1.WebhookConverter), name)
		cc := conv.Webhook.ClientConfig
		g.Expect(cc.URL).To(BeNil(), name)
		g.Expect(cc.Service).NotTo(BeNil(), name)
		g.Expect(cc.Service.Namespace).To(Equal(namespace), name)
		g.Expect(cc.Service.Name).To(Equal(service), "%s: OLM points conversion at its own Service", name)
		g.Expect(cc.CABundle).NotTo(BeEmpty(), name)
		t.Logf("CRD %s: conversion webhook service %s/%s path %s port %d (written by OLM)", name, cc.Service.Namespace, cc.Service.Name,
			ptrString(cc.Service.Path), ptrInt32(cc.Service.Port))
	}
	// The Service's endpoints are the pods' addresses, where the operator process listens.
	var slices discoveryv1.EndpointSliceList
	g.Expect(c.List(ctx, &slices, client.InNamespace(namespace), client.MatchingLabels{discoveryv1.LabelServiceName: service})).To(Succeed())
	var endpoints []string
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			for _, p := range s.Ports {
				endpoints = append(endpoints, net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*p.Port))))
			}
		}
	}
	var podAddrs []string
	for _, p := range installed.op.pods {
		podAddrs = append(podAddrs, net.JoinHostPort(p.Status.PodIP, "9443"))
	}
	g.Expect(endpoints).To(ConsistOf(podAddrs))
	t.Logf("Service %s/%s endpoints: %v", namespace, service, endpoints)

	// The webhook server at each pod's address presents the certificate OLM generated.
	var certSecret corev1.Secret
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: installed.op.certSecret}, &certSecret)).To(Succeed())
	block, _ := pem.Decode(certSecret.Data[corev1.TLSCertKey])
	g.Expect(block).NotTo(BeNil())
	for _, addr := range podAddrs {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // compared below
		g.Expect(err).NotTo(HaveOccurred())
		served := conn.ConnectionState().PeerCertificates[0].Raw
		_ = conn.Close()
		g.Expect(served).To(Equal(block.Bytes), "%s serves OLM's certificate from Secret %s", addr, certSecret.Name)
	}

	scrape := metricsScraper(g)
	const convertPath, validatePath = "/convert", "/validate-linstor-io-v1-linstorcluster"
	before := scrape()

	// A v1alpha1 read of the v1-stored cluster is a conversion.
	old := &unstructured.Unstructured{}
	old.SetAPIVersion("linstor.io/v1alpha1")
	old.SetKind("LinstorCluster")
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "linstor"}, old)).To(Succeed())
	g.Expect(old.GetAPIVersion()).To(Equal("linstor.io/v1alpha1"))

	// Only the operator's validating webhook knows a second cluster is refused.
	second := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "second"}}
	err := c.Create(ctx, second)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring(`admission webhook "vlinstorcluster.linstor.io" denied the request`))
	g.Expect(err.Error()).To(ContainSubstring("only one LinstorCluster may exist per Kubernetes cluster"))
	t.Logf("a second LinstorCluster refused: %v", err)
	var vwcs admissionregistrationv1.ValidatingWebhookConfigurationList
	g.Expect(c.List(ctx, &vwcs)).To(Succeed())
	var validating []string
	for _, cfg := range vwcs.Items {
		for _, wh := range cfg.Webhooks {
			if wh.Name == "vlinstorcluster.linstor.io" {
				g.Expect(wh.ClientConfig.URL).To(BeNil())
				g.Expect(wh.ClientConfig.Service).NotTo(BeNil())
				validating = append(validating, wh.ClientConfig.Service.Namespace+"/"+wh.ClientConfig.Service.Name)
			}
		}
	}
	g.Expect(validating).To(ConsistOf(namespace+"/"+service), "OLM's ValidatingWebhookConfiguration calls its Service")

	after := scrape()
	t.Logf("operator webhook requests (controller_runtime_webhook_requests_total): %s %v -> %v, %s %v -> %v",
		convertPath, before[convertPath], after[convertPath], validatePath, before[validatePath], after[validatePath])
	g.Expect(after[convertPath]).To(BeNumerically(">", before[convertPath]), "the conversion reached the operator process")
	g.Expect(after[validatePath]).To(BeNumerically(">", before[validatePath]), "the validation reached the operator process")
}

// metricsScraper reads controller_runtime_webhook_requests_total per webhook path from
// the operator's secure metrics endpoint at its pod's address, as a scraper bound to
// the bundle's metrics-reader ClusterRole (the operator checks the token and access).
func metricsScraper(g Gomega) func() map[string]float64 {
	c := world.client
	const account = "olm-e2e-scraper"
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: account}}
	g.Expect(client.IgnoreAlreadyExists(c.Create(ctx, sa))).To(Succeed())
	g.Expect(client.IgnoreAlreadyExists(c.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: account},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: metricsReader},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: account}}}))).To(Succeed())
	token, err := accountToken(namespace, account)
	g.Expect(err).NotTo(HaveOccurred())
	port := "8443"
	for _, a := range installed.op.args {
		if v, ok := strings.CutPrefix(a, "--metrics-bind-address="); ok {
			_, port, _ = net.SplitHostPort(v)
		}
	}
	url := "https://" + net.JoinHostPort(installed.op.pods[0].Status.PodIP, port) + "/metrics"
	// The operator's metrics certificate is self-signed; the token is what is checked.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // test scraper
	return func() map[string]float64 {
		out := map[string]float64{}
		g.Eventually(func(g Gomega) {
			req, err := http.NewRequest(http.MethodGet, url, nil)
			g.Expect(err).NotTo(HaveOccurred())
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := hc.Do(req)
			g.Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "%s", body)
			for line := range strings.SplitSeq(string(body), "\n") {
				rest, ok := strings.CutPrefix(line, "controller_runtime_webhook_requests_total{")
				if !ok {
					continue
				}
				labels, value, _ := strings.Cut(rest, "} ")
				v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
				g.Expect(err).NotTo(HaveOccurred(), line)
				for l := range strings.SplitSeq(labels, ",") {
					if path, ok := strings.CutPrefix(l, `webhook="`); ok {
						out[strings.TrimSuffix(path, `"`)] += v
					}
				}
			}
		}, 30*time.Second, tick).Should(Succeed())
		return out
	}
}

// recorder logs, while a test runs, every change of the CSVs, InstallPlans and
// OperatorConditions in the install namespace, with the time since start.
type recorder struct {
	t     *testing.T
	start time.Time
	since string // what start was
	quit  chan struct{}
	wg    sync.WaitGroup
	seen  map[string]string
}

func startRecorder(t *testing.T, start time.Time, since string) *recorder {
	r := &recorder{t: t, start: start, since: since, quit: make(chan struct{}), seen: map[string]string{}}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			r.look()
			select {
			case <-r.quit:
				r.look()
				return
			case <-time.After(tick):
			}
		}
	}()
	return r
}

func (r *recorder) stop() {
	close(r.quit)
	r.wg.Wait()
}

func (r *recorder) look() {
	c := world.client
	now := map[string]string{}
	var csvs operatorsv1alpha1.ClusterServiceVersionList
	if c.List(ctx, &csvs, client.InNamespace(namespace)) == nil {
		for _, csv := range csvs.Items {
			now["CSV "+csv.Name] = fmt.Sprintf("%s (%s: %s)", csv.Status.Phase, csv.Status.Reason, csv.Status.Message)
		}
	}
	var ips operatorsv1alpha1.InstallPlanList
	if c.List(ctx, &ips, client.InNamespace(namespace)) == nil {
		for _, ip := range ips.Items {
			now["InstallPlan "+ip.Name] = fmt.Sprintf("%s approved=%t approval=%s CSVs=%v", ip.Status.Phase, ip.Spec.Approved, ip.Spec.Approval, ip.Spec.ClusterServiceVersionNames)
		}
	}
	var ocs operatorsv2.OperatorConditionList
	if c.List(ctx, &ocs, client.InNamespace(namespace)) == nil {
		for _, oc := range ocs.Items {
			now["OperatorCondition "+oc.Name+" spec"] = conditionsString(oc.Spec.Conditions)
			now["OperatorCondition "+oc.Name+" status"] = conditionsString(oc.Status.Conditions)
		}
	}
	keys := make([]string, 0, len(now))
	for k := range now {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if r.seen[k] != now[k] {
			r.t.Logf("%6.1fs after %s: %s: %s", time.Since(r.start).Seconds(), r.since, k, now[k])
			r.seen[k] = now[k]
		}
	}
}

func conditionsString(conds []metav1.Condition) string {
	if len(conds) == 0 {
		return "none"
	}
	var out []string
	for _, c := range conds {
		out = append(out, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(out, "; ")
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func ptrInt32(i *int32) int32 {
	if i == nil {
		return 0
	}
	return *i
}

// Operands survive their operator: deleting the Subscription and the CSV (how an admin
// uninstalls an operator through OLM) removes the operator's Deployment, and nothing of
// LINSTOR: the LinstorCluster, the LINSTOR controller and satellites, the CRDs and the
// data they hold stay. It runs last: it uninstalls the operator.
func operandsSurviveTheirOperator(t *testing.T) {
	g := newG(t)
	requireInstalled(t)
	c := world.client
	cluster := &linstorv1.LinstorCluster{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "linstor"}, cluster)).To(Succeed())
	controller := &appsv1.Deployment{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "linstor-controller"}, controller)).To(Succeed())
	var satellites appsv1.DaemonSetList
	g.Expect(c.List(ctx, &satellites, client.InNamespace(namespace), client.MatchingLabels{"app.kubernetes.io/name": "linstor-satellite"})).To(Succeed())
	g.Expect(satellites.Items).NotTo(BeEmpty())
	before, err := linstorState()
	g.Expect(err).NotTo(HaveOccurred())

	// make cleanup-bundle: the Subscription, the CSV, the InstallPlans, the CatalogSource
	// and opm go; it never touches a CRD or a linstor.io object.
	start := time.Now()
	g.Expect(runbundle.Cleanup(ctx, runBundleOptions(logWriter{t}))).To(Succeed())
	var subs operatorsv1alpha1.SubscriptionList
	g.Expect(c.List(ctx, &subs, client.InNamespace(namespace))).To(Succeed())
	g.Expect(subs.Items).To(BeEmpty())
	g.Eventually(func(g Gomega) {
		var csvs operatorsv1alpha1.ClusterServiceVersionList
		g.Expect(c.List(ctx, &csvs, client.InNamespace(namespace))).To(Succeed())
		g.Expect(csvs.Items).To(BeEmpty())
	}, timeout, tick).Should(Succeed())
	g.Eventually(func(g Gomega) {
		err := c.Get(ctx, client.ObjectKeyFromObject(installed.deployment), &appsv1.Deployment{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the operator Deployment is still there: %v", err)
	}, timeout, tick).Should(Succeed())
	// Its pod is gone: so is the process that stood for it.
	g.Expect(installed.op.proc.stop()).To(Succeed())
	t.Logf("%.1fs after make cleanup-bundle's code began: the Subscription and CSV are gone, so are the operator Deployment and its process", time.Since(start).Seconds())

	g.Consistently(func(g Gomega) {
		got := &linstorv1.LinstorCluster{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(cluster), got)).To(Succeed())
		g.Expect(got.UID).To(Equal(cluster.UID))
		g.Expect(got.DeletionTimestamp).To(BeNil())
		d := &appsv1.Deployment{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(controller), d)).To(Succeed())
		g.Expect(d.UID).To(Equal(controller.UID))
		g.Expect(d.DeletionTimestamp).To(BeNil())
		var now appsv1.DaemonSetList
		g.Expect(c.List(ctx, &now, client.InNamespace(namespace), client.MatchingLabels{"app.kubernetes.io/name": "linstor-satellite"})).To(Succeed())
		g.Expect(now.Items).To(HaveLen(len(satellites.Items)))
		for _, crd := range []string{"linstorclusters", "linstorsatellites", "linstorsatelliteconfigurations", "linstornodeconnections", "linstorbackups"} {
			g.Expect(c.Get(ctx, client.ObjectKey{Name: crd + ".linstor.io"}, &apiextensionsv1.CustomResourceDefinition{})).To(Succeed())
		}
		state, err := linstorState()
		g.Expect(err).NotTo(HaveOccurred(), "LINSTOR stopped being served at the controller pod")
		g.Expect(state).To(Equal(before))
	}, "10s", time.Second).Should(Succeed())
	t.Logf("10 s later: the LinstorCluster, the LINSTOR controller Deployment, %d satellite DaemonSets and the 5 CRDs are unchanged", len(satellites.Items))
}
