package webhooks

import (
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Setup registers the /convert endpoint (body limited; the builders find it served and
// only check that each kind with a v1alpha1 spoke is convertible) and the validating
// webhooks.
// namespace is where LinstorClusters may be created; empty allows any.
func Setup(mgr ctrl.Manager, namespace string) error {
	registerConversion(mgr.GetWebhookServer(), mgr.GetScheme())
	if err := ctrl.NewWebhookManagedBy(mgr).For(&linstorv1.LinstorCluster{}).
		WithValidator(&ClusterValidator{Reader: mgr.GetAPIReader(), Namespace: namespace}).Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr).For(&linstorv1.LinstorSatelliteConfiguration{}).
		WithValidator(SatelliteConfigurationValidator{Reader: mgr.GetAPIReader()}).Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr).For(&linstorv1.LinstorNodeConnection{}).
		WithValidator(NodeConnectionValidator{}).Complete(); err != nil {
		return err
	}
	return ctrl.NewWebhookManagedBy(mgr).For(&linstorv1.LinstorSatellite{}).
		WithValidator(SatelliteValidator{}).Complete()
}

// SpecErrors returns what the webhook refuses in a v1 object's spec beyond the CRD's
// schema: Kubernetes' and LINSTOR's rules, pod-template patches. It needs no cluster
// (a restoreFrom backup is not looked up, and a LinstorSatelliteConfiguration's patch
// is not judged against the LinstorCluster's podTemplatePolicy), so tests use it as the
// model of validity.
func SpecErrors(obj runtime.Object) field.ErrorList { return specErrors(obj, nil) }

// specErrors is SpecErrors on an update: a rule added in a later release (a discovery
// matcher's acknowledgement) holds only what the update changes.
func specErrors(obj, old runtime.Object) field.ErrorList {
	switch o := obj.(type) {
	case *linstorv1.LinstorCluster:
		return append(append(validateClusterSpec(&o.Spec), clusterEscalations(o, nil)...), clusterPatchErrors(o, nil)...)
	case *linstorv1.LinstorSatelliteConfiguration:
		spec := field.NewPath("spec")
		errs := metav1validation.ValidateLabels(o.Spec.NodeSelector, spec.Child("nodeSelector"))
		errs = append(errs, validateNodeSelector(spec.Child("nodeAffinity"), o.Spec.NodeAffinity)...)
		errs = append(errs, validatePodTemplatePatch(spec.Child("podTemplate"), o.Spec.PodTemplate)...)
		errs = append(errs, satelliteConfigurationPatchErrors(o)...)
		errs = append(errs, validateNodeProperties(spec.Child("properties"), o.Spec.Properties)...)
		errs = append(errs, validateNodePropertySources(spec.Child("properties"), o.Spec.Properties)...)
		var oldPools []linstorv1.StoragePool
		if prev, ok := old.(*linstorv1.LinstorSatelliteConfiguration); ok {
			oldPools = prev.Spec.StoragePools
		}
		errs = append(errs, validateStoragePools(spec.Child("storagePools"), o.Spec.StoragePools)...)
		errs = append(errs, validateDiscoveryAcknowledged(spec.Child("storagePools"), o.Spec.StoragePools, oldPools)...)
		return append(errs, validateNetInterfaces(spec.Child("netInterfaces"), o.Spec.NetInterfaces)...)
	case *linstorv1.LinstorNodeConnection:
		if err := validateNodeConnection(o); err != nil {
			return field.ErrorList{field.Invalid(field.NewPath("spec"), nil, err.Error())}
		}
	}
	return nil
}

// UpdateErrors returns what the webhook holds immutable between two v1 objects of the
// same kind, beyond the CRD's transition rules (removal of a field or its parent).
func UpdateErrors(old, new runtime.Object) field.ErrorList {
	pools := field.NewPath("spec", "storagePools")
	switch n := new.(type) {
	case *linstorv1.LinstorCluster:
		return immutableCluster(&old.(*linstorv1.LinstorCluster).Spec, &n.Spec)
	case *linstorv1.LinstorSatelliteConfiguration:
		return immutablePools(pools, old.(*linstorv1.LinstorSatelliteConfiguration).Spec.StoragePools, n.Spec.StoragePools)
	case *linstorv1.LinstorSatellite:
		return immutablePools(pools, old.(*linstorv1.LinstorSatellite).Spec.StoragePools, n.Spec.StoragePools)
	}
	return nil
}
