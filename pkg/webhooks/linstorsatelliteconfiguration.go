package webhooks

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	linstorv1alpha1 "github.com/linstor-operator/linstor-operator/api/v1alpha1"
)

// +kubebuilder:webhook:path=/validate-linstor-io-v1-linstorsatelliteconfiguration,mutating=false,failurePolicy=fail,sideEffects=None,groups=linstor.io,resources=linstorsatelliteconfigurations,verbs=create;update,versions=v1,name=vlinstorsatelliteconfiguration.linstor.io,admissionReviewVersions=v1

// SatelliteConfigurationValidator checks the pod-template patch, and properties, pools
// and net interfaces as LINSTOR would, whatever version was written.
type SatelliteConfigurationValidator struct{}

var _ admission.CustomValidator = SatelliteConfigurationValidator{}

func (SatelliteConfigurationValidator) ValidateCreate(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	cfg := obj.(*linstorv1.LinstorSatelliteConfiguration)
	return nil, invalid("LinstorSatelliteConfiguration", cfg.Name, validateSatelliteConfiguration(ctx, cfg, nil))
}

func (SatelliteConfigurationValidator) ValidateUpdate(ctx context.Context, oldObj, newObj runtime.Object) (admission.Warnings, error) {
	cfg, old := newObj.(*linstorv1.LinstorSatelliteConfiguration), oldObj.(*linstorv1.LinstorSatelliteConfiguration)
	errs := validateSatelliteConfiguration(ctx, cfg, old)
	errs = append(errs, renameAll(ctx, immutablePools(field.NewPath("spec", "storagePools"), old.Spec.StoragePools, cfg.Spec.StoragePools), func(p string) (string, bool) {
		return linstorv1alpha1.SatelliteConfigurationFieldPath(&cfg.Spec, p)
	})...)
	return nil, invalid("LinstorSatelliteConfiguration", cfg.Name, errs)
}

func (SatelliteConfigurationValidator) ValidateDelete(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

func validateSatelliteConfiguration(ctx context.Context, cfg, old *linstorv1.LinstorSatelliteConfiguration) field.ErrorList {
	var oldObj runtime.Object
	if old != nil {
		oldObj = old
	}
	paths := func(p string) (string, bool) { return linstorv1alpha1.SatelliteConfigurationFieldPath(&cfg.Spec, p) }
	errs := conversionData[linstorv1.LinstorSatelliteConfigurationSpec, linstorv1.LinstorSatelliteConfigurationStatus](ctx, cfg, oldObj)
	errs = append(errs, hubRules(ctx, "LinstorSatelliteConfiguration", cfg, oldObj, paths)...)
	return append(errs, renameAll(ctx, SpecErrors(cfg), paths)...)
}
