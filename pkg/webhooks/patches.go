package webhooks

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/render"
)

// Patches (spec.<component>.patches) are judged on a dry render, as the controllers
// apply them (pkg/render WithClusterPatches): each parses, selects an object the
// component renders, leaves the operator's names and selectors alone, applies, and adds
// no privilege the cluster's podTemplatePolicy does not allow. As for podTemplate, an
// update that keeps the spec is not judged again.

// clusterPatchErrors judges a LinstorCluster's patches.
func clusterPatchErrors(cluster *linstorv1.LinstorCluster, old runtime.Object) field.ErrorList {
	if o, ok := old.(*linstorv1.LinstorCluster); ok && equality.Semantic.DeepEqual(o.Spec, cluster.Spec) {
		return nil
	}
	return render.ClusterPatchErrors(cluster, probeImages)
}

// satelliteConfigurationPatchErrors judges a LinstorSatelliteConfiguration's patches,
// all but the privilege they add, against the satellite of a cluster with the defaults.
func satelliteConfigurationPatchErrors(cfg *linstorv1.LinstorSatelliteConfiguration) field.ErrorList {
	return render.SatelliteConfigurationPatchErrors(nil, cfg, probeImages)
}

// satelliteConfigurationPatchEscalations refuses a LinstorSatelliteConfiguration's
// patches that add privilege to the satellite the LinstorCluster renders, under its
// policy (the rest is judged with the spec, SpecErrors).
func satelliteConfigurationPatchEscalations(ctx context.Context, reader client.Reader, cfg *linstorv1.LinstorSatelliteConfiguration, old runtime.Object) field.ErrorList {
	if len(cfg.Spec.Patches) == 0 {
		return nil
	}
	if o, ok := old.(*linstorv1.LinstorSatelliteConfiguration); ok && equality.Semantic.DeepEqual(o.Spec, cfg.Spec) {
		return nil
	}
	cluster, err := policyCluster(ctx, reader)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec", "patches"), err)}
	}
	return render.SatelliteConfigurationPatchEscalations(cluster, cfg, probeImages)
}
