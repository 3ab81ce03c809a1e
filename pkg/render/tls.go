package render

import linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"

// InternalTLSEnabled reports whether controller-satellite traffic uses TLS.
func InternalTLSEnabled(c *linstorv1.LinstorCluster) bool {
	return c.Spec.TLS != nil && c.Spec.TLS.Internal != nil && c.Spec.TLS.Internal.Mode != linstorv1.TLSDisabled
}

// APITLSEnabled reports whether the REST API is served over HTTPS with client certificates.
func APITLSEnabled(c *linstorv1.LinstorCluster) bool {
	return c.Spec.TLS != nil && c.Spec.TLS.API != nil && c.Spec.TLS.API.Mode != linstorv1.TLSDisabled
}
