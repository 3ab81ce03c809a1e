package webhooks

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	linstorv1alpha1 "github.com/linstor-operator/linstor-operator/api/v1alpha1"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/props"
)

// +kubebuilder:webhook:path=/validate-linstor-io-v1-linstorcluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=linstor.io,resources=linstorclusters,verbs=create;update,versions=v1,name=vlinstorcluster.linstor.io,admissionReviewVersions=v1

// +kubebuilder:rbac:groups=linstor.io,resources=linstorclusters;linstorbackups,verbs=get;list;watch

// ClusterValidator refuses a second LinstorCluster, and checks a cluster's spec whatever
// version it is written in: v1's rules, values Kubernetes would refuse in the rendered
// pods, LINSTOR's property whitelist, immutability and the backup a restore names.
type ClusterValidator struct {
	// Reader reads uncached, so two clusters created in quick succession are still seen.
	Reader client.Reader
	// Namespace is the only one a LinstorCluster may be created in (the operator's, where
	// the operands' accounts are); empty allows any.
	Namespace string
}

var _ admission.CustomValidator = &ClusterValidator{}

// ValidateCreate enforces one LinstorCluster per Kubernetes cluster: two would fight over
// the same nodes, satellites and LINSTOR database.
func (v *ClusterValidator) ValidateCreate(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	cluster := obj.(*linstorv1.LinstorCluster)
	if v.Namespace != "" && cluster.Namespace != v.Namespace {
		return nil, invalid("LinstorCluster", cluster.Name, field.ErrorList{field.Forbidden(field.NewPath("metadata", "namespace"),
			fmt.Sprintf("a LinstorCluster must be created in namespace %q, where the operator runs LINSTOR: the ServiceAccounts and RBAC of LINSTOR's pods are installed there with the operator", v.Namespace))})
	}
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
	return nil, invalid("LinstorCluster", cluster.Name, v.validate(ctx, cluster, nil))
}

// ValidateUpdate re-checks the spec and holds what cannot change.
func (v *ClusterValidator) ValidateUpdate(ctx context.Context, oldObj, newObj runtime.Object) (admission.Warnings, error) {
	cluster := newObj.(*linstorv1.LinstorCluster)
	return nil, invalid("LinstorCluster", cluster.Name, v.validate(ctx, cluster, oldObj))
}

