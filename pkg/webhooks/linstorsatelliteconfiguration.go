package webhooks

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	linstorv1alpha1 "github.com/linstor-operator/linstor-operator/api/v1alpha1"
)

// +kubebuilder:webhook:path=/validate-linstor-io-v1-linstorsatelliteconfiguration,mutating=false,failurePolicy=fail,sideEffects=None,groups=linstor.io,resources=linstorsatelliteconfigurations,verbs=create;update,versions=v1,name=vlinstorsatelliteconfiguration.linstor.io,admissionReviewVersions=v1

// SatelliteConfigurationValidator checks the pod-template patch (its syntax, and that it
// adds no privilege the LinstorCluster does not allow), and properties, pools and net
// interfaces as LINSTOR would, whatever version was written.
type SatelliteConfigurationValidator struct {
	// Reader reads the LinstorCluster's podTemplatePolicy; nil judges patches as if
	// there were no LinstorCluster (Restricted).
	Reader client.Reader
}

var _ admission.CustomValidator = SatelliteConfigurationValidator{}

func (v SatelliteConfigurationValidator) ValidateCreate(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	return nil, v.validate(ctx, obj.(*linstorv1.LinstorSatelliteConfiguration), nil)
}

func (v SatelliteConfigurationValidator) ValidateUpdate(ctx context.Context, oldObj, newObj runtime.Object) (admission.Warnings, error) {
	return nil, v.validate(ctx, newObj.(*linstorv1.LinstorSatelliteConfiguration), oldObj)
}

func (SatelliteConfigurationValidator) ValidateDelete(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

func (v SatelliteConfigurationValidator) validate(ctx context.Context, cfg *linstorv1.LinstorSatelliteConfiguration, old runtime.Object) error {
	paths := func(p string) (string, bool) { return linstorv1alpha1.SatelliteConfigurationFieldPath(&cfg.Spec, p) }
	errs := versionRules[linstorv1.LinstorSatelliteConfigurationSpec, linstorv1.LinstorSatelliteConfigurationStatus](ctx, "LinstorSatelliteConfiguration", cfg, old, paths)
	own := specErrors(cfg, old)
	own = append(own, satelliteConfigurationEscalations(ctx, v.Reader, cfg, old)...)
	own = append(own, satelliteConfigurationPatchEscalations(ctx, v.Reader, cfg, old)...)
	if old != nil {
		own = append(own, UpdateErrors(old, cfg)...)
	}
	return invalid("LinstorSatelliteConfiguration", cfg.Name, append(errs, renameAll(ctx, own, paths)...))
}
