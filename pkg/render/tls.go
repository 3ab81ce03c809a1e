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

// InternalTLSEnabled reports whether controller-satellite traffic uses TLS.
func InternalTLSEnabled(c *linstorv1.LinstorCluster) bool {
	return c.Spec.TLS != nil && c.Spec.TLS.Internal != nil && c.Spec.TLS.Internal.Mode != linstorv1.TLSDisabled
}

// APITLSEnabled reports whether the REST API is served over HTTPS with client certificates.
func APITLSEnabled(c *linstorv1.LinstorCluster) bool {
	return c.Spec.TLS != nil && c.Spec.TLS.API != nil && c.Spec.TLS.API.Mode != linstorv1.TLSDisabled
}

// InternalTLSSecretName holds ca.crt, tls.crt and tls.key shared by controller and satellites.
func InternalTLSSecretName(c *linstorv1.LinstorCluster) string {
	if InternalTLSEnabled(c) && c.Spec.TLS.Internal.SecretName != "" {
		return c.Spec.TLS.Internal.SecretName
	}
	return DefaultInternalTLSSecret
}

// APITLSSecretName holds the API server certificate.
func APITLSSecretName(c *linstorv1.LinstorCluster) string {
	if APITLSEnabled(c) && c.Spec.TLS.API.SecretName != "" {
		return c.Spec.TLS.API.SecretName
	}
	return DefaultAPITLSSecret
}

// APIClientSecretName holds the client certificate of the operator, CSI and HA controller.
// With an external controller it is the one given there.
func APIClientSecretName(c *linstorv1.LinstorCluster) string {
	if ext := c.Spec.ExternalController; ext != nil && ext.ClientCertificateSecretRef != nil {
		return ext.ClientCertificateSecretRef.Name
	}
	if APITLSEnabled(c) && c.Spec.TLS.API.ClientSecretName != "" {
		return c.Spec.TLS.API.ClientSecretName
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
