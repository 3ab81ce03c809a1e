package webhooks

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
	"github.com/linstor-operator/linstor-operator/pkg/render"
)

// Pod-template patches may not add privilege unless the LinstorCluster allows it
// (spec.podTemplatePolicy, pkg/render PodTemplateEscalation). The webhooks render each
// component without the patch to learn what it already has; only security fields are
// compared, so the compiled-in image set serves.
var probeImages = images.Default()

// clusterEscalations refuses the cluster's own patches that add privilege. An update
// that leaves the spec as it was (labels, annotations, the operator's finalizer) is not
// judged again: an object that predates the check must still be deletable, and its pods
// are not rendered with the patch anyway.
func clusterEscalations(cluster *linstorv1.LinstorCluster, old runtime.Object) field.ErrorList {
	if o, ok := old.(*linstorv1.LinstorCluster); ok && equality.Semantic.DeepEqual(o.Spec, cluster.Spec) {
		return nil
	}
	return render.ClusterPodTemplateErrors(cluster, probeImages)
}

// satelliteConfigurationEscalations refuses a LinstorSatelliteConfiguration patch that
// adds privilege to the satellite pod, under the policy of the LinstorCluster (there is
// one per Kubernetes cluster; without one, the default Restricted applies). As for the
// cluster, an update that keeps the spec is not judged again.
func satelliteConfigurationEscalations(ctx context.Context, reader client.Reader, cfg *linstorv1.LinstorSatelliteConfiguration, old runtime.Object) field.ErrorList {
	if cfg.Spec.PodTemplate == nil || len(cfg.Spec.PodTemplate.Raw) == 0 {
		return nil
	}
	if o, ok := old.(*linstorv1.LinstorSatelliteConfiguration); ok && equality.Semantic.DeepEqual(o.Spec, cfg.Spec) {
		return nil
	}
	cluster, err := policyCluster(ctx, reader)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec", "podTemplate"), err)}
	}
	return render.SatelliteConfigurationPodTemplateErrors(cluster, cfg, probeImages)
}

// policyCluster is the LinstorCluster whose podTemplatePolicy judges a configuration's
// pod changes: the one not being deleted when a replacement exists; nil (the default
// Restricted policy) without a reader or a cluster.
func policyCluster(ctx context.Context, reader client.Reader) (*linstorv1.LinstorCluster, error) {
	if reader == nil {
		return nil, nil
	}
	var clusters linstorv1.LinstorClusterList
	if err := reader.List(ctx, &clusters); err != nil {
		return nil, fmt.Errorf("reading the LinstorCluster's podTemplatePolicy: %w", err)
	}
	var cluster *linstorv1.LinstorCluster
	for i := range clusters.Items {
		if c := &clusters.Items[i]; cluster == nil || (cluster.DeletionTimestamp != nil && c.DeletionTimestamp == nil) {
			cluster = c
		}
	}
	return cluster, nil
}
