package dbbackup

import (
	"context"
	"fmt"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// MarkerKeyBackup is the marker's data key naming the LinstorBackup involved.
const MarkerKeyBackup = "backup"

// SetInUse puts finalizer on a LinstorBackup and its chunk Secrets (want), or takes it
// off. The Secrets carry it too: a foreground deletion (kubectl --cascade=foreground,
// some GitOps prunes) deletes an owner's dependents first, finalizer or not. They get
// it before the backup and lose it before it, so a backup without it never leaves
// Secrets that cannot go. Nothing is written when nothing changes.
func SetInUse(ctx context.Context, c client.Client, b *linstorv1.LinstorBackup, finalizer string, want bool) error {
	for _, name := range b.Status.Secrets {
		secret := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: name}, secret); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("reading chunk Secret %s: %w", name, err)
		}
		if err := setFinalizer(ctx, c, secret, finalizer, want); err != nil {
			return fmt.Errorf("updating the finalizers of chunk Secret %s: %w", name, err)
		}
	}
	if err := setFinalizer(ctx, c, b, finalizer, want); err != nil {
		return fmt.Errorf("updating the finalizers of LinstorBackup %s: %w", b.Name, err)
	}
	return nil
}

func setFinalizer(ctx context.Context, c client.Client, o client.Object, finalizer string, want bool) error {
	// A finalizer cannot be added to an object being deleted.
	if want == controllerutil.ContainsFinalizer(o, finalizer) || (want && o.GetDeletionTimestamp() != nil) {
		return nil
	}
	before := o.DeepCopyObject().(client.Object)
	if want {
		controllerutil.AddFinalizer(o, finalizer)
	} else {
		controllerutil.RemoveFinalizer(o, finalizer)
	}
	return client.IgnoreNotFound(c.Patch(ctx, o, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})))
}

// ReleaseOrphanChunks takes finalizer off chunk Secrets whose LinstorBackup is not among
// backups (it is gone): a backup deleted while its Secrets were being protected must not
// leave them Terminating for ever. Secrets are found by names.LabelBackup; nothing is written
// when none carries it.
func ReleaseOrphanChunks(ctx context.Context, c client.Client, namespace string, backups []linstorv1.LinstorBackup, finalizer string) error {
	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets, client.InNamespace(namespace), client.HasLabels{names.LabelBackup}); err != nil {
		return fmt.Errorf("listing chunk Secrets: %w", err)
	}
	exists := map[string]bool{}
	for _, b := range backups {
		exists[b.Name] = true
	}
	for i := range secrets.Items {
		s := &secrets.Items[i]
		if exists[s.Labels[names.LabelBackup]] || !controllerutil.ContainsFinalizer(s, finalizer) {
			continue
		}
		if err := setFinalizer(ctx, c, s, finalizer, false); err != nil {
			return fmt.Errorf("releasing chunk Secret %s of a deleted backup: %w", s.Name, err)
		}
	}
	return nil
}
