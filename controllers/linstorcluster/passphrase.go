package linstorcluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	lapi "github.com/LINBIT/golinstor/client"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/observer"
)

const (
	// DefaultPassphraseSecret is created when spec.passphraseSecretRef is unset.
	DefaultPassphraseSecret = "linstor-passphrase"
	// PassphraseKey holds the passphrase in the Secret.
	PassphraseKey = "MASTER_PASSPHRASE"
)

// reconcilePassphrase makes sure the master passphrase exists, is protected, and is
// known to LINSTOR (created once, entered again after each controller restart).
func (r *Reconciler) reconcilePassphrase(ctx context.Context, s *scope) (ctrl.Result, error) {
	name := DefaultPassphraseSecret
	if ref := s.cluster.Spec.PassphraseSecretRef; ref != nil {
		name = ref.Name
	}
	secret := &corev1.Secret{}
	err := r.getSecret(ctx, client.ObjectKey{Namespace: s.cluster.Namespace, Name: name}, secret)
	switch {
	case apierrors.IsNotFound(err) && s.cluster.Spec.PassphraseSecretRef != nil:
		// A named Secret is never invented: a new passphrase would not open existing volumes.
		s.passphraseErr = fmt.Errorf("Secret %s/%s named by spec.passphraseSecretRef does not exist", s.cluster.Namespace, name)
		return ctrl.Result{RequeueAfter: shortPoll}, nil
	case apierrors.IsNotFound(err):
		// Only a LINSTOR that has never had a passphrase gets a new one. If LINSTOR has
		// one (locked or unlocked) the Secret was lost: a new passphrase would never
		// open the existing volumes, so wait for the user to restore the Secret. If
		// LINSTOR cannot be asked, wait too.
		if s.lc == nil {
			s.passphraseErr = fmt.Errorf("Secret %s/%s does not exist and LINSTOR cannot be asked whether it already has a passphrase; waiting", s.cluster.Namespace, name)
			return ctrl.Result{RequeueAfter: shortPoll}, nil
		}
		status, err := linstor.GetPassphraseStatus(ctx, s.lc, s.httpClient)
		if err != nil {
			s.passphraseErr = fmt.Errorf("Secret %s/%s does not exist and LINSTOR's passphrase status is unknown (%v); waiting", s.cluster.Namespace, name, err)
			return ctrl.Result{RequeueAfter: shortPoll}, nil
		}
		if status != linstor.PassphraseUnset {
			s.passphraseErr = fmt.Errorf("Secret %s/%s holding the master passphrase is gone, but LINSTOR has a passphrase (%s): restore the Secret from your backup; a new passphrase would not open existing encrypted volumes", s.cluster.Namespace, name, status)
			r.Recorder.Event(s.cluster, corev1.EventTypeWarning, "PassphraseSecretLost", s.passphraseErr.Error())
			return ctrl.Result{RequeueAfter: shortPoll}, nil
		}
		pass, err := randomPassphrase()
		if err != nil {
			return ctrl.Result{}, err
		}
		// No owner reference: deleting the LinstorCluster must not delete the passphrase.
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.cluster.Namespace, Finalizers: []string{names.FinalizerProtectPassphrase},
				Labels: map[string]string{names.LabelManagedBy: names.ManagedBy, names.LabelCluster: s.cluster.Name}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{PassphraseKey: []byte(pass)},
		}
		if err := r.Client.Create(ctx, secret); err != nil {
			return ctrl.Result{}, fmt.Errorf("creating the passphrase Secret: %w", err)
		}
		r.Recorder.Eventf(s.cluster, corev1.EventTypeNormal, "PassphraseCreated", "Created the master passphrase in Secret %s; back it up: without it encrypted volumes cannot be opened", name)
	case err != nil:
		return ctrl.Result{}, err
	}
	if controllerutil.AddFinalizer(secret, names.FinalizerProtectPassphrase) {
		if err := r.Client.Update(ctx, secret); err != nil {
			return ctrl.Result{}, err
		}
	}
	pass := string(secret.Data[PassphraseKey])
	if pass == "" {
		s.passphraseErr = fmt.Errorf("Secret %s/%s has no %s key", s.cluster.Namespace, name, PassphraseKey)
		return ctrl.Result{RequeueAfter: shortPoll}, nil
	}
	if s.lc == nil {
		return ctrl.Result{}, nil // LINSTOR not reachable: reconcileLinstor reports it
	}
	// The status as the observer last read it, unless it predates our own last write.
	key := client.ObjectKeyFromObject(s.cluster)
	snap := r.Observer.Fresh(key, observer.Controller)
	if snap == nil {
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	if snap.PassphraseErr != nil {
		s.passphraseErr = snap.PassphraseErr
		r.Observer.RefreshWithin(key, shortPoll)
		return ctrl.Result{RequeueAfter: shortPoll}, nil
	}
	status := snap.Passphrase
	writer := r.Observer.Writer(key, observer.Controller, s.lc)
	switch status {
	case linstor.PassphraseUnset:
		err = writer.Send(func(lc *lapi.Client) error { return lc.Encryption.Create(ctx, lapi.Passphrase{NewPassphrase: pass}) })
	case linstor.PassphraseLocked:
		err = writer.Send(func(lc *lapi.Client) error { return lc.Encryption.Enter(ctx, pass) })
	}
	if err != nil {
		s.passphraseErr = fmt.Errorf("LINSTOR refused the master passphrase from Secret %s: %w", name, err)
		return ctrl.Result{RequeueAfter: shortPoll}, nil
	}
	if status != linstor.PassphraseUnlocked {
		r.Recorder.Eventf(s.cluster, corev1.EventTypeNormal, "PassphraseEntered", "LINSTOR master passphrase was %s; now unlocked", status)
	}
	return ctrl.Result{}, nil
}

func randomPassphrase() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawStdEncoding.EncodeToString(b), nil
}

// getSecret reads a Secret from the cache, and from the API server when the cache has
// none: a decision taken on "missing" (a new passphrase, a new certificate) must not
// rest on a cache that has not yet seen a Secret just written.
func (r *Reconciler) getSecret(ctx context.Context, key client.ObjectKey, secret *corev1.Secret) error {
	err := r.Client.Get(ctx, key, secret)
	if apierrors.IsNotFound(err) && r.Direct != nil {
		return r.Direct.Get(ctx, key, secret)
	}
	return err
}
