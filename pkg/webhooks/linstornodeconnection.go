package webhooks

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/props"
)

// +kubebuilder:webhook:path=/validate-linstor-io-v1-linstornodeconnection,mutating=false,failurePolicy=fail,sideEffects=None,groups=linstor.io,resources=linstornodeconnections,verbs=create;update,versions=v1,name=vlinstornodeconnection.linstor.io,admissionReviewVersions=v1

// NodeConnectionValidator checks properties against LINSTOR's node-connection
// whitelist (DRBD net and peer-device options).
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
	return invalid("LinstorNodeConnection", lnc.Name, validateProperties(field.NewPath("spec", "properties"), props.NodeConnection, lnc.Spec.Properties))
}
