package offsite

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Location is a bucket and where in it backups go.
type Location struct {
	// Endpoint is the S3 service's URL, "https://s3.example.com[:port]" or "http://…":
	// the scheme decides TLS.
	Endpoint string
	Bucket   string
	// Prefix is the directory in the bucket ("" or "a/b"; slashes around it do not
	// matter).
	Prefix string
	// Region is the bucket's; "" asks the service.
	Region                       string
	AccessKeyID, SecretAccessKey string
	// CA is a PEM bundle trusted besides the system's roots (nil: the system's only).
	CA []byte
	// PathStyle makes path-style requests (most on-premises services); false lets the
	// client choose by endpoint.
	PathStyle bool
}

// maxTries is how many times a request is sent before its error counts.
const maxTries = 4

// Store reads and writes the backups of one Location with one Key.
type Store struct {
	loc    Location
	key    Key
	client *minio.Client
	// base is "<prefix>/linstor-operator/databases/".
	base string
	mac  macKey
}

// New checks the location and the key and makes a store; it does no I/O.
func New(loc Location, key Key) (*Store, error) {
	s := &Store{loc: loc, key: key}
	if err := key.validate(); err != nil {
		return nil, s.failWith(ReasonInvalid, "new", "", err)
	}
	client, err := newClient(loc)
	if err != nil {
		return nil, s.failWith(ReasonInvalid, "new", "", err)
	}
	s.client = client
	s.base = normalizePrefix(loc.Prefix) + databasesDir
	return s, nil
}

func newClient(loc Location) (*minio.Client, error) {
	u, err := url.Parse(loc.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: %w", loc.Endpoint, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.User != nil {
		return nil, fmt.Errorf("endpoint %q is not http(s)://host[:port]", loc.Endpoint)
	}
	if loc.Bucket == "" {
		return nil, errors.New("no bucket")
	}
	if loc.AccessKeyID == "" || loc.SecretAccessKey == "" {
		return nil, errors.New("no access key ID or secret access key")
	}
	transport, err := newTransport(loc.CA)
	if err != nil {
		return nil, err
	}
	lookup := minio.BucketLookupAuto
	if loc.PathStyle {
		lookup = minio.BucketLookupPath
	}
	return minio.New(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(loc.AccessKeyID, loc.SecretAccessKey, ""),
		Secure:       u.Scheme == "https",
		Region:       loc.Region,
		BucketLookup: lookup,
		Transport:    transport,
		// minio-go tries 10 times by default (4–5 s against a refused connection):
		// enough tries to ride out a brief 5xx, few enough that one unreachable bucket
		// does not hold a controller's worker for long.
		MaxRetries: maxTries,
	})
}

// newTransport trusts the system's roots and ca.
func newTransport(ca []byte) (http.RoundTripper, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if len(ca) == 0 {
		return t, nil
	}
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	if !roots.AppendCertsFromPEM(ca) {
		return nil, errors.New("the CA bundle holds no PEM certificate")
	}
	t.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	return t, nil
}

// normalizePrefix is "" or "a/b/" for any of "a/b", "/a//b/".
func normalizePrefix(prefix string) string {
	var parts []string
	for _, p := range strings.Split(prefix, "/") {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "/") + "/"
}

// Key returns the key the store encrypts with.
func (s *Store) Key() Key { return s.key }

// Location returns the store's location.
func (s *Store) Location() Location { return s.loc }

func (s *Store) dataKey(id string) string     { return s.base + id + "/" + dataName }
func (s *Store) manifestKey(id string) string { return s.base + id + "/" + manifestName }

// Check reaches the bucket: the service answers, the credentials hold, the bucket
// exists and may be listed.
func (s *Store) Check(ctx context.Context) error {
	exists, err := s.client.BucketExists(ctx, s.loc.Bucket)
	if err != nil {
		return s.fail("check", "", err)
	}
	if !exists {
		return s.failWith(ReasonNoSuchBucket, "check", "", errors.New("the bucket does not exist"))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for obj := range s.client.ListObjects(ctx, s.loc.Bucket, minio.ListObjectsOptions{Prefix: s.base, MaxKeys: 1}) {
		return s.fail("check", s.base, obj.Err)
	}
	return nil
}
