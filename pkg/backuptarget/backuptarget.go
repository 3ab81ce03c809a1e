// Package backuptarget opens the bucket of a LinstorBackupTarget: it reads the
// credentials, the CA bundle and the encryption key from the Secrets and ConfigMap the
// target names, and says, naming the field and the command, what is missing.
package backuptarget

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/backupschedule"
	"github.com/linstor-operator/linstor-operator/pkg/offsite"
)

// MissingError: a Secret or ConfigMap the target names is missing or lacks a key. Its
// message says how to create it.
type MissingError struct{ msg string }

func (e *MissingError) Error() string { return e.msg }

// Open reads what the target names and makes a store; it does no I/O against S3.
func Open(ctx context.Context, c client.Reader, t *linstorv1.LinstorBackupTarget) (*offsite.Store, error) {
	s3 := t.Spec.S3
	creds := &corev1.Secret{}
	credsName := s3.CredentialsSecretRef.Name
	if err := c.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: credsName}, creds); apierrors.IsNotFound(err) {
		return nil, &MissingError{fmt.Sprintf("spec.s3.credentialsSecretRef: Secret %s/%s does not exist; create it with the bucket's access key: "+
			"kubectl create secret generic %s -n %s --from-literal=%s=<access key id> --from-literal=%s=<secret access key>",
			t.Namespace, credsName, credsName, t.Namespace, linstorv1.S3AccessKeyIDKey, linstorv1.S3SecretAccessKeyKey)}
	} else if err != nil {
		return nil, err
	}
	var missing []string
	for _, k := range []string{linstorv1.S3AccessKeyIDKey, linstorv1.S3SecretAccessKeyKey} {
		if len(creds.Data[k]) == 0 {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, &MissingError{fmt.Sprintf("spec.s3.credentialsSecretRef: Secret %s/%s lacks %s", t.Namespace, credsName, strings.Join(missing, " and "))}
	}
	loc := offsite.Location{Endpoint: s3.Endpoint, Bucket: s3.Bucket, Prefix: s3.Prefix, Region: s3.Region, PathStyle: s3.PathStyle,
		AccessKeyID: strings.TrimSpace(string(creds.Data[linstorv1.S3AccessKeyIDKey])), SecretAccessKey: strings.TrimSpace(string(creds.Data[linstorv1.S3SecretAccessKeyKey]))}
	if loc.Region == "" {
		loc.Region = "us-east-1"
	}
	if ref := s3.CAConfigMapRef; ref != nil {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: ref.Name}, cm); apierrors.IsNotFound(err) {
			return nil, &MissingError{fmt.Sprintf("spec.s3.caConfigMapRef: ConfigMap %s/%s does not exist; create it with the CA bundle: "+
				"kubectl create configmap %s -n %s --from-file=%s=<ca bundle file>", t.Namespace, ref.Name, ref.Name, t.Namespace, linstorv1.CABundleKey)}
		} else if err != nil {
			return nil, err
		}
		if cm.Data[linstorv1.CABundleKey] == "" {
			return nil, &MissingError{fmt.Sprintf("spec.s3.caConfigMapRef: ConfigMap %s/%s lacks %s", t.Namespace, ref.Name, linstorv1.CABundleKey)}
		}
		loc.CA = []byte(cm.Data[linstorv1.CABundleKey])
	}
	keySecret := &corev1.Secret{}
	keyName := t.Spec.Encryption.KeySecretRef.Name
	if err := c.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: keyName}, keySecret); apierrors.IsNotFound(err) {
		return nil, &MissingError{fmt.Sprintf("spec.encryption.keySecretRef: Secret %s/%s does not exist; create it with an age identity "+
			"(age-keygen -o key.txt; kubectl create secret generic %s -n %s --from-file=identity=key.txt) or a passphrase "+
			"(--from-literal=passphrase=<passphrase>), and keep a copy outside the cluster: no backup can be read without it",
			t.Namespace, keyName, keyName, t.Namespace)}
	} else if err != nil {
		return nil, err
	}
	key, err := offsite.KeyFromSecret(keySecret.Data)
	if err != nil {
		return nil, &MissingError{fmt.Sprintf("spec.encryption.keySecretRef: Secret %s/%s: %v", t.Namespace, keyName, err)}
	}
	return offsite.New(loc, key)
}

// Opener lists and deletes stored backups for the schedule controller.
type Opener struct{ Client client.Reader }

// StoredBackups lists the bucket's backups.
func (o Opener) StoredBackups(ctx context.Context, t *linstorv1.LinstorBackupTarget) ([]backupschedule.Stored, error) {
	store, err := Open(ctx, o.Client, t)
	if err != nil {
		return nil, err
	}
	manifests, _, err := store.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]backupschedule.Stored, 0, len(manifests))
	for _, m := range manifests {
		out = append(out, backupschedule.Stored{ID: m.ID, ClusterUID: m.Cluster.UID, Schedule: m.Schedule, CreatedAt: m.CreatedAt, Authenticated: m.Authenticated})
	}
	return out, nil
}

// DeleteStored deletes one backup from the bucket.
func (o Opener) DeleteStored(ctx context.Context, t *linstorv1.LinstorBackupTarget, id string) error {
	store, err := Open(ctx, o.Client, t)
	if err != nil {
		return err
	}
	return store.Delete(ctx, id)
}
