package render

import (
	"strings"
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/clustertls"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
)

// reconciled is the status an operator leaves after its first pass: conditions set.
var reconciled = linstorv1.LinstorClusterStatus{Conditions: []metav1.Condition{{Type: linstorv1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: linstorv1.ReasonAsExpected}}}

func TestTLSModes(t *testing.T) {
	disabled := &linstorv1.TLSConfig{Mode: linstorv1.TLSDisabled}
	cases := []struct {
		name          string
		spec          linstorv1.LinstorClusterSpec
		status        linstorv1.LinstorClusterStatus
		internal, api linstorv1.TLSMode
		recorded      linstorv1.TLSMode
	}{
		{"a new cluster is encrypted", linstorv1.LinstorClusterSpec{}, linstorv1.LinstorClusterStatus{},
			linstorv1.TLSGenerated, linstorv1.TLSGenerated, linstorv1.TLSGenerated},
		{"an empty tls section is the default", linstorv1.LinstorClusterSpec{TLS: &linstorv1.TLSSpec{}}, linstorv1.LinstorClusterStatus{},
			linstorv1.TLSGenerated, linstorv1.TLSGenerated, linstorv1.TLSGenerated},
		{"a channel without a mode is Generated (the CRD default)", linstorv1.LinstorClusterSpec{TLS: &linstorv1.TLSSpec{Internal: &linstorv1.TLSConfig{}}}, reconciled,
			linstorv1.TLSGenerated, linstorv1.TLSDisabled, linstorv1.TLSDisabled},
		{"Disabled only when said", linstorv1.LinstorClusterSpec{TLS: &linstorv1.TLSSpec{Internal: disabled, API: disabled}}, linstorv1.LinstorClusterStatus{},
			linstorv1.TLSDisabled, linstorv1.TLSDisabled, linstorv1.TLSGenerated},
		{"one channel Disabled, the other default", linstorv1.LinstorClusterSpec{TLS: &linstorv1.TLSSpec{API: disabled}}, linstorv1.LinstorClusterStatus{},
			linstorv1.TLSGenerated, linstorv1.TLSDisabled, linstorv1.TLSGenerated},
		{"a cluster an earlier operator ran keeps running plain", linstorv1.LinstorClusterSpec{}, reconciled,
			linstorv1.TLSDisabled, linstorv1.TLSDisabled, linstorv1.TLSDisabled},
		{"so does one with only an observed generation", linstorv1.LinstorClusterSpec{}, linstorv1.LinstorClusterStatus{ObservedGeneration: 3},
			linstorv1.TLSDisabled, linstorv1.TLSDisabled, linstorv1.TLSDisabled},
		{"the recorded default wins over the conditions", linstorv1.LinstorClusterSpec{}, withDefault(reconciled, linstorv1.TLSGenerated),
			linstorv1.TLSGenerated, linstorv1.TLSGenerated, linstorv1.TLSGenerated},
		{"a recorded Disabled stays", linstorv1.LinstorClusterSpec{}, withDefault(linstorv1.LinstorClusterStatus{}, linstorv1.TLSDisabled),
			linstorv1.TLSDisabled, linstorv1.TLSDisabled, linstorv1.TLSDisabled},
		{"an old cluster is switched by saying so", linstorv1.LinstorClusterSpec{TLS: &linstorv1.TLSSpec{Internal: &linstorv1.TLSConfig{Mode: linstorv1.TLSGenerated}}}, reconciled,
			linstorv1.TLSGenerated, linstorv1.TLSDisabled, linstorv1.TLSDisabled},
		{"lifecycle progress alone does not make a cluster old", linstorv1.LinstorClusterSpec{}, linstorv1.LinstorClusterStatus{Deployed: &linstorv1.DeployedVersions{Controller: "1.33.3"}},
			linstorv1.TLSGenerated, linstorv1.TLSGenerated, linstorv1.TLSGenerated},
		{"an external controller gets no invented TLS", linstorv1.LinstorClusterSpec{ExternalController: &linstorv1.ExternalControllerSpec{URL: "https://linstor:3371"}}, linstorv1.LinstorClusterStatus{},
			linstorv1.TLSDisabled, linstorv1.TLSDisabled, linstorv1.TLSGenerated},
		{"an external controller's satellites use TLS when told", linstorv1.LinstorClusterSpec{ExternalController: &linstorv1.ExternalControllerSpec{URL: "https://linstor:3371"},
			TLS: &linstorv1.TLSSpec{Internal: &linstorv1.TLSConfig{Mode: linstorv1.TLSSecret, SecretName: "sat"}}}, linstorv1.LinstorClusterStatus{},
			linstorv1.TLSSecret, linstorv1.TLSDisabled, linstorv1.TLSGenerated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster(tc.spec)
			c.Status = tc.status
			if got := clustertls.InternalTLSMode(c); got != tc.internal {
				t.Errorf("internal = %s, want %s", got, tc.internal)
			}
			if got := clustertls.APITLSMode(c); got != tc.api {
				t.Errorf("api = %s, want %s", got, tc.api)
			}
			if got := clustertls.RecordedTLSDefault(c); got != tc.recorded {
				t.Errorf("recorded default = %s, want %s", got, tc.recorded)
			}
			if clustertls.InternalTLSEnabled(c) != (tc.internal != linstorv1.TLSDisabled) || clustertls.APITLSEnabled(c) != (tc.api != linstorv1.TLSDisabled) {
				t.Error("the Enabled helpers disagree with the modes")
			}
		})
	}
}

