package render

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Default Secret names. Mode Secret names them in the spec; modes Generated and
// CertManager write them (to the spec's names when given).
const (
	DefaultInternalTLSSecret  = "linstor-internal-tls"
	DefaultAPITLSSecret       = "linstor-api-tls"
	DefaultAPIClientTLSSecret = "linstor-client-tls"
	// The generated CAs. They sign the Secrets above and hold the only copy of their keys.
	InternalCASecret = "linstor-internal-ca"
	APICASecret      = "linstor-api-ca"
)

// Where the LINSTOR images expect PEM files; their entrypoint converts them into the
// Java keystores LINSTOR reads, in an emptyDir next to them.
const (
	internalPEMDir = "/etc/linstor/ssl-pem"
	internalJKSDir = "/etc/linstor/ssl"
	apiPEMDir      = "/etc/linstor/https-pem"
	apiJKSDir      = "/etc/linstor/https"
	clientPEMDir   = "/etc/linstor/client"
	// keystorePassword only protects the in-pod keystore copies the entrypoint writes
	// from the mounted PEM files; the keys are as protected as the Secret they come from.
	keystorePassword = "linstor"
)

// AnnotationTLSHash on a pod template carries a hash of the certificates it mounts, so
// a renewed certificate rolls the pods (LINSTOR reads its keystores at start).
const AnnotationTLSHash = "linstor.io/tls-hash"

// InternalTLSMode is the mode controller-satellite traffic runs with: the spec's, or
// DefaultTLSMode for an unset channel.
func InternalTLSMode(c *linstorv1.LinstorCluster) linstorv1.TLSMode {
	if t := c.Spec.TLS; t != nil && t.Internal != nil {
		return modeOrGenerated(t.Internal.Mode)
	}
	return DefaultTLSMode(c)
}

// APITLSMode is the mode of the REST API: the spec's, or DefaultTLSMode for an unset
// channel.
func APITLSMode(c *linstorv1.LinstorCluster) linstorv1.TLSMode {
	if t := c.Spec.TLS; t != nil && t.API != nil {
		return modeOrGenerated(t.API.Mode)
	}
	return DefaultTLSMode(c)
}

// modeOrGenerated: the CRD defaults mode to Generated; an object that skipped
// defaulting (a client of the Go types, a test) means the same.
func modeOrGenerated(m linstorv1.TLSMode) linstorv1.TLSMode {
	if m == "" {
		return linstorv1.TLSGenerated
	}
	return m
}

// DefaultTLSMode is the mode of a channel spec.tls leaves unset.
//
// With an external controller it is Disabled: the operator neither runs nor configures
// that controller, so it cannot know whether it expects SSL satellites; spec.tls says so.
// Otherwise it is RecordedTLSDefault.
func DefaultTLSMode(c *linstorv1.LinstorCluster) linstorv1.TLSMode {
	if c.Spec.ExternalController != nil {
		return linstorv1.TLSDisabled
	}
	return RecordedTLSDefault(c)
}

// RecordedTLSDefault is the default decided once per cluster and kept in
// status.tls.defaultMode. Before it is recorded it is decided from the object alone,
// so that every reader (the cluster and satellite controllers, the LINSTOR connector)
// decides alike from whatever copy of the object it holds:
//   - Generated for a cluster no operator has reconciled yet (no conditions, no
//     observed generation): nothing runs that TLS could disturb;
//   - Disabled for one an operator that did not record a default reconciled: it runs
//     without TLS, and switching would restart the controller and every satellite at
//     once and move the API to HTTPS under its clients. Its admin switches explicitly.
//
// The cluster controller records the decision in the same status write that first
// sets conditions, so a new cluster never looks like an old one.
func RecordedTLSDefault(c *linstorv1.LinstorCluster) linstorv1.TLSMode {
	if st := c.Status.TLS; st != nil && st.DefaultMode != "" {
		return st.DefaultMode
	}
	if len(c.Status.Conditions) > 0 || c.Status.ObservedGeneration > 0 {
		return linstorv1.TLSDisabled
	}
	return linstorv1.TLSGenerated
}

// InternalTLSEnabled reports whether controller-satellite traffic uses TLS.
func InternalTLSEnabled(c *linstorv1.LinstorCluster) bool {
	return InternalTLSMode(c) != linstorv1.TLSDisabled
}

// APITLSEnabled reports whether the REST API is served over HTTPS with client certificates.
func APITLSEnabled(c *linstorv1.LinstorCluster) bool {
	return APITLSMode(c) != linstorv1.TLSDisabled
}

// internalTLS and apiTLS are the spec's channel configuration, empty when unset.
func internalTLS(c *linstorv1.LinstorCluster) linstorv1.TLSConfig {
	if t := c.Spec.TLS; t != nil && t.Internal != nil {
		return *t.Internal
	}
	return linstorv1.TLSConfig{}
}

func apiTLS(c *linstorv1.LinstorCluster) linstorv1.TLSConfig {
	if t := c.Spec.TLS; t != nil && t.API != nil {
		return *t.API
	}
	return linstorv1.TLSConfig{}
}

