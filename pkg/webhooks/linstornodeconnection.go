package webhooks

import (
	"context"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/props"
)

// +kubebuilder:webhook:path=/validate-linstor-io-v1-linstornodeconnection,mutating=false,failurePolicy=fail,sideEffects=None,groups=linstor.io,resources=linstornodeconnections,verbs=create;update,versions=v1,name=vlinstornodeconnection.linstor.io,admissionReviewVersions=v1

// NodeConnectionValidator checks properties against LINSTOR's node-connection
// whitelist (DRBD net and peer-device options) and selector keys and values as label
// keys and values.
type NodeConnectionValidator struct{}

var _ admission.CustomValidator = NodeConnectionValidator{}

func (NodeConnectionValidator) ValidateCreate(_ context.Context, obj runtime.Object) (admission.Warnings, error) {
	return nil, validateNodeConnection(obj.(*linstorv1.LinstorNodeConnection))
}

func (NodeConnectionValidator) ValidateUpdate(_ context.Context, _, newObj runtime.Object) (admission.Warnings, error) {
	return nil, validateNodeConnection(newObj.(*linstorv1.LinstorNodeConnection))
}

func (NodeConnectionValidator) ValidateDelete(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

func validateNodeConnection(lnc *linstorv1.LinstorNodeConnection) error {
	spec := field.NewPath("spec")
	errs := validateProperties(spec.Child("properties"), props.NodeConnection, lnc.Spec.Properties)
	for i, term := range lnc.Spec.Selector {
		for j, expr := range term.MatchLabels {
			at := spec.Child("selector").Index(i).Child("matchLabels").Index(j)
			errs = append(errs, metav1validation.ValidateLabelName(expr.Key, at.Child("key"))...)
			for k, v := range expr.Values {
				for _, msg := range validation.IsValidLabelValue(v) {
					errs = append(errs, field.Invalid(at.Child("values").Index(k), v, msg))
				}
			}
		}
	}
	return invalid("LinstorNodeConnection", lnc.Name, errs)
}