func withDefault(st linstorv1.LinstorClusterStatus, mode linstorv1.TLSMode) linstorv1.LinstorClusterStatus {
	st.TLS = &linstorv1.TLSStatus{DefaultMode: mode}
	return st
}

// What the workloads look like by default and with both channels Disabled.
func TestDefaultRendersTLSEverywhere(t *testing.T) {
	disabled := &linstorv1.TLSConfig{Mode: linstorv1.TLSDisabled}
	for _, tc := range []struct {
		name   string
		spec   linstorv1.LinstorClusterSpec
		secure bool
	}{
		{"default", linstorv1.LinstorClusterSpec{}, true},
		{"disabled", linstorv1.LinstorClusterSpec{TLS: &linstorv1.TLSSpec{Internal: disabled, API: disabled}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster(tc.spec)
			ctrl, err := Controller(c, images.Default())
			if err != nil {
				t.Fatal(err)
			}
			var svc *corev1.Service
			var deploy *appsv1.Deployment
			var toml string
			for _, o := range ctrl {
				switch o := o.(type) {
				case *corev1.Service:
					svc = o
				case *appsv1.Deployment:
					deploy = o
				case *corev1.ConfigMap:
					toml = o.Data["linstor.toml"]
				}
			}
			if got := strings.Contains(toml, "[https]\n  enabled = true"); got != tc.secure {
				t.Errorf("HTTPS in linstor.toml: %t, want %t\n%s", got, tc.secure, toml)
			}
			ports := map[int32]bool{}
			for _, p := range svc.Spec.Ports {
				ports[p.Port] = true
			}
			if ports[names.APIPort] == tc.secure || !ports[names.SecureAPIPort] {
				t.Errorf("Service ports %v: plain 3370 must be served only without API TLS", svc.Spec.Ports)
			}
			mounts := secretsOf(&deploy.Spec.Template.Spec)
			wantMounts := []string{names.DefaultAPITLSSecret, names.DefaultAPIClientTLSSecret, names.DefaultInternalTLSSecret} // sorted
			if !tc.secure {
				wantMounts = []string{}
			}
			if strings.Join(mounts, ",") != strings.Join(wantMounts, ",") {
				t.Errorf("controller mounts %v, want %v", mounts, wantMounts)
			}

			url := clustertls.ServiceURL(c)
			if want := map[bool]string{true: "https://linstor-controller.storage.svc:3371", false: "http://linstor-controller.storage.svc:3370"}[tc.secure]; url != want {
				t.Errorf("ServiceURL = %s, want %s", url, want)
			}
			csi, err := CSI(c, images.Default(), url)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range csi {
				var spec *corev1.PodSpec
				switch o := o.(type) {
				case *appsv1.Deployment:
					spec = &o.Spec.Template.Spec
				case *appsv1.DaemonSet:
					spec = &o.Spec.Template.Spec
				default:
					continue
				}
				if got := len(secretsOf(spec)) == 1 && secretsOf(spec)[0] == names.DefaultAPIClientTLSSecret; got != tc.secure {
					t.Errorf("%s reads the client certificate: %t, want %t (%v)", o.GetName(), got, tc.secure, secretsOf(spec))
				}
			}

			sat := &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "storage"}}
			objs, err := Satellite(c, sat, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, images.Default())
			if err != nil {
				t.Fatal(err)
			}
			port := objs[0].(*appsv1.DaemonSet).Spec.Template.Spec.Containers[0].Ports[0].ContainerPort
			if want := map[bool]int32{true: names.SatelliteSecurePort, false: names.SatellitePort}[tc.secure]; port != want {
				t.Errorf("satellite port %d, want %d", port, want)
			}
			if got := hasObject(SatelliteConfig(c), names.SatelliteConfigName); got != tc.secure {
				t.Errorf("satellite SSL configuration rendered: %t, want %t", got, tc.secure)
			}
		})
	}
}

