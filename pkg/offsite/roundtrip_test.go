package offsite_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
	"github.com/linstor-operator/linstor-operator/pkg/offsite"
)

// A database backup goes to the bucket and comes back byte for byte, with an identity
// and with a passphrase, over HTTP and over TLS trusting the target's CA, with and
// without a prefix; it lies where the package doc says; it is listed only once
// published; what Open returns decodes to the same database.
func TestRoundTrip(t *testing.T) {
	data := testDatabase(t)
	want, err := dbbackup.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	plain, tls := startServer(t, false), startServer(t, true)
	for _, tc := range []struct {
		name     string
		tls      bool
		prefix   string
		key      offsite.Key
		wantDir  string
		wantEnc  string
		wantFprt string
		// auto: no region (the client asks the service) and no path style forced.
		auto bool
	}{
		{name: "identity, HTTP, no prefix, region and addressing found out", auto: true, key: newIdentityKey(t), wantDir: "linstor-operator/databases", wantEnc: offsite.EncryptionX25519},
		{name: "passphrase, TLS with CA, prefix", tls: true, prefix: "/site-a//dr/", key: offsite.Key{Passphrase: "correct horse battery staple 7f3a"},
			wantDir: "site-a/dr/linstor-operator/databases", wantEnc: offsite.EncryptionScrypt, wantFprt: "scrypt"},
		{name: "identity, TLS with CA, prefix", tls: true, prefix: "cluster-b", key: newIdentityKey(t),
			wantDir: "cluster-b/linstor-operator/databases", wantEnc: offsite.EncryptionX25519},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			srv := plain
			if tc.tls {
				srv = tls
			}
			loc := location(srv, tc.prefix)
			if tc.auto {
				loc.Region, loc.PathStyle = "", false
			}
			s := newStore(t, loc, tc.key)
			if err := s.Check(ctx); err != nil {
				t.Fatal(err)
			}
			createdAt := time.Date(2026, 11, 27, 23, 30, 5, 0, time.UTC)
			id := offsite.NewID(testCluster, createdAt, "nightly-"+tc.wantEnc)
			u, err := s.Upload(ctx, id, writeBytes(data))
			if err != nil {
				t.Fatal(err)
			}
			if u.Size != int64(len(data)) || u.Checksum != dbbackup.Checksum(data) {
				t.Fatalf("Upload counted %d bytes %s, the stream is %d bytes %s", u.Size, u.Checksum, len(data), dbbackup.Checksum(data))
			}
			stored, err := os.ReadFile(filepath.Join(srv.Dir, bucket, tc.wantDir, id, "database.json.gz.age"))
			if err != nil {
				t.Fatalf("the object is not where the package doc says: %v", err)
			}
			if u.EncryptedSize != int64(len(stored)) || u.EncryptedChecksum != dbbackup.Checksum(stored) {
				t.Fatalf("Upload says the object is %d bytes %s; %d bytes %s are stored", u.EncryptedSize, u.EncryptedChecksum, len(stored), dbbackup.Checksum(stored))
			}
			if ids := listIDs(t, s); len(ids) != 0 {
				t.Fatalf("listed before it was published: %v", ids)
			}
			if err := s.Verify(ctx, u); err != nil {
				t.Fatal(err)
			}
			if err := s.Publish(ctx, manifestFor(u, createdAt)); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(srv.Dir, bucket, tc.wantDir, id, "manifest.json")); err != nil {
				t.Fatalf("the manifest is not where the package doc says: %v", err)
			}
			ms, _, err := s.List(ctx)
			if err != nil || len(ms) != 1 {
				t.Fatalf("List: %v, %v", ms, err)
			}
			m := ms[0]
			wantFprt := tc.wantFprt
			if wantFprt == "" {
				wantFprt = tc.key.Fingerprint()
			}
			if m.Format != 1 || m.ID != id || m.Encryption != tc.wantEnc || m.KeyFingerprint != wantFprt || m.Cluster != testCluster ||
				!m.CreatedAt.Equal(createdAt) || m.Checksum != u.Checksum || m.EncryptedChecksum != u.EncryptedChecksum {
				t.Fatalf("listed manifest %+v", m)
			}
			got, err := readAll(t, s, m)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("Open returned %d bytes, not the %d uploaded", len(got), len(data))
			}
			rc, err := s.Open(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			restored, err := dbbackup.ReadAll(rc)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, restored); diff != "" {
				t.Fatalf("the database read back differs (-uploaded +read):\n%s", diff)
			}
		})
	}
}

// Without the target's CA the server's certificate is not trusted, and the error
// says to add the CA.
func TestUntrustedCertificate(t *testing.T) {
	srv := startServer(t, true)
	loc := location(srv, "")
	loc.CA = nil
	err := newStore(t, loc, newIdentityKey(t)).Check(context.Background())
	if offsite.ReasonOf(err) != offsite.ReasonUntrusted {
		t.Fatalf("got %v (reason %q), want %s", err, offsite.ReasonOf(err), offsite.ReasonUntrusted)
	}
}
