package webhooks

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/props"
)

// +kubebuilder:webhook:path=/validate-linstor-io-v1-linstorcluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=linstor.io,resources=linstorclusters,verbs=create;update,versions=v1,name=vlinstorcluster.linstor.io,admissionReviewVersions=v1

// +kubebuilder:rbac:groups=linstor.io,resources=linstorclusters,verbs=get;list;watch

// ClusterValidator refuses a second LinstorCluster and malformed pod-template patches.
type ClusterValidator struct {
	// Reader reads uncached, so two clusters created in quick succession are still seen.
	Reader client.Reader
}

var _ admission.CustomValidator = &ClusterValidator{}

// ValidateCreate enforces one LinstorCluster per Kubernetes cluster: two would fight over
// the same nodes, satellites and LINSTOR database.
func (v *ClusterValidator) ValidateCreate(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	cluster := obj.(*linstorv1.LinstorCluster)
	var existing linstorv1.LinstorClusterList
	if err := v.Reader.List(ctx, &existing); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("listing LinstorClusters: %w", err))
	}
	for _, other := range existing.Items {
		// A cluster being deleted does not count: replacing a cluster is delete, then
		// create. The controllers let the new one act only once the old one is gone.
		if other.DeletionTimestamp != nil {
			continue
		}
		if other.Namespace != cluster.Namespace || other.Name != cluster.Name {
			return nil, invalid("LinstorCluster", cluster.Name, field.ErrorList{field.Forbidden(field.NewPath("metadata", "name"),
				fmt.Sprintf("only one LinstorCluster may exist per Kubernetes cluster and %s/%s already does", other.Namespace, other.Name))})
		}
	}
	return nil, invalid("LinstorCluster", cluster.Name, validateClusterSpec(&cluster.Spec))
}

// ValidateUpdate re-checks the patches.
func (v *ClusterValidator) ValidateUpdate(_ context.Context, oldObj, newObj runtime.Object) (admission.Warnings, error) {
	cluster := newObj.(*linstorv1.LinstorCluster)
	errs := validateClusterSpec(&cluster.Spec)
	errs = append(errs, immutableCluster(&oldObj.(*linstorv1.LinstorCluster).Spec, &cluster.Spec)...)
	return nil, invalid("LinstorCluster", cluster.Name, errs)
}

// ValidateDelete allows every delete; data-destroying steps are guarded in the controllers.
func (v *ClusterValidator) ValidateDelete(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

func validateClusterSpec(spec *linstorv1.LinstorClusterSpec) field.ErrorList {
	p := field.NewPath("spec")
	var errs field.ErrorList
	if spec.Controller != nil {
		errs = append(errs, validatePodTemplatePatch(p.Child("controller", "podTemplate"), spec.Controller.PodTemplate)...)
	}
	if spec.Satellite != nil {
		errs = append(errs, validatePodTemplatePatch(p.Child("satellite", "podTemplate"), spec.Satellite.PodTemplate)...)
	}
	if spec.CSI != nil {
		if spec.CSI.Controller != nil {
			errs = append(errs, validatePodTemplatePatch(p.Child("csi", "controller", "podTemplate"), spec.CSI.Controller.PodTemplate)...)
		}
		if spec.CSI.Node != nil {
			errs = append(errs, validatePodTemplatePatch(p.Child("csi", "node", "podTemplate"), spec.CSI.Node.PodTemplate)...)
		}
	}
	if spec.HighAvailabilityController != nil {
		errs = append(errs, validatePodTemplatePatch(p.Child("highAvailabilityController", "podTemplate"), spec.HighAvailabilityController.PodTemplate)...)
	}
	errs = append(errs, validateProperties(p.Child("properties"), props.Controller, spec.Properties)...)
	return errs
}

// invalid builds the 422 the API server shows the user; each cause names its field.
func invalid(kind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(linstorv1.GroupVersion.WithKind(kind).GroupKind(), name, errs)
}
