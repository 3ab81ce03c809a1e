package v1alpha1

import (
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	lossless "github.com/linstor-operator/linstor-operator/pkg/conversion"
)

var satelliteConfigurationSpec = lossless.Part[linstorv1.LinstorSatelliteConfigurationSpec, LinstorSatelliteConfigurationSpec]{
	ToSpoke: func(in *linstorv1.LinstorSatelliteConfigurationSpec) LinstorSatelliteConfigurationSpec {
		return LinstorSatelliteConfigurationSpec{
			NodeSelector:   in.NodeSelector,
			StoragePools:   poolsToSpoke(in.StoragePools),
			NodeProperties: nodePropertiesToMap(in.Properties),
		}
	},
	ToHub: func(in *LinstorSatelliteConfigurationSpec) linstorv1.LinstorSatelliteConfigurationSpec {
		return linstorv1.LinstorSatelliteConfigurationSpec{
			NodeSelector: in.NodeSelector,
			StoragePools: poolsToHub(&in.StoragePools),
			Properties:   nodePropertiesFromMap(in.NodeProperties),
		}
	},
	Overlay: func(base, from *linstorv1.LinstorSatelliteConfigurationSpec) {
		base.NodeSelector = from.NodeSelector
		base.StoragePools = overlayPools(base.StoragePools, from.StoragePools)
		base.Properties = overlayNodeProperties(base.Properties, from.Properties)
	},
}

var satelliteConfigurationStatus = lossless.Part[linstorv1.LinstorSatelliteConfigurationStatus, LinstorSatelliteConfigurationStatus]{
	ToSpoke: func(in *linstorv1.LinstorSatelliteConfigurationStatus) LinstorSatelliteConfigurationStatus {
		return LinstorSatelliteConfigurationStatus{Conditions: in.Conditions, ObservedGeneration: in.ObservedGeneration}
	},
	ToHub: func(in *LinstorSatelliteConfigurationStatus) linstorv1.LinstorSatelliteConfigurationStatus {
		return linstorv1.LinstorSatelliteConfigurationStatus{Conditions: in.Conditions, ObservedGeneration: in.ObservedGeneration}
	},
	Overlay: func(base, from *linstorv1.LinstorSatelliteConfigurationStatus) {
		base.Conditions, base.ObservedGeneration = from.Conditions, from.ObservedGeneration
	},
}

// ConvertTo converts this LinstorSatelliteConfiguration to the hub version.
func (src *LinstorSatelliteConfiguration) ConvertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*linstorv1.LinstorSatelliteConfiguration)
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	return lossless.ToHub(&dst.ObjectMeta, satelliteConfigurationSpec, &src.Spec, &dst.Spec,
		satelliteConfigurationStatus, &src.Status, &dst.Status)
}

// ConvertFrom converts from the hub version to this version.
func (dst *LinstorSatelliteConfiguration) ConvertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*linstorv1.LinstorSatelliteConfiguration)
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	return lossless.ToSpoke(&dst.ObjectMeta, satelliteConfigurationSpec, &src.Spec, &dst.Spec,
		satelliteConfigurationStatus, &src.Status, &dst.Status)
}
