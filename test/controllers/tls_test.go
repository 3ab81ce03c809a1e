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

	"github.com/linstor-operator/linstor-operator/pkg/clustertls"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/certs"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
)

// verify checks that a generated Secret holds a certificate of its CA for the usage.
func verify(g Gomega, ns, name string, usage x509.ExtKeyUsage, dnsName string) *x509.Certificate {
	secret := get(g, ns, name, &corev1.Secret{})
	leaf, err := certs.Parse(secret.Data["tls.crt"], secret.Data["tls.key"])
	g.Expect(err).NotTo(HaveOccurred(), name)
	roots := x509.NewCertPool()
	g.Expect(roots.AppendCertsFromPEM(secret.Data["ca.crt"])).To(BeTrue(), name)
	_, err = leaf.Cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: dnsName, KeyUsages: []x509.ExtKeyUsage{usage}})
	g.Expect(err).NotTo(HaveOccurred(), name)
	return leaf.Cert
}

func podTemplate(g Gomega, obj client.Object) corev1.PodTemplateSpec {
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return w.Spec.Template
	case *appsv1.DaemonSet:
		return w.Spec.Template
	}
	panic("not a workload")
}

func mountsSecret(tmpl corev1.PodTemplateSpec, secret, path string) bool {
	vol := ""
	for _, v := range tmpl.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == secret {
			vol = v.Name
		}
	}
	for _, c := range tmpl.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if m.Name == vol && m.MountPath == path {
				return true
			}
		}
	}
	return false
}

