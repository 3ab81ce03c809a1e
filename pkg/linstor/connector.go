package linstor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/clustertls"

	lapi "github.com/LINBIT/golinstor/client"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// clientCertTTL bounds how long a client certificate read from its Secret is reused.
// Renewed certificates overlap the old ones by months, so minutes of staleness are safe,
// and Secrets are not cached by the manager.
const clientCertTTL = 2 * time.Minute

// Connection reaches one cluster's LINSTOR API.
type Connection struct {
	*lapi.Client
	// HTTP is the client behind it, for the few calls golinstor does not wrap.
	HTTP *http.Client
	URL  string
}

// Connector opens connections to the LINSTOR of a LinstorCluster: the Service of the
// controller the operator deploys (HTTPS with a client certificate when API TLS is on),
// the external controller's URL, or URL when set for out-of-cluster development.
type Connector struct {
	// Reader reads client-certificate Secrets.
	Reader client.Reader
	// URL, when set, replaces every cluster's URL.
	URL string
	// Transport carries plain requests; nil means http.DefaultTransport. HTTPS with a
	// client certificate uses a clone of it when it is an *http.Transport. Every
	// transport is instrumented for metrics.
	Transport http.RoundTripper

	once  sync.Once
	plain http.RoundTripper
	mu    sync.Mutex
	certs map[string]cachedTransport
}

type cachedTransport struct {
	rt      http.RoundTripper
	fetched time.Time
}

// ClusterURL is where the operator reaches the cluster's LINSTOR without an override.
func ClusterURL(c *linstorv1.LinstorCluster) string {
	if ext := c.Spec.ExternalController; ext != nil {
		return ext.URL
	}
	return clustertls.ServiceURL(c)
}

// Connect returns a connection for the cluster.
func (c *Connector) Connect(ctx context.Context, cluster *linstorv1.LinstorCluster) (*Connection, error) {
	c.once.Do(func() { c.plain = InstrumentedTransport(c.Transport) })
	url := c.URL
	if url == "" {
		url = ClusterURL(cluster)
	}
	rt := c.plain
	if strings.HasPrefix(url, "https://") && clustertls.UsesAPIClientCertificate(cluster) {
		var err error
		if rt, err = c.clientCertTransport(ctx, cluster.Namespace, clustertls.APIClientSecretName(cluster), clustertls.APICAReference(cluster)); err != nil {
			return nil, err
		}
	}
	hc := &http.Client{Timeout: requestTimeout, Transport: rt}
	lc, err := newClient(url, hc)
	if err != nil {
		return nil, err
	}
	return &Connection{Client: lc, HTTP: hc, URL: url}, nil
}

// clientCertTransport presents the client certificate of Secret name and verifies the
// server against ca (spec.tls.api.caReference) when set, else the Secret's ca.crt.
func (c *Connector) clientCertTransport(ctx context.Context, namespace, name string, ca *linstorv1.CAReference) (http.RoundTripper, error) {
	key := namespace + "/" + name
	if ca != nil {
		key += "/" + ca.Kind + "/" + ca.Name + "/" + clustertls.CAKey(ca)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cached, ok := c.certs[key]; ok && time.Since(cached.fetched) < clientCertTTL {
		return cached.rt, nil
	}
	secret := &corev1.Secret{}
	if err := c.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
		return nil, fmt.Errorf("reading the LINSTOR client certificate Secret %s: %w", key, err)
	}
	roots := secret.Data["ca.crt"]
	if ca != nil {
		pem, err := ReadCAReference(ctx, c.Reader, namespace, ca)
		if err != nil {
			return nil, fmt.Errorf("spec.tls.api.caReference: %w", err)
		}
		roots = pem
	}
	cfg, err := clientTLSConfig(secret, roots)
	if err != nil {
		return nil, fmt.Errorf("Secret %s: %w", key, err)
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	if t, ok := c.Transport.(*http.Transport); ok {
		base = t.Clone()
	}
	base.TLSClientConfig = cfg
	rt := InstrumentedTransport(base)
	if c.certs == nil {
		c.certs = map[string]cachedTransport{}
	}
	c.certs[key] = cachedTransport{rt: rt, fetched: time.Now()}
	return rt, nil
}

// ClientTLSConfig trusts the Secret's ca.crt and presents its tls.crt and tls.key.
func ClientTLSConfig(secret *corev1.Secret) (*tls.Config, error) {
	return clientTLSConfig(secret, secret.Data["ca.crt"])
}

// clientTLSConfig trusts the PEM certificates ca and presents the Secret's tls.crt and
// tls.key.
func clientTLSConfig(secret *corev1.Secret, ca []byte) (*tls.Config, error) {
	pair, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("client certificate: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		return nil, errors.New("the CA holds no PEM certificate")
	}
	return &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}
