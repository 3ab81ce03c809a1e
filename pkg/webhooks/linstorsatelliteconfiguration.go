package webhooks

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// +kubebuilder:webhook:path=/validate-linstor-io-v1-linstorsatelliteconfiguration,mutating=false,failurePolicy=fail,sideEffects=None,groups=linstor.io,resources=linstorsatelliteconfigurations,verbs=create;update,versions=v1,name=vlinstorsatelliteconfiguration.linstor.io,admissionReviewVersions=v1

// SatelliteConfigurationValidator checks the pod-template patch, and properties, pools
// and net interfaces as LINSTOR would.
type SatelliteConfigurationValidator struct{}

var _ admission.CustomValidator = SatelliteConfigurationValidator{}

func (SatelliteConfigurationValidator) ValidateCreate(_ context.Context, obj runtime.Object) (admission.Warnings, error) {
	return nil, validateSatelliteConfiguration(obj.(*linstorv1.LinstorSatelliteConfiguration))
}

func (SatelliteConfigurationValidator) ValidateUpdate(_ context.Context, oldObj, newObj runtime.Object) (admission.Warnings, error) {
	cfg := newObj.(*linstorv1.LinstorSatelliteConfiguration)
	if err := validateSatelliteConfiguration(cfg); err != nil {
		return nil, err
	}
	old := oldObj.(*linstorv1.LinstorSatelliteConfiguration)
	return nil, invalid("LinstorSatelliteConfiguration", cfg.Name, immutablePools(field.NewPath("spec", "storagePools"), old.Spec.StoragePools, cfg.Spec.StoragePools))
}

func (SatelliteConfigurationValidator) ValidateDelete(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

func validateSatelliteConfiguration(cfg *linstorv1.LinstorSatelliteConfiguration) error {
	spec := field.NewPath("spec")
	errs := validatePodTemplatePatch(spec.Child("podTemplate"), cfg.Spec.PodTemplate)
	errs = append(errs, validateNodeProperties(spec.Child("properties"), cfg.Spec.Properties)...)
	errs = append(errs, validateStoragePools(spec.Child("storagePools"), cfg.Spec.StoragePools)...)
	errs = append(errs, validateNetInterfaces(spec.Child("netInterfaces"), cfg.Spec.NetInterfaces)...)
	return invalid("LinstorSatelliteConfiguration", cfg.Name, errs)
}