func TestGeneratedTLSIsIssuedMountedAndRenewed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	makeNode(t, "tls-a", "10.4.0.1", map[string]string{"suite": "tls"})
	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: ns}})).To(Succeed())
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{
		NodeSelector: map[string]string{"suite": "tls"},
		TLS: &linstorv1.TLSSpec{
			Internal: &linstorv1.TLSConfig{Mode: linstorv1.TLSGenerated},
			API:      &linstorv1.TLSConfig{Mode: linstorv1.TLSGenerated},
		},
	})

	// Certificates: signed by their CA, with the right names and usages.
	var apiCert *x509.Certificate
	g.Eventually(func(g Gomega) {
		verify(g, ns, names.DefaultInternalTLSSecret, x509.ExtKeyUsageServerAuth, "")
		verify(g, ns, names.DefaultInternalTLSSecret, x509.ExtKeyUsageClientAuth, "")
		apiCert = verify(g, ns, names.DefaultAPITLSSecret, x509.ExtKeyUsageServerAuth, "linstor-controller."+ns+".svc")
		verify(g, ns, names.DefaultAPIClientTLSSecret, x509.ExtKeyUsageClientAuth, "")
		c := getCluster(g, cluster)
		g.Expect(c.Status.Certificates).To(HaveLen(3))
		for _, st := range c.Status.Certificates {
			g.Expect(st.NotAfter).NotTo(BeNil())
			g.Expect(st.NotAfter.Time).To(BeTemporally(">", time.Now().Add(300*24*time.Hour)))
		}
	}, timeout, tick).Should(Succeed())
	// The CAs' keys stay in their own Secrets; the leaves carry only the trust bundle.
	g.Expect(get(g, ns, names.DefaultAPITLSSecret, &corev1.Secret{}).Data["ca.crt"]).To(Equal(get(g, ns, names.APICASecret, &corev1.Secret{}).Data["ca.crt"]))
	internalCA := get(g, ns, names.InternalCASecret, &corev1.Secret{})
	g.Expect(internalCA.OwnerReferences).To(HaveLen(1), "generated TLS Secrets go with the cluster")

	// Mounted where the LINSTOR images look for them.
	g.Eventually(func(g Gomega) {
		ctrl := podTemplate(g, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "linstor-controller"}})
		g.Expect(mountsSecret(ctrl, names.DefaultInternalTLSSecret, "/etc/linstor/ssl-pem")).To(BeTrue())
		g.Expect(mountsSecret(ctrl, names.DefaultAPITLSSecret, "/etc/linstor/https-pem")).To(BeTrue())
		g.Expect(mountsSecret(ctrl, names.DefaultAPIClientTLSSecret, "/etc/linstor/client")).To(BeTrue())
		g.Expect(ctrl.Annotations[names.AnnotationTLSHash]).To(ContainSubstring(names.DefaultAPITLSSecret + "="))
		sat := podTemplate(g, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.SatelliteDaemonSetName("tls-a")}})
		g.Expect(mountsSecret(sat, names.DefaultInternalTLSSecret, "/etc/linstor/ssl-pem")).To(BeTrue())
		g.Expect(sat.Spec.Containers[0].Ports[0].ContainerPort).To(Equal(int32(3367)))
		g.Expect(sat.Annotations[names.AnnotationTLSHash]).To(HavePrefix(names.DefaultInternalTLSSecret + "="))
		csi := podTemplate(g, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.CSIControllerName}})
		var env []string
		for _, e := range csi.Spec.Containers[0].Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				env = append(env, e.Name+"="+e.ValueFrom.SecretKeyRef.Name+"/"+e.ValueFrom.SecretKeyRef.Key)
			}
			if e.Name == "LS_CONTROLLERS" {
				g.Expect(e.Value).To(Equal("https://linstor-controller." + ns + ".svc:3371"))
			}
		}
		g.Expect(env).To(ConsistOf("LS_ROOT_CA=linstor-client-tls/ca.crt", "LS_USER_CERTIFICATE=linstor-client-tls/tls.crt", "LS_USER_KEY=linstor-client-tls/tls.key"))
		var svc corev1.Service
		g.Expect(env2Get(ns, "linstor-controller", &svc)).To(Succeed())
		g.Expect(svc.Spec.Ports).To(HaveLen(1))
		g.Expect(svc.Spec.Ports[0].Port).To(Equal(int32(3371)))
		var cm corev1.ConfigMap
		g.Expect(env2Get(ns, "linstor-controller-config", &cm)).To(Succeed())
		g.Expect(cm.Data["linstor.toml"]).To(ContainSubstring("[https]\n  enabled = true"))
		g.Expect(env2Get(ns, names.SatelliteConfigName, &cm)).To(Succeed())
		g.Expect(cm.Data["linstor_satellite.toml"]).To(ContainSubstring(`type = "ssl"`))
	}, timeout, tick).Should(Succeed())

	// LINSTOR connects to the satellite over SSL on 3367.
	g.Eventually(func(g Gomega) {
		n, ok := emu.Node("tls-a")
		g.Expect(ok).To(BeTrue())
		g.Expect(n.NetInterfaces).To(HaveLen(1))
		g.Expect(n.NetInterfaces[0].SatelliteEncryptionType).To(Equal("SSL"))
		g.Expect(n.NetInterfaces[0].SatellitePort).To(Equal(int32(3367)))
	}, timeout, tick).Should(Succeed())

	// A certificate in the last third of its life is renewed, and the pods mounting it roll.
	before := podTemplate(g, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "linstor-controller"}}).Annotations[names.AnnotationTLSHash]
	caSecret := get(g, ns, names.APICASecret, &corev1.Secret{})
	ca, err := certs.Parse(caSecret.Data["tls.crt"], caSecret.Data["tls.key"])
	g.Expect(err).NotTo(HaveOccurred())
	old, err := certs.Issue(ca, certs.Request{CommonName: names.ControllerName, DNSNames: clustertls.APIServerDNSNames(cluster), Server: true}, time.Now().Add(-300*24*time.Hour))
	g.Expect(err).NotTo(HaveOccurred())
	server := get(g, ns, names.DefaultAPITLSSecret, &corev1.Secret{})
	server.Data["tls.crt"], server.Data["tls.key"] = old.CertPEM, old.KeyPEM
	g.Expect(env.Client.Update(ctx, server)).To(Succeed())
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Annotations = map[string]string{"touch": "renew"} })).To(Succeed())
	g.Eventually(func(g Gomega) {
		renewed := verify(g, ns, names.DefaultAPITLSSecret, x509.ExtKeyUsageServerAuth, "linstor-controller."+ns+".svc")
		g.Expect(renewed.SerialNumber).NotTo(Equal(old.Cert.SerialNumber))
		g.Expect(renewed.SerialNumber).NotTo(Equal(apiCert.SerialNumber))
		after := podTemplate(g, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "linstor-controller"}}).Annotations[names.AnnotationTLSHash]
		g.Expect(after).NotTo(Equal(before), "the controller pods were not rolled")
	}, timeout, tick).Should(Succeed())
	// The satellites do not mount the API certificate: they are not restarted for it.
	sat := podTemplate(g, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.SatelliteDaemonSetName("tls-a")}})
	g.Expect(sat.Annotations[names.AnnotationTLSHash]).NotTo(ContainSubstring(names.DefaultAPITLSSecret))

	// The operator's own connector speaks mutual TLS with the generated client certificate
	// to a server using the generated API certificate.
	apiSecret := get(g, ns, names.DefaultAPITLSSecret, &corev1.Secret{})
	pair, err := tls.X509KeyPair(apiSecret.Data["tls.crt"], apiSecret.Data["tls.key"])
	g.Expect(err).NotTo(HaveOccurred())
	clientCAs := x509.NewCertPool()
	clientCAs.AppendCertsFromPEM(apiSecret.Data["ca.crt"])
	srv := httptest.NewUnstartedServer(emu.Handler())
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: clientCAs, ClientAuth: tls.RequireAndVerifyClientCert}
	srv.StartTLS()
	defer srv.Close()
	// The certificate names the Service: dial the test server under that name.
	dialer := &net.Dialer{}
	direct := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dialer.DialContext(ctx, network, srv.Listener.Addr().String())
	}}
	c := getCluster(g, cluster)
	connector := &linstor.Connector{Reader: env.Client, Transport: direct}
	conn, err := connector.Connect(ctx, c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(conn.URL).To(Equal("https://linstor-controller." + ns + ".svc:3371"))
	v, err := conn.Controller.GetVersion(ctx)
	g.Expect(err).NotTo(HaveOccurred(), "mutual TLS with the generated certificates failed")
	g.Expect(v.Version).NotTo(BeEmpty())
	// Under another name the server certificate does not verify.
	conn, err = (&linstor.Connector{Reader: env.Client, Transport: direct, URL: "https://elsewhere.example:3371"}).Connect(ctx, c)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = conn.Controller.GetVersion(ctx)
	g.Expect(err).To(MatchError(ContainSubstring("certificate is valid for linstor-controller")))
}

