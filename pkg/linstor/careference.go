package linstor

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/linstor-operator/linstor-operator/pkg/clustertls"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// ErrCAReferenceMissing: the Secret or ConfigMap a caReference names does not exist.
var ErrCAReferenceMissing = errors.New("not found")

// ReadCAReference returns the PEM certificates a TLS channel's caReference names. A
// missing object or key, or one without a PEM certificate, is an error: a channel
// whose CA cannot be read is not used, never used unverified.
func ReadCAReference(ctx context.Context, r client.Reader, namespace string, ref *linstorv1.CAReference) ([]byte, error) {
	key := client.ObjectKey{Namespace: namespace, Name: ref.Name}
	var data []byte
	kind := "Secret"
	if clustertls.CAIsConfigMap(ref) {
		kind = "ConfigMap"
		cm := &corev1.ConfigMap{}
		if err := r.Get(ctx, key, cm); err != nil {
			return nil, caReadError(kind, ref.Name, err)
		}
		data = []byte(cm.Data[clustertls.CAKey(ref)])
		if len(data) == 0 {
			data = cm.BinaryData[clustertls.CAKey(ref)]
		}
	} else {
		secret := &corev1.Secret{}
		if err := r.Get(ctx, key, secret); err != nil {
			return nil, caReadError(kind, ref.Name, err)
		}
		data = secret.Data[clustertls.CAKey(ref)]
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%s %s has no key %s: %w", kind, ref.Name, clustertls.CAKey(ref), ErrCAReferenceMissing)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s %s: key %s holds no PEM certificate", kind, ref.Name, clustertls.CAKey(ref))
	}
	return data, nil
}

func caReadError(kind, name string, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %s: %w", kind, name, ErrCAReferenceMissing)
	}
	return fmt.Errorf("reading %s %s: %w", kind, name, err)
}
