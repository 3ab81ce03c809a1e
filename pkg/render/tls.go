package render

import (
	"fmt"
	"sort"
	"strings"

	"github.com/linstor-operator/linstor-operator/pkg/clustertls"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Default Secret names. Mode Secret names them in the spec; modes Generated and
// CertManager write them (to the spec's names when given).

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
`, names.SatelliteSecurePort, internalJKSDir+"/keystore.jks", keystorePassword, keystorePassword, internalJKSDir+"/certificates.jks", keystorePassword)
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
		tmpl.Annotations[names.AnnotationTLSHash] = strings.Join(parts, ",")
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

// WithCAReferences makes every container that verifies a TLS peer take its CA from the
// channel's caReference: a volume of a channel Secret becomes a projected volume with
// the Secret's certificate and key and the reference's key as ca.crt (where the LINSTOR
// images read the CA), and the CA that golinstor clients read from LS_ROOT_CA comes
// from the reference. Without a reference objs are returned as they are.
func WithCAReferences(cluster *linstorv1.LinstorCluster, objs Objects) Objects {
	refs := map[string]*linstorv1.CAReference{}
	if ref := clustertls.InternalCAReference(cluster); ref != nil {
		refs[clustertls.InternalTLSSecretName(cluster)] = ref
	}
	if ref := clustertls.APICAReference(cluster); ref != nil {
		refs[clustertls.APITLSSecretName(cluster)] = ref
		refs[clustertls.APIClientSecretName(cluster)] = ref
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
	items := []corev1.KeyToPath{{Key: clustertls.CAKey(ref), Path: "ca.crt"}}
	if clustertls.CAIsConfigMap(ref) {
		return corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Items: items}}
	}
	return corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Items: items}}
}

func caEnvSource(ref *linstorv1.CAReference) *corev1.EnvVarSource {
	if clustertls.CAIsConfigMap(ref) {
		return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: clustertls.CAKey(ref)}}
	}
	return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: clustertls.CAKey(ref)}}
}
