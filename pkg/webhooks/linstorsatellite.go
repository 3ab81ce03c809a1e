package webhooks

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	linstorv1alpha1 "github.com/linstor-operator/linstor-operator/api/v1alpha1"
)

// +kubebuilder:webhook:path=/validate-linstor-io-v1-linstorsatellite,mutating=false,failurePolicy=fail,sideEffects=None,groups=linstor.io,resources=linstorsatellites,verbs=create;update,versions=v1,name=vlinstorsatellite.linstor.io,admissionReviewVersions=v1

// SatelliteValidator holds a LinstorSatellite written through v1alpha1 to v1's schema
// and rules, and every write to pool immutability (removal included). The operator
// writes LinstorSatellites from validated configurations; this is for everyone else.
type SatelliteValidator struct{}

var _ admission.CustomValidator = SatelliteValidator{}

func (SatelliteValidator) ValidateCreate(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	return nil, validateSatellite(ctx, obj.(*linstorv1.LinstorSatellite), nil)
}

func (SatelliteValidator) ValidateUpdate(ctx context.Context, oldObj, newObj runtime.Object) (admission.Warnings, error) {
	return nil, validateSatellite(ctx, newObj.(*linstorv1.LinstorSatellite), oldObj)
}

func (SatelliteValidator) ValidateDelete(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

func validateSatellite(ctx context.Context, sat *linstorv1.LinstorSatellite, old runtime.Object) error {
	paths := func(p string) (string, bool) { return linstorv1alpha1.SatelliteFieldPath(&sat.Spec, p) }
	errs := versionRules[linstorv1.LinstorSatelliteSpec, linstorv1.LinstorSatelliteStatus](ctx, "LinstorSatellite", sat, old, paths)
	if old != nil {
		errs = append(errs, renameAll(ctx, UpdateErrors(old, sat), paths)...)
	}
	return invalid("LinstorSatellite", sat.Name, errs)
}
