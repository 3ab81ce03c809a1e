package linstorcluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/clustertls"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/apply"
	"github.com/linstor-operator/linstor-operator/pkg/certs"
)

// expiryWarning: a user-provided certificate closer than this to expiry gets a warning event.
const expiryWarning = 30 * 24 * time.Hour

// tlsSecret is one certificate Secret the cluster needs.
type tlsSecret struct {
	name   string
	mode   linstorv1.TLSMode
	ca     string // the generated CA that signs it (mode Generated)
	issuer *linstorv1.IssuerReference
	req    certs.Request
}

// wantedTLSSecrets lists the certificate Secrets of the enabled channels, in the mode
// each channel runs with (an unset channel runs with status.tls.defaultMode, see
// clustertls.DefaultTLSMode). With an external controller the operator issues nothing:
// that controller's certificates are not the operator's to make. They are issued
// whether or not the controller runs (spec.controller.enabled): the satellites and the
// CSI driver mount them either way.
func wantedTLSSecrets(c *linstorv1.LinstorCluster) []tlsSecret {
	if c.Spec.ExternalController != nil {
		return nil
	}
	var out []tlsSecret
	if clustertls.InternalTLSEnabled(c) {
		out = append(out, tlsSecret{name: clustertls.InternalTLSSecretName(c), mode: clustertls.InternalTLSMode(c), ca: names.InternalCASecret, issuer: clustertls.InternalTLSIssuer(c),
			// Controller and satellites authenticate each other with it: both usages.
			req: certs.Request{CommonName: "linstor-internal", Server: true, Client: true}})
	}
	if clustertls.APITLSEnabled(c) {
		mode, issuer := clustertls.APITLSMode(c), clustertls.APITLSIssuer(c)
		out = append(out,
			tlsSecret{name: clustertls.APITLSSecretName(c), mode: mode, ca: names.APICASecret, issuer: issuer,
				req: certs.Request{CommonName: names.ControllerName, DNSNames: clustertls.APIServerDNSNames(c), Server: true}},
			tlsSecret{name: clustertls.APIClientSecretName(c), mode: mode, ca: names.APICASecret, issuer: issuer,
				req: certs.Request{CommonName: "linstor-client", Client: true}})
	}
	return out
}

// reconcileTLS makes sure every certificate Secret the workloads mount exists and is
// current before they are rendered: generated ones are issued and renewed here,
// user-provided ones are checked. It records each Secret's fingerprint so a renewal
// rolls the pods that mount it.
func (r *Reconciler) reconcileTLS(ctx context.Context, s *scope) (ctrl.Result, error) {
	s.tlsFingerprints = map[string]string{}
	var statuses []linstorv1.CertificateStatus
	wanted := wantedTLSSecrets(s.cluster)
	// Ask cert-manager for everything first: it issues in parallel.
	for _, want := range wanted {
		if want.mode == linstorv1.TLSCertManager {
			if err := r.applyCertificate(ctx, s, want); err != nil {
				s.tlsErr = err
				return ctrl.Result{RequeueAfter: shortPoll}, nil
			}
		}
	}
	for _, want := range wanted {
		var secret *corev1.Secret
		var err error
		switch want.mode {
		case linstorv1.TLSGenerated:
			secret, err = r.ensureGenerated(ctx, s, want)
		case linstorv1.TLSSecret, linstorv1.TLSCertManager:
			secret, err = r.checkProvided(ctx, s, want)
		default:
			err = fmt.Errorf("spec.tls: unknown mode %q", want.mode)
		}
		if err != nil {
			s.tlsErr = err
			return ctrl.Result{RequeueAfter: shortPoll}, nil
		}
		fp := fingerprint(secret)
		s.tlsFingerprints[want.name] = fp
		st := linstorv1.CertificateStatus{SecretName: want.name, Fingerprint: fp}
		if cs, err := certs.ParseCertificates(secret.Data[corev1.TLSCertKey]); err == nil {
			st.NotAfter = &metav1.Time{Time: cs[0].NotAfter.UTC()}
		}
		statuses = append(statuses, st)
	}
	sort.Slice(statuses, func(i, j int) bool { return statuses[i].SecretName < statuses[j].SecretName })
	s.certificates = statuses
	if err := r.checkCAReferences(ctx, s); err != nil {
		s.tlsErr = err
		return ctrl.Result{RequeueAfter: shortPoll}, nil
	}
	return ctrl.Result{}, nil
}