// InternalTLSIssuer is the cert-manager issuer of the internal channel (mode CertManager).
func InternalTLSIssuer(c *linstorv1.LinstorCluster) *linstorv1.IssuerReference {
	return internalTLS(c).IssuerRef
}

// APITLSIssuer is the cert-manager issuer of the API channel (mode CertManager).
func APITLSIssuer(c *linstorv1.LinstorCluster) *linstorv1.IssuerReference {
	return apiTLS(c).IssuerRef
}

// InternalTLSSecretName holds ca.crt, tls.crt and tls.key shared by controller and satellites.
func InternalTLSSecretName(c *linstorv1.LinstorCluster) string {
	if name := internalTLS(c).SecretName; InternalTLSEnabled(c) && name != "" {
		return name
	}
	return DefaultInternalTLSSecret
}

// APITLSSecretName holds the API server certificate.
func APITLSSecretName(c *linstorv1.LinstorCluster) string {
	if name := apiTLS(c).SecretName; APITLSEnabled(c) && name != "" {
		return name
	}
	return DefaultAPITLSSecret
}

// APIClientSecretName holds the client certificate of the operator, CSI and HA controller.
// With an external controller it is the one given there.
func APIClientSecretName(c *linstorv1.LinstorCluster) string {
	if ext := c.Spec.ExternalController; ext != nil && ext.ClientCertificateSecretRef != nil {
		return ext.ClientCertificateSecretRef.Name
	}
	if name := apiTLS(c).ClientSecretName; APITLSEnabled(c) && name != "" {
		return name
	}
	return DefaultAPIClientTLSSecret
}

// UsesAPIClientCertificate: the workloads talking to LINSTOR present a client certificate.
func UsesAPIClientCertificate(c *linstorv1.LinstorCluster) bool {
	if ext := c.Spec.ExternalController; ext != nil {
		return ext.ClientCertificateSecretRef != nil
	}
	return APITLSEnabled(c)
}

// APIServerDNSNames are the names the API certificate must carry.
func APIServerDNSNames(c *linstorv1.LinstorCluster) []string {
	return []string{
		ControllerName,
		ControllerName + "." + c.Namespace,
		ControllerName + "." + c.Namespace + ".svc",
		ControllerName + "." + c.Namespace + ".svc.cluster.local",
	}
}

// ServiceURL is where workloads in the cluster reach the controller the operator deploys.
func ServiceURL(c *linstorv1.LinstorCluster) string {
	if APITLSEnabled(c) {
		return fmt.Sprintf("https://%s.%s.svc:%d", ControllerName, c.Namespace, SecureAPIPort)
	}
	return fmt.Sprintf("http://%s.%s.svc:%d", ControllerName, c.Namespace, APIPort)
}

// httpsTOML is the controller's HTTPS section: client certificates are verified
// against the API CA, and plain HTTP only answers on the pod's loopback.
func httpsTOML() string {
	return fmt.Sprintf(`
[http]
  listen_addr = "127.0.0.1"

[https]
  enabled = true
  keystore = %q
  keystore_password = %q
  truststore = %q
  truststore_password = %q
`, apiJKSDir+"/keystore.jks", keystorePassword, apiJKSDir+"/truststore.jks", keystorePassword)
}

// satelliteTOML configures a satellite for SSL on the internal port.
func satelliteTOML() string {
	return fmt.Sprintf(`[netcom]
  type = "ssl"
  port = %d
  server_certificate = %q
  key_password = %q
  keystore_password = %q
  trusted_certificates = %q
  truststore_password = %q
  ssl_protocol = "TLSv1.3"
`, SatelliteSecurePort, internalJKSDir+"/keystore.jks", keystorePassword, keystorePassword, internalJKSDir+"/certificates.jks", keystorePassword)
}

// pemVolumes mounts a PEM Secret and the emptyDir the entrypoint converts it into.
func pemVolumes(name, secret, pemDir, jksDir string) ([]corev1.Volume, []corev1.VolumeMount) {
	return []corev1.Volume{
			{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}},
			{Name: "java-" + name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		}, []corev1.VolumeMount{
			{Name: name, MountPath: pemDir, ReadOnly: true},
			{Name: "java-" + name, MountPath: jksDir},
		}
}

// clientCertEnv is how golinstor-based workloads (CSI, HA controller) get their client
// certificate: PEM contents in these variables.
func clientCertEnv(secret string) []corev1.EnvVar {
	ref := func(key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}
	}
	return []corev1.EnvVar{
		{Name: "LS_ROOT_CA", ValueFrom: ref("ca.crt")},
		{Name: "LS_USER_CERTIFICATE", ValueFrom: ref("tls.crt")},
		{Name: "LS_USER_KEY", ValueFrom: ref("tls.key")},
	}
}