func TestCAReference(t *testing.T) {
	cm := &linstorv1.CAReference{Kind: "ConfigMap", Name: "company-ca", Key: "bundle.pem"}
	sec := &linstorv1.CAReference{Name: "api-ca"} // kind and key defaulted
	c := cluster(linstorv1.LinstorClusterSpec{TLS: &linstorv1.TLSSpec{
		Internal: &linstorv1.TLSConfig{Mode: linstorv1.TLSSecret, SecretName: "internal", CAReference: cm},
		API:      &linstorv1.TLSConfig{Mode: linstorv1.TLSCertManager, IssuerRef: &linstorv1.IssuerReference{Name: "issuer"}, CAReference: sec},
	}})
	var objs Objects
	for _, part := range []func() (Objects, error){
		func() (Objects, error) { return Controller(c, images.Default()) },
		func() (Objects, error) { return CSI(c, images.Default(), clustertls.ServiceURL(c)) },
		func() (Objects, error) { return HAController(c, images.Default()) },
		func() (Objects, error) {
			return Satellite(c, &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: "n", Namespace: "storage"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, images.Default())
		},
	} {
		o, err := part()
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o...)
	}
	objs = WithSecretFingerprints(WithCAReferences(c, objs), map[string]string{"internal": "fp1"})

	// projected describes a volume: "secret:name[keys] configMap:name[key->path]".
	projected := func(tmpl *corev1.PodTemplateSpec, volume string) string {
		for _, v := range tmpl.Spec.Volumes {
			if v.Name != volume {
				continue
			}
			if v.Projected == nil {
				return "not projected"
			}
			var parts []string
			for _, s := range v.Projected.Sources {
				var name string
				var items []corev1.KeyToPath
				switch {
				case s.Secret != nil:
					name, items = "secret:"+s.Secret.Name, s.Secret.Items
				case s.ConfigMap != nil:
					name, items = "configMap:"+s.ConfigMap.Name, s.ConfigMap.Items
				}
				var keys []string
				for _, i := range items {
					keys = append(keys, i.Key+"->"+i.Path)
				}
				parts = append(parts, name+"["+strings.Join(keys, ",")+"]")
			}
			return strings.Join(parts, " ")
		}
		return "missing"
	}
	const internalWant = "secret:internal[tls.crt->tls.crt,tls.key->tls.key] configMap:company-ca[bundle.pem->ca.crt]"
	ctrl := podTemplate(find[appsv1.Deployment](objs, names.ControllerName))
	for volume, want := range map[string]string{
		"internal-tls": internalWant,
		"api-tls":      "secret:" + names.DefaultAPITLSSecret + "[tls.crt->tls.crt,tls.key->tls.key] secret:api-ca[ca.crt->ca.crt]",
		"client-tls":   "secret:" + names.DefaultAPIClientTLSSecret + "[tls.crt->tls.crt,tls.key->tls.key] secret:api-ca[ca.crt->ca.crt]",
	} {
		if got := projected(ctrl, volume); got != want {
			t.Errorf("controller volume %s: %s, want %s", volume, got, want)
		}
	}
	sat := podTemplate(find[appsv1.DaemonSet](objs, names.SatelliteDaemonSetName("n")))
	if got := projected(sat, "internal-tls"); got != internalWant {
		t.Errorf("satellite volume: %s, want %s", got, internalWant)
	}
	// A renewed channel certificate still rolls the pods that mount it.
	if got := sat.Annotations[names.AnnotationTLSHash]; got != "internal=fp1" {
		t.Errorf("satellite fingerprint annotation %q", got)
	}
	// golinstor clients read the CA from LS_ROOT_CA.
	for _, name := range []string{names.CSIControllerName, names.CSINodeName, names.HAControllerName} {
		var tmpl *corev1.PodTemplateSpec
		if d := find[appsv1.Deployment](objs, name); d != nil {
			tmpl = &d.Spec.Template
		} else {
			tmpl = &find[appsv1.DaemonSet](objs, name).Spec.Template
		}
		for _, ctr := range tmpl.Spec.Containers {
			for _, e := range ctr.Env {
				if e.Name != "LS_ROOT_CA" {
					continue
				}
				if ref := e.ValueFrom.SecretKeyRef; ref == nil || ref.Name != "api-ca" || ref.Key != "ca.crt" {
					t.Errorf("%s/%s LS_ROOT_CA from %+v, want Secret api-ca key ca.crt", name, ctr.Name, e.ValueFrom)
				}
			}
		}
	}

	// Generated certificates are verified by the operator's own CA: a reference left
	// over from another mode changes nothing.
	gen := cluster(linstorv1.LinstorClusterSpec{TLS: &linstorv1.TLSSpec{Internal: &linstorv1.TLSConfig{Mode: linstorv1.TLSGenerated, CAReference: cm}}})
	if clustertls.InternalCAReference(gen) != nil {
		t.Error("a Generated channel uses a caReference")
	}
	plain, _ := Controller(gen, images.Default())
	if got := projected(podTemplate(find[appsv1.Deployment](WithCAReferences(gen, plain), names.ControllerName)), "internal-tls"); got != "not projected" {
		t.Errorf("Generated channel: %s", got)
	}
}
