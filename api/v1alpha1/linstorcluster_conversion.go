package v1alpha1

import (
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	lossless "github.com/linstor-operator/linstor-operator/pkg/conversion"
)

var clusterSpec = lossless.Part[linstorv1.LinstorClusterSpec, LinstorClusterSpec]{
	ToSpoke: ConvertHubToLinstorClusterSpec,
	ToHub:   ConvertLinstorClusterSpecToHub,
	Overlay: overlayClusterSpec,
}

var clusterStatus = lossless.Part[linstorv1.LinstorClusterStatus, LinstorClusterStatus]{
	ToSpoke: func(in *linstorv1.LinstorClusterStatus) LinstorClusterStatus {
		return LinstorClusterStatus{Conditions: in.Conditions, ObservedGeneration: in.ObservedGeneration}
	},
	ToHub: func(in *LinstorClusterStatus) linstorv1.LinstorClusterStatus {
		return linstorv1.LinstorClusterStatus{Conditions: in.Conditions, ObservedGeneration: in.ObservedGeneration}
	},
	Overlay: func(base, from *linstorv1.LinstorClusterStatus) {
		base.Conditions, base.ObservedGeneration = from.Conditions, from.ObservedGeneration
	},
}

// ConvertTo converts this LinstorCluster to the hub version.
func (src *LinstorCluster) ConvertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*linstorv1.LinstorCluster)
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	return lossless.ToHub(&dst.ObjectMeta, clusterSpec, &src.Spec, &dst.Spec, clusterStatus, &src.Status, &dst.Status)
}

// ConvertFrom converts from the hub version to this version.
func (dst *LinstorCluster) ConvertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*linstorv1.LinstorCluster)
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	return lossless.ToSpoke(&dst.ObjectMeta, clusterSpec, &src.Spec, &dst.Spec, clusterStatus, &src.Status, &dst.Status)
}

// ConvertLinstorClusterSpecToHub maps the flat v1alpha1 fields to the v1 component specs.
func ConvertLinstorClusterSpecToHub(in *LinstorClusterSpec) linstorv1.LinstorClusterSpec {
	out := linstorv1.LinstorClusterSpec{
		NodeSelector: in.NodeSelector,
		Properties:   propertiesFromMap(in.ControllerProperties),
	}
	if in.ControllerImage != "" || in.ControllerReplicas != nil {
		out.Controller = &linstorv1.ControllerSpec{ComponentSpec: linstorv1.ComponentSpec{Image: in.ControllerImage}, Replicas: in.ControllerReplicas}
	}
	if in.SatelliteImage != "" {
		out.Satellite = &linstorv1.SatelliteSpec{ComponentSpec: linstorv1.ComponentSpec{Image: in.SatelliteImage}}
	}
	if in.CSIImage != "" || in.DisableCSI {
		out.CSI = &linstorv1.CSISpec{Image: in.CSIImage, Enabled: enabledFrom(in.DisableCSI)}
	}
	if in.HAControllerImage != "" || in.DisableHAController {
		out.HighAvailabilityController = &linstorv1.ComponentSpec{Image: in.HAControllerImage, Enabled: enabledFrom(in.DisableHAController)}
	}
	out.Database = databaseToHub(in.DBConnectionURL, in.DBCertSecret)
	if in.LuksSecret != "" {
		out.PassphraseSecretRef = &linstorv1.LocalSecretReference{Name: in.LuksSecret}
	}
	if in.SSLSecret != "" {
		out.TLS = &linstorv1.TLSSpec{Internal: &linstorv1.TLSConfig{Mode: linstorv1.TLSSecret, SecretName: in.SSLSecret}}
	}
	return out
}

// ConvertHubToLinstorClusterSpec keeps what the flat shape can express.
func ConvertHubToLinstorClusterSpec(in *linstorv1.LinstorClusterSpec) LinstorClusterSpec {
	out := LinstorClusterSpec{
		NodeSelector:         in.NodeSelector,
		ControllerProperties: propertiesToMap(in.Properties),
	}
	if c := in.Controller; c != nil {
		out.ControllerImage, out.ControllerReplicas = c.Image, c.Replicas
	}
	if in.Satellite != nil {
		out.SatelliteImage = in.Satellite.Image
	}
	if c := in.CSI; c != nil {
		out.CSIImage, out.DisableCSI = c.Image, disabled(c.Enabled)
	}
	if c := in.HighAvailabilityController; c != nil {
		out.HAControllerImage, out.DisableHAController = c.Image, disabled(c.Enabled)
	}
	out.DBConnectionURL, out.DBCertSecret = databaseToSpoke(in.Database)
	if in.PassphraseSecretRef != nil {
		out.LuksSecret = in.PassphraseSecretRef.Name
	}
	if in.TLS != nil && in.TLS.Internal != nil && in.TLS.Internal.Mode == linstorv1.TLSSecret {
		out.SSLSecret = in.TLS.Internal.SecretName
	}
	return out
}

