// Package certs issues and checks the certificates the operator generates for LINSTOR
// when TLS mode is Generated: one CA per channel, and leaf certificates it signs.
// Everything is PEM, as Kubernetes TLS Secrets hold it.
package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"
)

// Lifetimes. A certificate is renewed once less than a third of its life is left, so a
// one-year leaf is replaced four months before it expires.
const (
	CAValidity   = 5 * 365 * 24 * time.Hour
	LeafValidity = 365 * 24 * time.Hour
)

// Pair is a certificate with its private key.
type Pair struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// Request describes a leaf certificate.
type Request struct {
	CommonName string
	DNSNames   []string
	Server     bool // serverAuth
	Client     bool // clientAuth
}

// NewCA creates a self-signed CA.
func NewCA(commonName string, now time.Time) (Pair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"linstor-operator"}},
		NotBefore:             now.Add(-5 * time.Minute), // tolerate clock skew between nodes
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	return create(tmpl, nil)
}

// Issue signs a leaf certificate for req with ca.
func Issue(ca Pair, req Request, now time.Time) (Pair, error) {
	tmpl := &x509.Certificate{
		Subject:   pkix.Name{CommonName: req.CommonName, Organization: []string{"linstor-operator"}},
		DNSNames:  req.DNSNames,
		NotBefore: now.Add(-5 * time.Minute),
		NotAfter:  now.Add(LeafValidity),
		KeyUsage:  x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
	}
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter // a leaf never outlives its CA
	}
	if req.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if req.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	return create(tmpl, &ca)
}

func create(tmpl *x509.Certificate, parent *Pair) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return Pair{}, err
	}
	tmpl.SerialNumber = serial
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	ski := sha256.Sum256(pub)
	tmpl.SubjectKeyId = ski[:20]
	signerCert, signerKey := tmpl, crypto.Signer(key)
	if parent != nil {
		signerCert, signerKey = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signerKey)
	if err != nil {
		return Pair{}, err
	}
	cert, _ := x509.ParseCertificate(der)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{
		Cert: cert, Key: key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// Parse reads a PEM certificate and its PKCS#8 (or EC/PKCS#1) key.
func Parse(certPEM, keyPEM []byte) (Pair, error) {
	certs, err := ParseCertificates(certPEM)
	if err != nil {
		return Pair{}, err
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return Pair{}, errors.New("tls.key holds no PEM block")
	}
	var key any
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return Pair{}, fmt.Errorf("tls.key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return Pair{}, errors.New("tls.key is not a signing key")
	}
	return Pair{Cert: certs[0], Key: signer, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// ParseCertificates reads every certificate of a PEM bundle; it needs at least one.
func ParseCertificates(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return out, nil
}

// CANeedsRenewal says why a CA must be replaced, or "" when it is good.
func CANeedsRenewal(ca Pair, now time.Time) string {
	if !ca.Cert.IsCA {
		return "not a CA certificate"
	}
	return lifetimeLeft(ca.Cert, now)
}

// LeafNeedsRenewal says why a leaf must be reissued by ca, or "" when it is good: it
// is unreadable, not signed by ca, for other names or usages, or in the last third of
// its life.
func LeafNeedsRenewal(ca Pair, certPEM, keyPEM []byte, req Request, now time.Time) string {
	leaf, err := Parse(certPEM, keyPEM)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	if !publicKeysEqual(leaf.Cert.PublicKey, leaf.Key.Public()) {
		return "the key does not match the certificate"
	}
	if err := leaf.Cert.CheckSignatureFrom(ca.Cert); err != nil {
		return "not signed by the current CA"
	}
	names := slices.Clone(leaf.Cert.DNSNames)
	want := slices.Clone(req.DNSNames)
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		return "its DNS names changed"
	}
	if req.Server != slices.Contains(leaf.Cert.ExtKeyUsage, x509.ExtKeyUsageServerAuth) ||
		req.Client != slices.Contains(leaf.Cert.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		return "its key usages changed"
	}
	return lifetimeLeft(leaf.Cert, now)
}

func lifetimeLeft(c *x509.Certificate, now time.Time) string {
	life := c.NotAfter.Sub(c.NotBefore)
	switch {
	case now.After(c.NotAfter):
		return "expired on " + c.NotAfter.UTC().Format(time.RFC3339)
	case c.NotAfter.Sub(now) < life/3:
		return "expires on " + c.NotAfter.UTC().Format(time.RFC3339)
	}
	return ""
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	e, ok := a.(equaler)
	return ok && e.Equal(b)
}

// Bundle is the trust bundle for ca.crt: the current CA first, then previous CAs that
// have not expired, so peers holding certificates of the old CA keep working during a
// rotation.
func Bundle(current Pair, previousPEM []byte, now time.Time) []byte {
	out := bytes.Clone(current.CertPEM)
	prev, err := ParseCertificates(previousPEM)
	if err != nil {
		return out
	}
	for _, c := range prev {
		if c.Equal(current.Cert) || now.After(c.NotAfter) {
			continue
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return out
}