func env2Get(ns, name string, obj client.Object) error {
	return env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
}

func TestTLSSecretsAreCheckedAndNeverOverwritten(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	makeNode(t, "tlsu-a", "10.4.1.1", map[string]string{"suite": "tlsu"})
	// A Secret of the user's under the name a generated certificate would take.
	mine := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "linstor-internal-tls", Namespace: ns}, Data: map[string][]byte{"keep": []byte("me")}}
	g.Expect(env.Client.Create(ctx, mine)).To(Succeed())
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{
		NodeSelector: map[string]string{"suite": "tlsu"},
		TLS:          &linstorv1.TLSSpec{Internal: &linstorv1.TLSConfig{Mode: linstorv1.TLSGenerated}},
	})
	g.Eventually(func(g Gomega) {
		d := condition(getCluster(g, cluster).Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonInvalidSpec))
		g.Expect(d.Message).To(ContainSubstring("Secret linstor-internal-tls exists and was not generated by the operator"))
	}, timeout, tick).Should(Succeed())
	g.Expect(get(g, ns, "linstor-internal-tls", &corev1.Secret{}).Data).To(Equal(map[string][]byte{"keep": []byte("me")}))

	// Mode Secret with a missing Secret: SecretMissing, and no workload mounts it yet.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.TLS.Internal = &linstorv1.TLSConfig{Mode: linstorv1.TLSSecret, SecretName: "my-internal-tls"}
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		d := condition(getCluster(g, cluster).Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonSecretMissing))
		g.Expect(d.Message).To(ContainSubstring("spec.tls: Secret my-internal-tls not found"))
	}, timeout, tick).Should(Succeed())

	// An expired certificate is refused by name.
	ca, _ := certs.NewCA("user-ca", time.Now().Add(-3*365*24*time.Hour))
	leaf, _ := certs.Issue(ca, certs.Request{CommonName: "x", Server: true, Client: true}, time.Now().Add(-2*365*24*time.Hour))
	user := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "my-internal-tls", Namespace: ns},
		Data: map[string][]byte{"ca.crt": ca.CertPEM, "tls.crt": leaf.CertPEM, "tls.key": leaf.KeyPEM}}
	g.Expect(env.Client.Create(ctx, user)).To(Succeed())
	g.Eventually(func(g Gomega) {
		d := condition(getCluster(g, cluster).Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Message).To(MatchRegexp(`the certificate in Secret my-internal-tls expired on \d{4}-`))
	}, timeout, tick).Should(Succeed())

	// A valid one is used as is, and mounted.
	leaf, _ = certs.Issue(ca, certs.Request{CommonName: "x", Server: true, Client: true}, time.Now())
	user.Data["tls.crt"], user.Data["tls.key"] = leaf.CertPEM, leaf.KeyPEM
	g.Expect(env.Client.Update(ctx, user)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
		ctrl := podTemplate(g, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "linstor-controller"}})
		g.Expect(mountsSecret(ctrl, "my-internal-tls", "/etc/linstor/ssl-pem")).To(BeTrue())
	}, timeout, tick).Should(Succeed())
	g.Expect(get(g, ns, "my-internal-tls", &corev1.Secret{}).Data["tls.crt"]).To(Equal(leaf.CertPEM), "a user-provided Secret was modified")
}

