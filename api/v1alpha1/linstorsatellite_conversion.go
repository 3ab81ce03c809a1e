package v1alpha1

import (
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	lossless "github.com/linstor-operator/linstor-operator/pkg/conversion"
)

var satelliteSpec = lossless.Part[linstorv1.LinstorSatelliteSpec, LinstorSatelliteSpec]{
	ToSpoke: func(in *linstorv1.LinstorSatelliteSpec) LinstorSatelliteSpec {
		return LinstorSatelliteSpec{
			ClusterName:    in.ClusterRef.Name,
			StoragePools:   poolsToSpoke(in.StoragePools),
			NodeProperties: propertiesToMap(in.Properties),
		}
	},
	ToHub: func(in *LinstorSatelliteSpec) linstorv1.LinstorSatelliteSpec {
		return linstorv1.LinstorSatelliteSpec{
			ClusterRef:   linstorv1.ClusterReference{Name: in.ClusterName},
			StoragePools: poolsToHub(&in.StoragePools),
			Properties:   propertiesFromMap(in.NodeProperties),
		}
	},
	Overlay: func(base, from *linstorv1.LinstorSatelliteSpec) {
		base.ClusterRef = from.ClusterRef
		base.StoragePools = overlayPools(base.StoragePools, from.StoragePools)
		base.Properties = overlayProperties(base.Properties, from.Properties)
	},
}

var satelliteStatus = lossless.Part[linstorv1.LinstorSatelliteStatus, LinstorSatelliteStatus]{
	ToSpoke: func(in *linstorv1.LinstorSatelliteStatus) LinstorSatelliteStatus {
		return LinstorSatelliteStatus{Conditions: in.Conditions, ObservedGeneration: in.ObservedGeneration, ConnectionStatus: in.ConnectionStatus}
	},
	ToHub: func(in *LinstorSatelliteStatus) linstorv1.LinstorSatelliteStatus {
		return linstorv1.LinstorSatelliteStatus{Conditions: in.Conditions, ObservedGeneration: in.ObservedGeneration, ConnectionStatus: in.ConnectionStatus}
	},
	Overlay: func(base, from *linstorv1.LinstorSatelliteStatus) {
		base.Conditions, base.ObservedGeneration, base.ConnectionStatus = from.Conditions, from.ObservedGeneration, from.ConnectionStatus
	},
}

// ConvertTo converts this LinstorSatellite to the hub version.
func (src *LinstorSatellite) ConvertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*linstorv1.LinstorSatellite)
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	return lossless.ToHub(&dst.ObjectMeta, satelliteSpec, &src.Spec, &dst.Spec, satelliteStatus, &src.Status, &dst.Status)
}

// ConvertFrom converts from the hub version to this version.
func (dst *LinstorSatellite) ConvertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*linstorv1.LinstorSatellite)
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	return lossless.ToSpoke(&dst.ObjectMeta, satelliteSpec, &src.Spec, &dst.Spec, satelliteStatus, &src.Status, &dst.Status)
}
