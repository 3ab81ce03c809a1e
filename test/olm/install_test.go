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
	"github.com/linstor-operator/linstor-operator/internal/kwokcluster"
	"github.com/linstor-operator/linstor-operator/internal/runbundle"
	"github.com/linstor-operator/linstor-operator/internal/sim"
)

const (
	timeout = 3 * time.Minute
	tick    = 250 * time.Millisecond
	// metricsReader is the bundle's ClusterRole for scraping the operator's metrics.
	metricsReader = "linstor-operator-metrics-reader"
)

// installed is what TestInstallThroughOLM leaves for the tests after it.
var installed struct {
	csv        string
	deployment *appsv1.Deployment
	op         *operatorPod
}

// Subscribe with Manual approval, approve, CSV Succeeded, the operator binary running as
// the pod OLM created, the samples' LinstorCluster Available.
func TestInstallThroughOLM(t *testing.T) {
	g := NewWithT(t)
	c := world.client
	csvName, err := bundleCSVName()
	g.Expect(err).NotTo(HaveOccurred())

	// Nodes for the operator's pods (and later LINSTOR's).
	g.Expect(kwokcluster.AddNodes(ctx, c, "node", 0, 3)).To(Succeed())
	// No target namespaces: a global OperatorGroup, the only install mode the CSV
	// supports (conversion webhooks serve every namespace).
	g.Expect(c.Create(ctx, &operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "linstor-operator"}})).To(Succeed())
	sub := &operatorsv1alpha1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: subscriptionName},
		Spec: &operatorsv1alpha1.SubscriptionSpec{CatalogSource: catalogName, CatalogSourceNamespace: olmNamespace,
			Package: packageName, Channel: channel, InstallPlanApproval: operatorsv1alpha1.ApprovalManual, StartingCSV: csvName}}
	g.Expect(c.Create(ctx, sub)).To(Succeed())
	subscribed := time.Now()

	ip := &operatorsv1alpha1.InstallPlan{}
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(sub), sub)).To(Succeed())
		g.Expect(sub.Status.InstallPlanRef).NotTo(BeNil(), "subscription status: %+v", sub.Status)
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: sub.Status.InstallPlanRef.Name}, ip)).To(Succeed())
		g.Expect(ip.Status.Phase).To(Equal(operatorsv1alpha1.InstallPlanPhaseRequiresApproval))
	}, timeout, tick).Should(Succeed())
	t.Logf("%6.1fs after subscribing: InstallPlan %s %s, approved=%t, CSVs %v", time.Since(subscribed).Seconds(),
		ip.Name, ip.Status.Phase, ip.Spec.Approved, ip.Spec.ClusterServiceVersionNames)
	g.Expect(ip.Spec.ClusterServiceVersionNames).To(ConsistOf(csvName))
	// Manual approval: nothing is installed before the admin approves.
	var csvs operatorsv1alpha1.ClusterServiceVersionList
	g.Expect(c.List(ctx, &csvs, client.InNamespace(namespace))).To(Succeed())
	g.Expect(csvs.Items).To(BeEmpty(), "a CSV before the InstallPlan was approved")

	patch := client.MergeFrom(ip.DeepCopy())
	ip.Spec.Approved = true
	g.Expect(c.Patch(ctx, ip, patch)).To(Succeed())
	approved := time.Now()
	rec := startRecorder(t, approved)
	defer rec.stop()

	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: csvName}, csv)).To(Succeed())
		g.Expect(csv.Status.Phase).To(Equal(operatorsv1alpha1.CSVPhaseSucceeded), "%s: %s", csv.Status.Reason, csv.Status.Message)
	}, timeout, tick).Should(Succeed())
	t.Logf("%6.1fs after the approval: CSV %s Succeeded", time.Since(approved).Seconds(), csvName)

	// The Deployment OLM created from the CSV, its pods "running" in kwok.
	specs := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	g.Expect(specs).To(HaveLen(1))
	dep := &appsv1.Deployment{}
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: specs[0].Name}, dep)).To(Succeed())
		pods, err := runningPods(ctx, dep)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pods).To(HaveLen(int(*dep.Spec.Replicas)))
	}, timeout, tick).Should(Succeed())
	op, err := startOperatorAsPod(dep)
	g.Expect(err).NotTo(HaveOccurred())
	installed.csv, installed.deployment, installed.op = csvName, dep, op
	var ips []string
	for _, p := range op.pods {
		ips = append(ips, p.Name+"="+p.Status.PodIP)
	}
	t.Logf("%6.1fs after the approval: the operator binary runs as pods %v, ServiceAccount %s, serving certificate from Secret %s",
		time.Since(approved).Seconds(), ips, op.account, op.certSecret)
	// The pod's environment as OLM wrote it: the OperatorCondition OLM made for this CSV,
	// the operand images, the namespace from the downward API.
	g.Expect(op.env).To(HaveKeyWithValue("OPERATOR_CONDITION_NAME", csvName))
	g.Expect(op.env).To(HaveKeyWithValue("OPERATOR_NAMESPACE", namespace))
	g.Expect(op.env).To(HaveKey("RELATED_IMAGE_LINSTOR_CONTROLLER"))
	g.Expect(op.account).To(Equal(specs[0].Spec.Template.Spec.ServiceAccountName), "the CSV's account, with the CSV's RBAC")
	// The process's identity has the CSV's permissions, not an admin's.
	podCfg, err := clientcmd.BuildConfigFromFlags("", op.kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	podClient, err := client.New(podCfg, client.Options{Scheme: c.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(podClient.List(ctx, &corev1.SecretList{}, client.InNamespace("kube-system"))).To(Satisfy(apierrors.IsForbidden))
	g.Expect(podClient.List(ctx, &linstorv1.LinstorClusterList{})).To(Succeed())

	g.Expect(sim.ApplySamples(ctx, c, world.root, namespace)).To(Succeed())
	g.Eventually(func(g Gomega) {
		if ended, err := op.proc.exited(); ended {
			g.Expect(err).NotTo(HaveOccurred(), "the operator exited")
		}
		_, serveErr := linstorState()
		g.Expect(serveErr).NotTo(HaveOccurred(), "serving LINSTOR at the controller pod")
		cl := &linstorv1.LinstorCluster{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "linstor"}, cl)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(cl.Status.Conditions, linstorv1.ConditionAvailable)).To(BeTrue(), "%+v", cl.Status.Conditions)
		g.Expect(cl.Status.Satellites).To(Equal(linstorv1.SatelliteCounts{Ready: 3, Total: 3}))
	}, timeout, tick).Should(Succeed())
	served, _ := linstorState()
	t.Logf("%6.1fs after the approval: LinstorCluster linstor Available (LINSTOR served over HTTPS with client certificates at the controller pod's address %s)",
		time.Since(approved).Seconds(), served)
	// Our operator keeps Upgradeable in the OperatorCondition OLM created (operator-lib);
	// it writes it on LinstorCluster events, so once there is a cluster.
	g.Eventually(func(g Gomega) {
		oc := &operatorsv2.OperatorCondition{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: csvName}, oc)).To(Succeed())
		up := meta.FindStatusCondition(oc.Spec.Conditions, operatorsv2.Upgradeable)
		g.Expect(up).NotTo(BeNil(), "spec: %+v", oc.Spec)
		g.Expect(up.Status).To(Equal(metav1.ConditionTrue), "nothing upgrades or backs up: %+v", up)
	}, timeout, tick).Should(Succeed())
}