// Mode CertManager: the operator asks cert-manager for each Secret; this test plays
// cert-manager and issues it.
func TestCertManagerModeRequestsCertificates(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	makeNode(t, "tlscm-a", "10.4.2.1", map[string]string{"suite": "tlscm"})
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{
		NodeSelector: map[string]string{"suite": "tlscm"},
		TLS: &linstorv1.TLSSpec{API: &linstorv1.TLSConfig{Mode: linstorv1.TLSCertManager,
			IssuerRef: &linstorv1.IssuerReference{Name: "storage-ca", Kind: "ClusterIssuer"}}},
	})
	certificate := &unstructured.Unstructured{}
	certificate.SetGroupVersionKind(schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"})
	g.Eventually(func(g Gomega) {
		g.Expect(env2Get(ns, names.DefaultAPITLSSecret, certificate)).To(Succeed())
		d := condition(getCluster(g, cluster).Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonSecretMissing))
		g.Expect(d.Message).To(ContainSubstring("waiting for cert-manager to issue Secret linstor-api-tls"))
	}, timeout, tick).Should(Succeed())
	spec := certificate.Object["spec"].(map[string]any)
	g.Expect(spec["secretName"]).To(Equal(names.DefaultAPITLSSecret))
	g.Expect(spec["issuerRef"]).To(Equal(map[string]any{"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "storage-ca"}))
	g.Expect(spec["dnsNames"]).To(ContainElement("linstor-controller." + ns + ".svc"))
	g.Expect(spec["usages"]).To(ContainElement("server auth"))
	g.Expect(certificate.GetOwnerReferences()).To(HaveLen(1))
	client := &unstructured.Unstructured{}
	client.SetGroupVersionKind(certificate.GroupVersionKind())
	g.Expect(env2Get(ns, names.DefaultAPIClientTLSSecret, client)).To(Succeed())
	g.Expect(client.Object["spec"].(map[string]any)["usages"]).To(ContainElement("client auth"))

	// "cert-manager" issues both Secrets.
	ca, _ := certs.NewCA("storage-ca", time.Now())
	for _, name := range []string{names.DefaultAPITLSSecret, names.DefaultAPIClientTLSSecret} {
		leaf, err := certs.Issue(ca, certs.Request{CommonName: name, DNSNames: clustertls.APIServerDNSNames(cluster), Server: true, Client: true}, time.Now())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"ca.crt": ca.CertPEM, "tls.crt": leaf.CertPEM, "tls.key": leaf.KeyPEM}})).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
		// The two API Secrets, and the internal channel's, generated by default.
		g.Expect(c.Status.Certificates).To(HaveLen(3))
		ctrl := podTemplate(g, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "linstor-controller"}})
		g.Expect(mountsSecret(ctrl, names.DefaultAPITLSSecret, "/etc/linstor/https-pem")).To(BeTrue())
	}, timeout, tick).Should(Succeed())
}