func databaseToHub(url, certSecret string) *linstorv1.DatabaseSpec {
	if url == "" && certSecret == "" {
		return nil
	}
	db := &linstorv1.DatabaseSpec{}
	switch url {
	case "":
	case string(linstorv1.DatabaseK8s):
		db.Type = linstorv1.DatabaseK8s
	default:
		db.Type, db.ConnectionURL = linstorv1.DatabaseExternal, url
	}
	if certSecret != "" {
		db.ClientCertificateSecretRef = &linstorv1.LocalSecretReference{Name: certSecret}
	}
	return db
}

func databaseToSpoke(db *linstorv1.DatabaseSpec) (url, certSecret string) {
	if db == nil {
		return "", ""
	}
	switch db.Type {
	case linstorv1.DatabaseK8s:
		url = string(linstorv1.DatabaseK8s)
	case linstorv1.DatabaseExternal:
		url = db.ConnectionURL
	}
	if db.ClientCertificateSecretRef != nil {
		certSecret = db.ClientCertificateSecretRef.Name
	}
	return url, certSecret
}

// overlayClusterSpec applies an edit made through v1alpha1 on top of the kept v1 spec.
func overlayClusterSpec(base, from *linstorv1.LinstorClusterSpec) {
	base.NodeSelector = from.NodeSelector
	base.Properties = overlayProperties(base.Properties, from.Properties)

	if from.Controller != nil || base.Controller != nil {
		if base.Controller == nil {
			base.Controller = &linstorv1.ControllerSpec{}
		}
		f := ptrOr(from.Controller)
		base.Controller.Image, base.Controller.Replicas = f.Image, f.Replicas
	}
	if from.Satellite != nil || base.Satellite != nil {
		if base.Satellite == nil {
			base.Satellite = &linstorv1.SatelliteSpec{}
		}
		base.Satellite.Image = ptrOr(from.Satellite).Image
	}
	if from.CSI != nil || base.CSI != nil {
		if base.CSI == nil {
			base.CSI = &linstorv1.CSISpec{}
		}
		f := ptrOr(from.CSI)
		base.CSI.Image, base.CSI.Enabled = f.Image, overlayEnabled(base.CSI.Enabled, disabled(f.Enabled))
	}
	if from.HighAvailabilityController != nil || base.HighAvailabilityController != nil {
		if base.HighAvailabilityController == nil {
			base.HighAvailabilityController = &linstorv1.ComponentSpec{}
		}
		f := ptrOr(from.HighAvailabilityController)
		ha := base.HighAvailabilityController
		ha.Image, ha.Enabled = f.Image, overlayEnabled(ha.Enabled, disabled(f.Enabled))
	}
	base.Database = overlayDatabase(base.Database, from.Database)
	base.PassphraseSecretRef = from.PassphraseSecretRef
	base.TLS = overlayTLS(base.TLS, from.TLS)
}

// overlayProperties keeps the kept order of properties that still exist, then appends new ones.
func overlayProperties(base, from []linstorv1.Property) []linstorv1.Property {
	want := propertiesToMap(from)
	var out []linstorv1.Property
	seen := map[string]bool{}
	for _, p := range base {
		if v, ok := want[p.Name]; ok && !seen[p.Name] {
			out = append(out, linstorv1.Property{Name: p.Name, Value: v})
			seen[p.Name] = true
		}
	}
	for _, p := range from {
		if !seen[p.Name] {
			out = append(out, p)
			seen[p.Name] = true
		}
	}
	return out
}

func overlayDatabase(base, from *linstorv1.DatabaseSpec) *linstorv1.DatabaseSpec {
	fromURL, fromCert := databaseToSpoke(from)
	baseURL, baseCert := databaseToSpoke(base)
	if base != nil && fromURL == baseURL && fromCert == baseCert {
		return base
	}
	return from
}

func overlayTLS(base, from *linstorv1.TLSSpec) *linstorv1.TLSSpec {
	internalIsSecret := base != nil && base.Internal != nil && base.Internal.Mode == linstorv1.TLSSecret
	switch {
	case from == nil && !internalIsSecret:
		return base // sslSecret was not and is not set: hub-only TLS settings stay.
	case from == nil:
		base.Internal = nil
	default:
		if base == nil {
			base = &linstorv1.TLSSpec{}
		}
		if internalIsSecret {
			base.Internal.SecretName = from.Internal.SecretName
		} else {
			base.Internal = from.Internal
		}
	}
	if base.Internal == nil && base.API == nil {
		return nil
	}
	return base
}

func ptrOr[T any](p *T) *T {
	if p == nil {
		return new(T)
	}
	return p
}
