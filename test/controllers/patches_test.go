package controllers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/certs"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/render"
)

// envValue is the value of env var name in container of a pod template, "" when unset.
func envValue(tmpl corev1.PodTemplateSpec, container, name string) string {
	for _, c := range tmpl.Spec.Containers {
		if c.Name == container {
			for _, e := range c.Env {
				if e.Name == name {
					return e.Value
				}
			}
		}
	}
	return ""
}

// Satellite patches reach the DaemonSet; the webhook refuses a patch that adds
// privilege under Restricted, naming the field; a bad patch that got past admission
// (written straight into a LinstorSatellite) leaves the DaemonSet as it was and says
// which field is wrong.
func TestPatchesReachWorkloadsAndAreHeldToPolicy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	makeNode(t, "patch-a", "10.9.1.1", map[string]string{"suite": "patch"})
	satDS := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.SatelliteDaemonSetName("patch-a")}}

	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorSatelliteConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "extra-env", Namespace: ns},
		Spec: linstorv1.LinstorSatelliteConfigurationSpec{Patches: []linstorv1.Patch{{
			Target: &linstorv1.PatchTarget{Kind: "DaemonSet", Name: render.SatelliteWorkloadAlias},
			Patch:  "spec:\n  template:\n    spec:\n      containers:\n      - name: linstor-satellite\n        env:\n        - name: LS_EXTRA\n          value: from-a-patch\n",
		}}},
	})).To(Succeed())
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{
		NodeSelector: map[string]string{"suite": "patch"},
		Controller: &linstorv1.ControllerSpec{ComponentSpec: linstorv1.ComponentSpec{Patches: []linstorv1.Patch{{
			Target: &linstorv1.PatchTarget{Kind: "Service", Name: names.ControllerName},
			Patch:  `[{"op":"add","path":"/metadata/annotations","value":{"example.com/patched":"yes"}}]`,
		}}}},
	})
	g.Eventually(func(g Gomega) {
		tmpl := podTemplate(g, satDS)
		g.Expect(envValue(tmpl, names.SatelliteComponent, "LS_EXTRA")).To(Equal("from-a-patch"))
		g.Expect(envValue(tmpl, names.SatelliteComponent, "LB_FORCE_NODE_NAME")).To(Equal("patch-a"), "the patch merged, it did not replace")
		svc := get(g, ns, names.ControllerName, &corev1.Service{})
		g.Expect(svc.Annotations).To(HaveKeyWithValue("example.com/patched", "yes"))
	}, timeout, tick).Should(Succeed())

	// Restricted (the default): a patch that makes the controller privileged is refused
	// at admission, by field.
	err := updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.Controller.Patches = append(c.Spec.Controller.Patches, linstorv1.Patch{
			Patch: `{"spec":{"template":{"spec":{"containers":[{"name":"linstor-controller","securityContext":{"privileged":true}}]}}}}`,
		})
	})
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.controller.patches[1].patch.spec.template.spec.containers[name=linstor-controller].securityContext.privileged: Forbidden"))
	// A configuration's patch that adds a privileged container to the satellite too.
	err = env.Client.Create(ctx, &linstorv1.LinstorSatelliteConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "sidecar", Namespace: ns},
		Spec: linstorv1.LinstorSatelliteConfigurationSpec{Patches: []linstorv1.Patch{{
			Patch: `{"spec":{"template":{"spec":{"containers":[{"name":"debug","image":"busybox","securityContext":{"privileged":true}}]}}}}`,
		}}},
	})
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.patches[0].patch.spec.template.spec.containers[name=debug].securityContext.privileged: Forbidden"))
	// And a target the component does not render.
	err = updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.HighAvailabilityController = &linstorv1.ComponentSpec{Patches: []linstorv1.Patch{{Target: &linstorv1.PatchTarget{Kind: "Service"}, Patch: `{}`}}}
	})
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`spec.highAvailabilityController.patches[0].target: Invalid value: "Service": no rendered Service; rendered: DaemonSet linstor-ha-controller`))

	// A patch admitted under AllowPrivileged is refused by the satellite controller once
	// the cluster is Restricted again: the satellite says which field is wrong, and
	// nothing of the new patch list reaches the DaemonSet, not even the harmless part.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.PodTemplatePolicy = linstorv1.PodTemplateAllowPrivileged })).To(Succeed())
	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorSatelliteConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "host-pid", Namespace: ns},
		Spec:       linstorv1.LinstorSatelliteConfigurationSpec{Patches: []linstorv1.Patch{{Patch: `{"spec":{"template":{"spec":{"hostPID":true}}}}`}}},
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(podTemplate(g, satDS).Spec.HostPID).To(BeTrue())
	}, timeout, tick).Should(Succeed())
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.PodTemplatePolicy = linstorv1.PodTemplateRestricted
		c.Spec.Satellite = &linstorv1.SatelliteSpec{ComponentSpec: linstorv1.ComponentSpec{Patches: []linstorv1.Patch{{Patch: `{"metadata":{"annotations":{"half":"patched"}}}`}}}}
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		sat := get(g, ns, "patch-a", &linstorv1.LinstorSatellite{})
		d := condition(sat.Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonInvalidSpec))
		g.Expect(d.Message).To(MatchRegexp(`spec\.patches\[\d+\]\.patch\.spec\.template\.spec\.hostPID: Forbidden`))
	}, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		var ds appsv1.DaemonSet
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(satDS), &ds)).To(Succeed())
		g.Expect(ds.Annotations).NotTo(HaveKey("half"), "the satellite was applied half-patched")
	}, 2*time.Second, tick).Should(Succeed())
}