// ensureGenerated issues or renews a generated certificate, and its CA.
func (r *Reconciler) ensureGenerated(ctx context.Context, s *scope, want tlsSecret) (*corev1.Secret, error) {
	now := time.Now()
	ca, caSecret, err := r.ensureCA(ctx, s, want.ca, now)
	if err != nil {
		return nil, err
	}
	bundle := caSecret.Data["ca.crt"]
	secret, err := r.ownedSecret(ctx, s, want.name)
	if err != nil {
		return nil, err
	}
	reason := "created"
	if secret.ResourceVersion != "" {
		reason = certs.LeafNeedsRenewal(ca, secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey], want.req, now)
	}
	switch {
	case reason != "":
		leaf, err := certs.Issue(ca, want.req, now)
		if err != nil {
			return nil, err
		}
		secret.Data = map[string][]byte{corev1.TLSCertKey: leaf.CertPEM, corev1.TLSPrivateKeyKey: leaf.KeyPEM, "ca.crt": bundle}
		if err := r.writeSecret(ctx, secret); err != nil {
			return nil, err
		}
		if reason != "created" {
			r.Recorder.Eventf(s.cluster, corev1.EventTypeNormal, "CertificateRenewed", "Renewed the certificate in Secret %s: %s", want.name, reason)
		}
	case !bytes.Equal(secret.Data["ca.crt"], bundle):
		// The CA was rotated: peers must trust the new one before leaves move to it.
		secret.Data["ca.crt"] = bundle
		if err := r.writeSecret(ctx, secret); err != nil {
			return nil, err
		}
	}
	return secret, nil
}

// ensureCA returns the CA, creating or rotating it. A rotated CA's Secret keeps the
// old certificate in ca.crt until it expires, so nothing breaks while leaves move over.
func (r *Reconciler) ensureCA(ctx context.Context, s *scope, name string, now time.Time) (certs.Pair, *corev1.Secret, error) {
	secret, err := r.ownedSecret(ctx, s, name)
	if err != nil {
		return certs.Pair{}, nil, err
	}
	if secret.ResourceVersion != "" {
		ca, err := certs.Parse(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
		if err == nil && certs.CANeedsRenewal(ca, now) == "" {
			return ca, secret, nil
		}
	}
	ca, err := certs.NewCA(name, now)
	if err != nil {
		return certs.Pair{}, nil, err
	}
	rotated := secret.ResourceVersion != ""
	secret.Data = map[string][]byte{corev1.TLSCertKey: ca.CertPEM, corev1.TLSPrivateKeyKey: ca.KeyPEM,
		"ca.crt": certs.Bundle(ca, secret.Data["ca.crt"], now)}
	if err := r.writeSecret(ctx, secret); err != nil {
		return certs.Pair{}, nil, err
	}
	if rotated {
		r.Recorder.Eventf(s.cluster, corev1.EventTypeNormal, "CARotated", "Rotated the CA in Secret %s; the previous CA stays trusted until it expires", name)
	}
	return ca, secret, nil
}

// ownedSecret reads a Secret the operator generates, or returns a new one to create.
// A Secret of that name the operator did not create is never overwritten.
func (r *Reconciler) ownedSecret(ctx context.Context, s *scope, name string) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	err := r.getSecret(ctx, client.ObjectKey{Namespace: s.cluster.Namespace, Name: name}, secret)
	switch {
	case apierrors.IsNotFound(err):
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.cluster.Namespace,
				Labels: map[string]string{names.LabelCluster: s.cluster.Name, names.LabelManagedBy: names.ManagedBy}},
			Type: corev1.SecretTypeTLS,
		}
		// Generated certificates go with the cluster; they can always be issued again.
		if err := controllerutil.SetControllerReference(s.cluster, secret, r.Client.Scheme()); err != nil {
			return nil, err
		}
		return secret, nil
	case err != nil:
		return nil, fmt.Errorf("reading Secret %s: %w", name, err)
	case secret.Labels[names.LabelManagedBy] != names.ManagedBy:
		return nil, fmt.Errorf("spec.tls: Secret %s exists and was not generated by the operator; set mode Secret to use it, or choose another secretName", name)
	}
	return secret, nil
}