// ValidateDelete allows every delete; data-destroying steps are guarded in the controllers.
func (v *ClusterValidator) ValidateDelete(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

// validate runs every check of a create (old nil) or an update.
func (v *ClusterValidator) validate(ctx context.Context, cluster *linstorv1.LinstorCluster, old runtime.Object) field.ErrorList {
	paths := func(p string) (string, bool) { return linstorv1alpha1.ClusterFieldPath(&cluster.Spec, p) }
	errs := versionRules[linstorv1.LinstorClusterSpec, linstorv1.LinstorClusterStatus](ctx, "LinstorCluster", cluster, old, paths)
	own := validateClusterSpec(&cluster.Spec)
	own = append(own, clusterEscalations(cluster, old)...)
	own = append(own, clusterPatchErrors(cluster, old)...)
	if old == nil {
		own = append(own, v.validateRestoreFrom(ctx, cluster)...)
	} else {
		own = append(own, UpdateErrors(old, cluster)...)
		if restoreFromOf(&old.(*linstorv1.LinstorCluster).Spec) != restoreFromOf(&cluster.Spec) {
			own = append(own, v.validateRestoreFrom(ctx, cluster)...)
		}
	}
	return append(errs, renameAll(ctx, own, paths)...)
}

func validateClusterSpec(spec *linstorv1.LinstorClusterSpec) field.ErrorList {
	p := field.NewPath("spec")
	errs := metav1validation.ValidateLabels(spec.NodeSelector, p.Child("nodeSelector"))
	errs = append(errs, validateNodeSelector(p.Child("nodeAffinity"), spec.NodeAffinity)...)
	if spec.Controller != nil {
		errs = append(errs, validateComponent(p.Child("controller"), &spec.Controller.ComponentSpec)...)
	}
	if spec.Satellite != nil {
		errs = append(errs, validateComponent(p.Child("satellite"), &spec.Satellite.ComponentSpec)...)
	}
	if spec.CSI != nil {
		errs = append(errs, validateComponent(p.Child("csi", "controller"), spec.CSI.Controller)...)
		errs = append(errs, validateComponent(p.Child("csi", "node"), spec.CSI.Node)...)
	}
	errs = append(errs, validateComponent(p.Child("highAvailabilityController"), spec.HighAvailabilityController)...)
	errs = append(errs, validateProperties(p.Child("properties"), props.Controller, spec.Properties)...)
	if db := spec.Database; db != nil {
		at := p.Child("database")
		if db.ConnectionURL != "" {
			errs = append(errs, validateDatabaseURL(at.Child("connectionURL"), db.ConnectionURL)...)
		}
		if db.ClientCertificateSecretRef != nil {
			errs = append(errs, validateSecretName(at.Child("clientCertificateSecretRef", "name"), db.ClientCertificateSecretRef.Name)...)
		}
		if db.RestoreFrom != "" {
			errs = append(errs, validateSecretName(at.Child("restoreFrom"), db.RestoreFrom)...) // object names are DNS subdomains
		}
	}
	if ext := spec.ExternalController; ext != nil {
		errs = append(errs, validateHTTPURL(p.Child("externalController", "url"), ext.URL)...)
		if ext.ClientCertificateSecretRef != nil {
			errs = append(errs, validateSecretName(p.Child("externalController", "clientCertificateSecretRef", "name"), ext.ClientCertificateSecretRef.Name)...)
		}
	}
	if spec.PassphraseSecretRef != nil {
		errs = append(errs, validateSecretName(p.Child("passphraseSecretRef", "name"), spec.PassphraseSecretRef.Name)...)
	}
	if tls := spec.TLS; tls != nil {
		for _, ch := range []struct {
			name string
			cfg  *linstorv1.TLSConfig
		}{{"internal", tls.Internal}, {"api", tls.API}} {
			if ch.cfg == nil {
				continue
			}
			at := p.Child("tls", ch.name)
			if ch.cfg.SecretName != "" {
				errs = append(errs, validateSecretName(at.Child("secretName"), ch.cfg.SecretName)...)
			}
			if ch.cfg.ClientSecretName != "" {
				errs = append(errs, validateSecretName(at.Child("clientSecretName"), ch.cfg.ClientSecretName)...)
			}
			if ch.cfg.IssuerRef != nil {
				errs = append(errs, validateSecretName(at.Child("issuerRef", "name"), ch.cfg.IssuerRef.Name)...)
			}
		}
	}
	return errs
}

func restoreFromOf(spec *linstorv1.LinstorClusterSpec) string {
	if spec.Database == nil {
		return ""
	}
	return spec.Database.RestoreFrom
}

// validateRestoreFrom: a restore replaces LINSTOR's database, so it must name a copy
// that exists, is verified (Completed, or an import still being verified) and was
// taken of (or imported for) this cluster. Checked when the
// field is set or changed only: the backup may be deleted after the restore.
func (v *ClusterValidator) validateRestoreFrom(ctx context.Context, cluster *linstorv1.LinstorCluster) field.ErrorList {
	name := restoreFromOf(&cluster.Spec)
	if name == "" || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return nil // no restore, or a name validateClusterSpec already refuses
	}
	at := field.NewPath("spec", "database", "restoreFrom")
	var backup linstorv1.LinstorBackup
	if err := v.Reader.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: name}, &backup); apierrors.IsNotFound(err) {
		return field.ErrorList{field.NotFound(at, name)}
	} else if err != nil {
		return field.ErrorList{field.InternalError(at, fmt.Errorf("reading LinstorBackup %s: %w", name, err))}
	}
	if backup.Spec.ClusterRef.Name != cluster.Name {
		return field.ErrorList{field.Invalid(at, name, fmt.Sprintf("is a backup of LinstorCluster %q, not of %q", backup.Spec.ClusterRef.Name, cluster.Name))}
	}
	if backup.Spec.ImportFrom != "" && backup.Status.Phase != linstorv1.BackupFailed {
		// An import being read back from its bucket: the restore waits for it to be
		// verified, and a new cluster's LINSTOR does not start before (lifecycle), so
		// the target, the import and the cluster can be applied together.
		return nil
	}
	if backup.Status.Phase != linstorv1.BackupCompleted {
		phase := string(backup.Status.Phase)
		if phase == "" {
			phase = string(linstorv1.BackupPending)
		}
		return field.ErrorList{field.Invalid(at, name, fmt.Sprintf("the backup is %s; only a Completed (verified) backup can be restored", phase))}
	}
	return nil
}

// invalid builds the 422 the API server shows the user; each cause names its field.
func invalid(kind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(linstorv1.GroupVersion.WithKind(kind).GroupKind(), name, errs)
}