// csi.controller.enabled and csi.node.enabled each leave their workload out (pruning
// it if it ran); the CSIDriver stays while either runs. The image repository moves
// every release image, not the ones a component names.
func TestCSISwitchesAndRepository(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	makeNode(t, "csisw-a", "10.9.2.1", map[string]string{"suite": "csisw"})
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{
		NodeSelector: map[string]string{"suite": "csisw"},
		Repository:   "mirror.example.com:5000/linstor",
		CSI:          &linstorv1.CSISpec{Node: &linstorv1.ComponentSpec{Image: "other.example.com/csi:v9"}},
	})
	exists := func(obj client.Object) bool {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	deploy := func() *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.CSIControllerName}}
	}
	node := func() *appsv1.DaemonSet {
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.CSINodeName}}
	}
	driver := func() *storagev1.CSIDriver {
		return &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: names.CSIDriverName}}
	}
	g.Eventually(func(g Gomega) {
		ctrl := podTemplate(g, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.ControllerName}})
		g.Expect(ctrl.Spec.Containers[0].Image).To(Equal("mirror.example.com:5000/linstor/piraeus-server:v1.33.3"))
		csi := podTemplate(g, deploy())
		g.Expect(csi.Spec.Containers[0].Image).To(Equal("mirror.example.com:5000/linstor/piraeus-csi:v1.12.0"))
		g.Expect(csi.Spec.Containers[1].Image).To(HavePrefix("mirror.example.com:5000/linstor/csi-provisioner:"))
		g.Expect(podTemplate(g, node()).Spec.Containers[1].Image).To(Equal("other.example.com/csi:v9"), "an image the user named is used as written")
		sat := podTemplate(g, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.SatelliteDaemonSetName("csisw-a")}})
		g.Expect(sat.Spec.InitContainers[0].Image).To(HavePrefix("mirror.example.com:5000/linstor/drbd9-noble:"))
		g.Expect(exists(driver())).To(BeTrue())
	}, timeout, tick).Should(Succeed())

	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.CSI.Controller = &linstorv1.ComponentSpec{Enabled: ptr.To(false)}
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(exists(deploy())).To(BeFalse(), "the CSI controller was not pruned")
		g.Expect(exists(node())).To(BeTrue())
		g.Expect(exists(driver())).To(BeTrue(), "the CSIDriver must stay while the node plugin runs")
	}, timeout, tick).Should(Succeed())

	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.CSI.Node.Enabled = ptr.To(false)
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(exists(node())).To(BeFalse())
		g.Expect(exists(driver())).To(BeFalse())
	}, timeout, tick).Should(Succeed())
	g.Expect(exists(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.ControllerName}})).To(BeTrue(), "pruning removed a wanted object")
}