// Without spec.tls a new cluster is encrypted: generated certificates, the API over
// HTTPS with client certificates, the satellites on the SSL port. Disabling a channel
// is reported as a warning condition and event.
func TestTLSIsOnByDefault(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	makeNode(t, "tlsd-a", "10.4.3.1", map[string]string{"suite": "tlsd"})
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "tlsd"}})

	g.Eventually(func(g Gomega) {
		verify(g, ns, names.DefaultInternalTLSSecret, x509.ExtKeyUsageServerAuth, "")
		verify(g, ns, names.DefaultAPITLSSecret, x509.ExtKeyUsageServerAuth, "linstor-controller."+ns+".svc")
		verify(g, ns, names.DefaultAPIClientTLSSecret, x509.ExtKeyUsageClientAuth, "")
		c := getCluster(g, cluster)
		g.Expect(c.Status.Certificates).To(HaveLen(3))
		g.Expect(c.Status.TLS).To(Equal(&linstorv1.TLSStatus{DefaultMode: linstorv1.TLSGenerated, Internal: linstorv1.TLSGenerated, API: linstorv1.TLSGenerated}))
		enc := condition(c.Status.Conditions, linstorv1.ConditionEncrypted)
		g.Expect(enc.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(enc.Reason).To(Equal(linstorv1.ReasonAsExpected))
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, tick).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(csiURL(g, ns)).To(Equal("https://linstor-controller." + ns + ".svc:3371"))
		var svc corev1.Service
		g.Expect(env2Get(ns, "linstor-controller", &svc)).To(Succeed())
		g.Expect(svc.Spec.Ports).To(HaveLen(1))
		g.Expect(svc.Spec.Ports[0].Port).To(Equal(int32(3371)))
		sat := podTemplate(g, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.SatelliteDaemonSetName("tlsd-a")}})
		g.Expect(sat.Spec.Containers[0].Ports[0].ContainerPort).To(Equal(int32(3367)))
		g.Expect(mountsSecret(sat, names.DefaultInternalTLSSecret, "/etc/linstor/ssl-pem")).To(BeTrue())
		n, ok := emu.Node("tlsd-a")
		g.Expect(ok).To(BeTrue())
		g.Expect(n.NetInterfaces).To(HaveLen(1))
		g.Expect(n.NetInterfaces[0].SatelliteEncryptionType).To(Equal("SSL"))
		g.Expect(n.NetInterfaces[0].SatellitePort).To(Equal(int32(3367)))
	}, timeout, tick).Should(Succeed())

	// Disabling the API channel: plain HTTP again, and a warning that names the field.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.TLS = &linstorv1.TLSSpec{API: &linstorv1.TLSConfig{Mode: linstorv1.TLSDisabled}}
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		enc := condition(c.Status.Conditions, linstorv1.ConditionEncrypted)
		g.Expect(enc.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(enc.Reason).To(Equal(linstorv1.ReasonTLSDisabled))
		g.Expect(enc.Message).To(ContainSubstring("spec.tls.api.mode is Disabled"))
		g.Expect(enc.Message).NotTo(ContainSubstring("spec.tls.internal"))
		g.Expect(c.Status.TLS.API).To(Equal(linstorv1.TLSDisabled))
		// A warning, not a fault.
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionUpgradeable).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(csiURL(g, ns)).To(Equal("http://linstor-controller." + ns + ".svc:3370"))
		g.Expect(warnings(g, ns, linstorv1.ReasonTLSDisabled)).To(ContainElement(ContainSubstring("spec.tls.api.mode is Disabled")))
	}, timeout, tick).Should(Succeed())
	// The internal channel stays as it was: the satellites are not touched.
	sat := podTemplate(g, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.SatelliteDaemonSetName("tlsd-a")}})
	g.Expect(sat.Spec.Containers[0].Ports[0].ContainerPort).To(Equal(int32(3367)))
	// One event for the change, not one per pass (the recorder would count repeats).
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Annotations = map[string]string{"touch": "1"} })).To(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(warnings(g, ns, linstorv1.ReasonTLSDisabled)).To(HaveLen(1))
		g.Expect(warningCount(g, ns, linstorv1.ReasonTLSDisabled)).To(Equal(int32(1)))
	}, "2s", tick).Should(Succeed())
}

