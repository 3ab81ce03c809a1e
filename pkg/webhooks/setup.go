package webhooks

import (
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Setup registers the validating webhooks and, through the builder, the /convert
// endpoint for every kind that has a v1alpha1 spoke.
func Setup(mgr ctrl.Manager) error {
	if err := ctrl.NewWebhookManagedBy(mgr).For(&linstorv1.LinstorCluster{}).
		WithValidator(&ClusterValidator{Reader: mgr.GetAPIReader()}).Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr).For(&linstorv1.LinstorSatelliteConfiguration{}).
		WithValidator(SatelliteConfigurationValidator{}).Complete(); err != nil {
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
// (a restoreFrom backup is not looked up), so tests use it as the model of validity.
func SpecErrors(obj runtime.Object) field.ErrorList {
	switch o := obj.(type) {
	case *linstorv1.LinstorCluster:
		return validateClusterSpec(&o.Spec)
	case *linstorv1.LinstorSatelliteConfiguration:
		spec := field.NewPath("spec")
		errs := metav1validation.ValidateLabels(o.Spec.NodeSelector, spec.Child("nodeSelector"))
		errs = append(errs, validatePodTemplatePatch(spec.Child("podTemplate"), o.Spec.PodTemplate)...)
		errs = append(errs, validateNodeProperties(spec.Child("properties"), o.Spec.Properties)...)
		errs = append(errs, validateStoragePools(spec.Child("storagePools"), o.Spec.StoragePools)...)
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