// A channel's caReference: missing, the cluster is Degraded naming the field and no
// workload mounts anything; present, every pod that verifies the channel's peers reads
// its CA from it, and the channel's Secret needs no ca.crt.
func TestCAReference(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	makeNode(t, "caref-a", "10.9.3.1", map[string]string{"suite": "caref"})
	ca, err := certs.NewCA("company-ca", time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	leaf, err := certs.Issue(ca, certs.Request{CommonName: "linstor-internal", Server: true, Client: true}, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	server, err := certs.Issue(ca, certs.Request{CommonName: names.ControllerName, DNSNames: []string{names.ControllerName + "." + ns + ".svc"}, Server: true}, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	user, err := certs.Issue(ca, certs.Request{CommonName: "linstor-client", Client: true}, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	for name, pair := range map[string]certs.Pair{"internal-no-ca": leaf, "api-no-ca": server, "client-no-ca": user} {
		g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Data: map[string][]byte{"tls.crt": pair.CertPEM, "tls.key": pair.KeyPEM}})).To(Succeed())
	}
	ref := &linstorv1.CAReference{Kind: "ConfigMap", Name: "company-ca", Key: "bundle.pem"}
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{
		NodeSelector: map[string]string{"suite": "caref"},
		TLS: &linstorv1.TLSSpec{
			Internal: &linstorv1.TLSConfig{Mode: linstorv1.TLSSecret, SecretName: "internal-no-ca", CAReference: ref},
			API:      &linstorv1.TLSConfig{Mode: linstorv1.TLSSecret, SecretName: "api-no-ca", ClientSecretName: "client-no-ca", CAReference: ref},
		},
	})
	g.Eventually(func(g Gomega) {
		d := condition(getCluster(g, cluster).Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonSecretMissing))
		g.Expect(d.Message).To(ContainSubstring("spec.tls.internal.caReference: ConfigMap company-ca: not found"))
	}, timeout, tick).Should(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.ControllerName}, &appsv1.Deployment{})).To(Satisfy(apierrors.IsNotFound),
		"a workload was started without the CA that verifies its peers")

	g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "company-ca", Namespace: ns},
		Data: map[string]string{"bundle.pem": string(ca.CertPEM)}})).To(Succeed())
	caVolume := func(tmpl corev1.PodTemplateSpec) string {
		for _, v := range tmpl.Spec.Volumes {
			if v.Projected == nil {
				continue
			}
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil && s.ConfigMap.Name == "company-ca" && len(s.ConfigMap.Items) == 1 && s.ConfigMap.Items[0].Key == "bundle.pem" && s.ConfigMap.Items[0].Path == "ca.crt" {
					return v.Name
				}
			}
		}
		return ""
	}
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
		ctrl := podTemplate(g, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.ControllerName}})
		g.Expect(caVolume(ctrl)).To(Equal("internal-tls"))
		sat := podTemplate(g, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.SatelliteDaemonSetName("caref-a")}})
		g.Expect(caVolume(sat)).To(Equal("internal-tls"))
		csi := podTemplate(g, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.CSIControllerName}})
		var rootCA *corev1.EnvVarSource
		for _, e := range csi.Spec.Containers[0].Env {
			if e.Name == "LS_ROOT_CA" {
				rootCA = e.ValueFrom
			}
		}
		g.Expect(rootCA).NotTo(BeNil())
		g.Expect(rootCA.ConfigMapKeyRef).NotTo(BeNil(), "the CSI driver must verify LINSTOR with the referenced CA")
		g.Expect(rootCA.ConfigMapKeyRef.Name).To(Equal("company-ca"))
	}, timeout, tick).Should(Succeed())

	// The operator's own client verifies LINSTOR's API with the referenced CA (the
	// Secrets carry none), and presents the client certificate.
	pair, err := tls.X509KeyPair(server.CertPEM, server.KeyPEM)
	g.Expect(err).NotTo(HaveOccurred())
	clientCAs := x509.NewCertPool()
	clientCAs.AppendCertsFromPEM(ca.CertPEM)
	srv := httptest.NewUnstartedServer(emu.Handler())
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: clientCAs, ClientAuth: tls.RequireAndVerifyClientCert}
	srv.StartTLS()
	defer srv.Close()
	dialer := &net.Dialer{}
	direct := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dialer.DialContext(ctx, network, srv.Listener.Addr().String())
	}}
	c := getCluster(g, cluster)
	conn, err := (&linstor.Connector{Reader: env.Client, Transport: direct}).Connect(ctx, c)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = conn.Controller.GetVersion(ctx)
	g.Expect(err).NotTo(HaveOccurred(), "TLS with the referenced CA failed")
	// A reference that cannot be read is an error, never an unverified connection.
	c.Spec.TLS.API.CAReference = &linstorv1.CAReference{Kind: "ConfigMap", Name: "absent"}
	_, err = (&linstor.Connector{Reader: env.Client, Transport: direct}).Connect(ctx, c)
	g.Expect(err).To(MatchError(ContainSubstring("spec.tls.api.caReference: ConfigMap absent: not found")))
}