// WithSecretFingerprints annotates each pod template with the fingerprints of the
// Secrets it mounts or reads into its environment, among those given, so that a renewed
// certificate rolls exactly the pods that use it.
func WithSecretFingerprints(objs Objects, fingerprints map[string]string) Objects {
	for _, o := range objs {
		var tmpl *corev1.PodTemplateSpec
		switch w := o.(type) {
		case *appsv1.Deployment:
			tmpl = &w.Spec.Template
		case *appsv1.DaemonSet:
			tmpl = &w.Spec.Template
		default:
			continue
		}
		var parts []string
		for _, name := range secretsOf(&tmpl.Spec) {
			if fp, ok := fingerprints[name]; ok {
				parts = append(parts, name+"="+fp)
			}
		}
		if len(parts) == 0 {
			continue
		}
		if tmpl.Annotations == nil {
			tmpl.Annotations = map[string]string{}
		}
		tmpl.Annotations[AnnotationTLSHash] = strings.Join(parts, ",")
	}
	return objs
}

// secretsOf lists, sorted and unique, the Secrets a pod spec mounts or reads.
func secretsOf(spec *corev1.PodSpec) []string {
	set := map[string]bool{}
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			set[v.Secret.SecretName] = true
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					set[src.Secret.Name] = true
				}
			}
		}
	}
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				set[e.ValueFrom.SecretKeyRef.Name] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// InternalCAReference is the CA that verifies controller-satellite peers instead of the
// ca.crt of the internal Secret: spec.tls.internal.caReference, in the modes that use it.
func InternalCAReference(c *linstorv1.LinstorCluster) *linstorv1.CAReference {
	if m := InternalTLSMode(c); m == linstorv1.TLSSecret || m == linstorv1.TLSCertManager {
		return internalTLS(c).CAReference
	}
	return nil
}

// APICAReference is the CA that verifies the API's server and client certificates
// instead of the ca.crt of the API Secrets: spec.tls.api.caReference, in the modes that
// use it.
func APICAReference(c *linstorv1.LinstorCluster) *linstorv1.CAReference {
	if m := APITLSMode(c); m == linstorv1.TLSSecret || m == linstorv1.TLSCertManager {
		return apiTLS(c).CAReference
	}
	return nil
}

// CAKey is the key of a CA reference, ca.crt when unset.
func CAKey(ref *linstorv1.CAReference) string {
	if ref.Key == "" {
		return "ca.crt"
	}
	return ref.Key
}

// CAIsConfigMap: the reference names a ConfigMap (unset kind means Secret).
func CAIsConfigMap(ref *linstorv1.CAReference) bool { return ref.Kind == "ConfigMap" }

// WithCAReferences makes every container that verifies a TLS peer take its CA from the
// channel's caReference: a volume of a channel Secret becomes a projected volume with
// the Secret's certificate and key and the reference's key as ca.crt (where the LINSTOR
// images read the CA), and the CA that golinstor clients read from LS_ROOT_CA comes
// from the reference. Without a reference objs are returned as they are.
func WithCAReferences(cluster *linstorv1.LinstorCluster, objs Objects) Objects {
	refs := map[string]*linstorv1.CAReference{}
	if ref := InternalCAReference(cluster); ref != nil {
		refs[InternalTLSSecretName(cluster)] = ref
	}
	if ref := APICAReference(cluster); ref != nil {
		refs[APITLSSecretName(cluster)] = ref
		refs[APIClientSecretName(cluster)] = ref
	}
	if len(refs) == 0 {
		return objs
	}
	for _, o := range objs {
		tmpl := podTemplate(o)
		if tmpl == nil {
			continue
		}
		for i := range tmpl.Spec.Volumes {
			v := &tmpl.Spec.Volumes[i]
			if v.Secret == nil || refs[v.Secret.SecretName] == nil {
				continue
			}
			ref := refs[v.Secret.SecretName]
			v.VolumeSource = corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: v.Secret.SecretName},
					Items: []corev1.KeyToPath{{Key: corev1.TLSCertKey, Path: corev1.TLSCertKey}, {Key: corev1.TLSPrivateKeyKey, Path: corev1.TLSPrivateKeyKey}}}},
				caProjection(ref),
			}}}
		}
		for _, list := range [][]corev1.Container{tmpl.Spec.InitContainers, tmpl.Spec.Containers} {
			for i := range list {
				for j := range list[i].Env {
					e := &list[i].Env[j]
					if e.Name != "LS_ROOT_CA" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || refs[e.ValueFrom.SecretKeyRef.Name] == nil {
						continue
					}
					e.ValueFrom = caEnvSource(refs[e.ValueFrom.SecretKeyRef.Name])
				}
			}
		}
	}
	return objs
}

func caProjection(ref *linstorv1.CAReference) corev1.VolumeProjection {
	items := []corev1.KeyToPath{{Key: CAKey(ref), Path: "ca.crt"}}
	if CAIsConfigMap(ref) {
		return corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Items: items}}
	}
	return corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Items: items}}
}

func caEnvSource(ref *linstorv1.CAReference) *corev1.EnvVarSource {
	if CAIsConfigMap(ref) {
		return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: CAKey(ref)}}
	}
	return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: CAKey(ref)}}
}
