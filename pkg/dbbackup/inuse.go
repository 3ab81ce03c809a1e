package dbbackup

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// MarkerName is the ConfigMap that records, outside the LinstorCluster, that its LINSTOR
// database is being replaced or migrated. It has no owner: it must outlive the object.
func MarkerName(cluster string) string { return cluster + "-database-replacement" }

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
