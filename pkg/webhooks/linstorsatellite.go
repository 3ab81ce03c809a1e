package webhooks

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
	sat := obj.(*linstorv1.LinstorSatellite)
	return nil, invalid("LinstorSatellite", sat.Name, validateSatellite(ctx, sat, nil))
}

func (SatelliteValidator) ValidateUpdate(ctx context.Context, oldObj, newObj runtime.Object) (admission.Warnings, error) {
	sat, old := newObj.(*linstorv1.LinstorSatellite), oldObj.(*linstorv1.LinstorSatellite)
	errs := validateSatellite(ctx, sat, old)
	errs = append(errs, renameAll(ctx, immutablePools(field.NewPath("spec", "storagePools"), old.Spec.StoragePools, sat.Spec.StoragePools), func(p string) (string, bool) {
		return linstorv1alpha1.SatelliteFieldPath(&sat.Spec, p)
	})...)
	return nil, invalid("LinstorSatellite", sat.Name, errs)
}

func (SatelliteValidator) ValidateDelete(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

func validateSatellite(ctx context.Context, sat, old *linstorv1.LinstorSatellite) field.ErrorList {
	var oldObj runtime.Object
	if old != nil {
		oldObj = old
	}
	paths := func(p string) (string, bool) { return linstorv1alpha1.SatelliteFieldPath(&sat.Spec, p) }
	errs := conversionData[linstorv1.LinstorSatelliteSpec, linstorv1.LinstorSatelliteStatus](ctx, sat, oldObj)
	return append(errs, hubRules(ctx, "LinstorSatellite", sat, oldObj, paths)...)
}
