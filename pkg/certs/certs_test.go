package certs

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)

func mustCA(t *testing.T, at time.Time) Pair {
	t.Helper()
	ca, err := NewCA("test-ca", at)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func mustIssue(t *testing.T, ca Pair, req Request, at time.Time) Pair {
	t.Helper()
	p, err := Issue(ca, req, at)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The generated server and client certificates complete a mutual-TLS HTTPS exchange,
// which is how the operator and CSI talk to the LINSTOR API.
func TestMutualTLSHandshake(t *testing.T) {
	ca := mustCA(t, time.Now())
	server := mustIssue(t, ca, Request{CommonName: "linstor-controller", DNSNames: []string{"localhost"}, Server: true}, time.Now())
	client := mustIssue(t, ca, Request{CommonName: "linstor-client", Client: true}, time.Now())
	stranger := mustIssue(t, mustCA(t, time.Now()), Request{CommonName: "intruder", Client: true}, time.Now())

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(Bundle(ca, nil, time.Now()))
	serverPair, err := tls.X509KeyPair(server.CertPEM, server.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverPair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	srv.StartTLS()
	defer srv.Close()
	url := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)

	get := func(p Pair) (string, error) {
		kp, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
		if err != nil {
			return "", err
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{kp}}}}
		resp, err := c.Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if got, err := get(client); err != nil || got != "linstor-client" {
		t.Fatalf("client with the generated certificate: %q, %v", got, err)
	}
	if _, err := get(stranger); err == nil {
		t.Fatal("a client certificate from another CA was accepted")
	}
	if _, err := get(server); err == nil {
		t.Fatal("a server-only certificate was accepted as a client certificate")
	}
}

func TestLeafNeedsRenewal(t *testing.T) {
	ca := mustCA(t, now)
	req := Request{CommonName: "api", DNSNames: []string{"b", "a"}, Server: true}
	leaf := mustIssue(t, ca, req, now)
	other := mustIssue(t, ca, Request{CommonName: "x", Server: true}, now)

	cases := map[string]struct {
		ca        Pair
		cert, key []byte
		req       Request
		at        time.Time
		want      string
	}{
		"fresh":                       {ca, leaf.CertPEM, leaf.KeyPEM, Request{CommonName: "api", DNSNames: []string{"a", "b"}, Server: true}, now, ""},
		"two thirds of its life used": {ca, leaf.CertPEM, leaf.KeyPEM, req, now.Add(LeafValidity * 2 / 3).Add(time.Hour), "expires on"},
		"expired":                     {ca, leaf.CertPEM, leaf.KeyPEM, req, now.Add(LeafValidity + time.Hour), "expired on"},
		"another CA":                  {mustCA(t, now), leaf.CertPEM, leaf.KeyPEM, req, now, "not signed by the current CA"},
		"new DNS name":                {ca, leaf.CertPEM, leaf.KeyPEM, Request{CommonName: "api", DNSNames: []string{"a", "b", "c"}, Server: true}, now, "DNS names changed"},
		"usage changed":               {ca, leaf.CertPEM, leaf.KeyPEM, Request{CommonName: "api", DNSNames: []string{"a", "b"}, Server: true, Client: true}, now, "key usages changed"},
		"swapped key":                 {ca, leaf.CertPEM, other.KeyPEM, req, now, "key does not match"},
		"garbage":                     {ca, []byte("nope"), leaf.KeyPEM, req, now, "unreadable"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := LeafNeedsRenewal(tc.ca, tc.cert, tc.key, tc.req, tc.at)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("LeafNeedsRenewal = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCARenewalAndBundle(t *testing.T) {
	old := mustCA(t, now)
	if r := CANeedsRenewal(old, now); r != "" {
		t.Fatalf("fresh CA needs renewal: %s", r)
	}
	later := now.Add(CAValidity * 2 / 3).Add(time.Hour)
	if r := CANeedsRenewal(old, later); !strings.Contains(r, "expires on") {
		t.Fatalf("CA in its last third: %q", r)
	}
	next := mustCA(t, later)
	bundle := Bundle(next, Bundle(old, nil, now), later)
	certs, err := ParseCertificates(bundle)
	if err != nil || len(certs) != 2 || !certs[0].Equal(next.Cert) || !certs[1].Equal(old.Cert) {
		t.Fatalf("bundle during rotation = %d certs, %v; want the new CA then the old one", len(certs), err)
	}
	// A leaf of the old CA still verifies against the bundle while the rotation runs.
	leaf := mustIssue(t, old, Request{CommonName: "sat", Client: true, Server: true}, later.Add(-24*time.Hour))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundle)
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: later, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Fatalf("old leaf rejected by the rotation bundle: %v", err)
	}
	// Once the old CA expired it leaves the bundle.
	if certs, _ := ParseCertificates(Bundle(next, bundle, now.Add(CAValidity+time.Hour))); len(certs) != 1 {
		t.Fatalf("expired CA kept in the bundle: %d certs", len(certs))
	}
	// A leaf never outlives its CA.
	short := mustIssue(t, old, Request{CommonName: "late"}, now.Add(CAValidity-24*time.Hour))
	if short.Cert.NotAfter.After(old.Cert.NotAfter) {
		t.Fatal("leaf outlives its CA")
	}
}

func TestParseRejectsBadInput(t *testing.T) {
	ca := mustCA(t, now)
	if _, err := Parse(ca.CertPEM, []byte("x")); err == nil || !strings.Contains(err.Error(), "tls.key holds no PEM block") {
		t.Fatalf("bad key: %v", err)
	}
	if _, err := Parse([]byte("x"), ca.KeyPEM); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("bad cert: %v", err)
	}
	if p, err := Parse(ca.CertPEM, ca.KeyPEM); err != nil || !p.Cert.Equal(ca.Cert) {
		t.Fatalf("round trip: %v", err)
	}
}