func (r *Reconciler) writeSecret(ctx context.Context, secret *corev1.Secret) error {
	if secret.ResourceVersion == "" {
		return r.Client.Create(ctx, secret)
	}
	return r.Client.Update(ctx, secret)
}

// checkProvided validates a user-provided certificate Secret. Nothing is written to it.
func (r *Reconciler) checkProvided(ctx context.Context, s *scope, want tlsSecret) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	if err := r.getSecret(ctx, client.ObjectKey{Namespace: s.cluster.Namespace, Name: want.name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			s.tlsMissing = true
			if want.mode == linstorv1.TLSCertManager {
				return nil, fmt.Errorf("spec.tls: waiting for cert-manager to issue Secret %s (Certificate %s)", want.name, want.name)
			}
			return nil, fmt.Errorf("spec.tls: Secret %s not found", want.name)
		}
		return nil, err
	}
	for _, key := range []string{"ca.crt", corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
		if len(secret.Data[key]) == 0 && !(key == "ca.crt" && hasCAReference(s.cluster, want.name)) {
			return nil, fmt.Errorf("spec.tls: Secret %s has no %s", want.name, key)
		}
	}
	leaf, err := certs.Parse(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("spec.tls: Secret %s: %w", want.name, err)
	}
	if left := time.Until(leaf.Cert.NotAfter); left < 0 {
		return nil, fmt.Errorf("spec.tls: the certificate in Secret %s expired on %s", want.name, leaf.Cert.NotAfter.UTC().Format(time.RFC3339))
	} else if left < expiryWarning {
		r.Recorder.Eventf(s.cluster, corev1.EventTypeWarning, "CertificateExpiring", "The certificate in Secret %s expires on %s; replace it", want.name, leaf.Cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return secret, nil
}

// fingerprint identifies a Secret's content.
func fingerprint(secret *corev1.Secret) string {
	keys := make([]string, 0, len(secret.Data))
	for k := range secret.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%x;", k, secret.Data[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// certificateGVK is cert-manager's Certificate.
var certificateGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}

// applyCertificate asks cert-manager for the Secret. The Certificate is owned by the
// cluster, so it goes with it.
func (r *Reconciler) applyCertificate(ctx context.Context, s *scope, want tlsSecret) error {
	usages := []any{"digital signature", "key encipherment"}
	if want.req.Server {
		usages = append(usages, "server auth")
	}
	if want.req.Client {
		usages = append(usages, "client auth")
	}
	spec := map[string]any{
		"secretName": want.name,
		"commonName": want.req.CommonName,
		"issuerRef":  map[string]any{"group": "cert-manager.io", "kind": or(want.issuer.Kind, "Issuer"), "name": want.issuer.Name},
		"usages":     usages,
		"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256), "encoding": "PKCS8", "rotationPolicy": "Always"},
		"duration":   certs.LeafValidity.String(),
		// Renew with a third of the life left, as generated certificates are.
		"renewBefore": (certs.LeafValidity / 3).String(),
	}
	if len(want.req.DNSNames) > 0 {
		names := make([]any, len(want.req.DNSNames))
		for i, n := range want.req.DNSNames {
			names[i] = n
		}
		spec["dnsNames"] = names
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(certificateGVK)
	u.SetName(want.name)
	u.SetNamespace(s.cluster.Namespace)
	u.SetLabels(map[string]string{names.LabelCluster: s.cluster.Name, names.LabelManagedBy: names.ManagedBy})
	if err := controllerutil.SetControllerReference(s.cluster, u, r.Client.Scheme()); err != nil {
		return err
	}
	err := r.Client.Patch(ctx, u, client.Apply, client.FieldOwner(apply.FieldOwner), client.ForceOwnership)
	if meta.IsNoMatchError(err) {
		return fmt.Errorf("spec.tls: mode CertManager needs cert-manager, and its Certificate kind is not installed; install cert-manager or use mode Generated")
	}
	if err != nil {
		return fmt.Errorf("applying cert-manager Certificate %s: %w", want.name, err)
	}
	return nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