// The API server calls the operator's conversion and validating webhooks through the
// Service OLM created for the Deployment, at its pods' addresses.
func TestWebhooksReachedThroughOLMService(t *testing.T) {
	g := NewWithT(t)
	c := world.client
	if installed.op == nil {
		t.Fatal("TestInstallThroughOLM did not install the operator")
	}
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
	quit  chan struct{}
	wg    sync.WaitGroup
	seen  map[string]string
}

func startRecorder(t *testing.T, start time.Time) *recorder {
	r := &recorder{t: t, start: start, quit: make(chan struct{}), seen: map[string]string{}}
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
			r.t.Logf("%6.1fs after the approval: %s: %s", time.Since(r.start).Seconds(), k, now[k])
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

// bundleCSVName is the name of bundle/'s ClusterServiceVersion.
func bundleCSVName() (string, error) {
	b, err := runbundle.ReadBundle(filepath.Join(world.root, "bundle"))
	if err != nil {
		return "", err
	}
	return b.CSV.Name, nil
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
func TestOperandsSurviveTheirOperator(t *testing.T) {
	g := NewWithT(t)
	if installed.csv == "" {
		t.Fatal("TestInstallThroughOLM did not install the operator")
	}
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

	start := time.Now()
	g.Expect(c.Delete(ctx, &operatorsv1alpha1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: subscriptionName}})).To(Succeed())
	g.Expect(c.Delete(ctx, &operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: installed.csv}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := c.Get(ctx, client.ObjectKeyFromObject(installed.deployment), &appsv1.Deployment{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the operator Deployment is still there: %v", err)
	}, timeout, tick).Should(Succeed())
	// Its pod is gone: so is the process that stood for it.
	g.Expect(installed.op.proc.stop()).To(Succeed())
	t.Logf("%.1fs after deleting the Subscription and CSV: the operator Deployment is gone and its process stopped", time.Since(start).Seconds())

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