// A cluster that ran without TLS under an operator that predates the default keeps
// running plain after the operator upgrade: switching would restart the controller and
// every satellite at once and move the API to HTTPS under its clients.
func TestClusterThatRanPlainStaysPlain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	makeNode(t, "tlsk-a", "10.4.4.1", map[string]string{"suite": "tlsk"})
	disabled := &linstorv1.TLSConfig{Mode: linstorv1.TLSDisabled}
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{
		NodeSelector: map[string]string{"suite": "tlsk"},
		TLS:          &linstorv1.TLSSpec{Internal: disabled, API: disabled},
	})
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionEncrypted).Reason).To(Equal(linstorv1.ReasonTLSDisabled))
		g.Expect(c.Status.TLS.DefaultMode).To(Equal(linstorv1.TLSGenerated), "a new cluster")
		n, ok := emu.Node("tlsk-a")
		g.Expect(ok).To(BeTrue())
		g.Expect(n.NetInterfaces[0].SatelliteEncryptionType).To(Equal("PLAIN"))
	}, timeout, tick).Should(Succeed())

	// What an earlier operator left: conditions, no status.tls, no spec.tls.
	g.Expect(env.Client.Status().Patch(ctx, &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster.Name}},
		client.RawPatch(types.MergePatchType, []byte(`{"status":{"tls":null}}`)))).To(Succeed())
	g.Expect(getCluster(g, cluster).Status.TLS).To(BeNil())
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.TLS = nil })).To(Succeed())

	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(c.Status.TLS).To(Equal(&linstorv1.TLSStatus{DefaultMode: linstorv1.TLSDisabled, Internal: linstorv1.TLSDisabled, API: linstorv1.TLSDisabled}))
		enc := condition(c.Status.Conditions, linstorv1.ConditionEncrypted)
		g.Expect(enc.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(enc.Reason).To(Equal(linstorv1.ReasonTLSKeptDisabled))
		g.Expect(enc.Message).To(ContainSubstring("spec.tls.internal.mode is unset"))
		g.Expect(enc.Message).To(ContainSubstring("spec.tls.api.mode is unset"))
		g.Expect(warnings(g, ns, linstorv1.ReasonTLSKeptDisabled)).To(HaveLen(1))
	}, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		sat := podTemplate(g, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.SatelliteDaemonSetName("tlsk-a")}})
		g.Expect(sat.Spec.Containers[0].Ports[0].ContainerPort).To(Equal(int32(3366)))
		g.Expect(sat.Annotations).NotTo(HaveKey(names.AnnotationTLSHash))
		g.Expect(csiURL(g, ns)).To(Equal("http://linstor-controller." + ns + ".svc:3370"))
		n, _ := emu.Node("tlsk-a")
		g.Expect(n.NetInterfaces[0].SatelliteEncryptionType).To(Equal("PLAIN"))
		g.Expect(env2Get(ns, names.DefaultInternalTLSSecret, &corev1.Secret{})).NotTo(Succeed(), "a certificate was issued for a plain cluster")
	}, "3s", tick).Should(Succeed())

	// The admin switches the internal channel on by saying so.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.TLS = &linstorv1.TLSSpec{Internal: &linstorv1.TLSConfig{Mode: linstorv1.TLSGenerated}}
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		n, _ := emu.Node("tlsk-a")
		g.Expect(n.NetInterfaces[0].SatelliteEncryptionType).To(Equal("SSL"))
		g.Expect(n.NetInterfaces[0].SatellitePort).To(Equal(int32(3367)))
		c := getCluster(g, cluster)
		g.Expect(c.Status.TLS.Internal).To(Equal(linstorv1.TLSGenerated))
		g.Expect(c.Status.TLS.DefaultMode).To(Equal(linstorv1.TLSDisabled))
		enc := condition(c.Status.Conditions, linstorv1.ConditionEncrypted)
		g.Expect(enc.Reason).To(Equal(linstorv1.ReasonTLSKeptDisabled))
		g.Expect(enc.Message).NotTo(ContainSubstring("spec.tls.internal"))
	}, timeout, tick).Should(Succeed())
}

// csiURL is where the CSI controller is told LINSTOR is.
func csiURL(g Gomega, ns string) string {
	csi := podTemplate(g, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.CSIControllerName}})
	for _, e := range csi.Spec.Containers[0].Env {
		if e.Name == "LS_CONTROLLERS" {
			return e.Value
		}
	}
	return ""
}

// warningCount totals the Warning events with this reason in ns, repeats included.
func warningCount(g Gomega, ns, reason string) int32 {
	var events corev1.EventList
	g.Expect(env.Client.List(context.Background(), &events, client.InNamespace(ns))).To(Succeed())
	var n int32
	for _, e := range events.Items {
		if e.Type == corev1.EventTypeWarning && e.Reason == reason {
			n += max(e.Count, 1)
		}
	}
	return n
}

// warnings lists the messages of the Warning events with this reason in ns.
func warnings(g Gomega, ns, reason string) []string {
	var events corev1.EventList
	g.Expect(env.Client.List(context.Background(), &events, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range events.Items {
		if e.Type == corev1.EventTypeWarning && e.Reason == reason && e.InvolvedObject.Kind == "LinstorCluster" {
			out = append(out, e.Message)
		}
	}
	return out
}
