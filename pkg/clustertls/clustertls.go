// Package clustertls resolves the TLS a LinstorCluster runs with from its spec and
// status: each channel's mode, the Secrets and CA references it uses, and the URL
// workloads reach the API at. The builders, the controllers and the LINSTOR connector
// all decide from these functions, so they decide alike from whatever copy of the
// object they hold.
package clustertls

import (
	"fmt"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/names"
)

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
	return names.DefaultInternalTLSSecret
}

// APITLSSecretName holds the API server certificate.
func APITLSSecretName(c *linstorv1.LinstorCluster) string {
	if name := apiTLS(c).SecretName; APITLSEnabled(c) && name != "" {
		return name
	}
	return names.DefaultAPITLSSecret
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
	return names.DefaultAPIClientTLSSecret
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
		names.ControllerName,
		names.ControllerName + "." + c.Namespace,
		names.ControllerName + "." + c.Namespace + ".svc",
		names.ControllerName + "." + c.Namespace + ".svc.cluster.local",
	}
}

// ServiceURL is where workloads in the cluster reach the controller the operator deploys.
func ServiceURL(c *linstorv1.LinstorCluster) string {
	if APITLSEnabled(c) {
		return fmt.Sprintf("https://%s.%s.svc:%d", names.ControllerName, c.Namespace, names.SecureAPIPort)
	}
	return fmt.Sprintf("http://%s.%s.svc:%d", names.ControllerName, c.Namespace, names.APIPort)
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
