package offsite_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"filippo.io/age"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/linstor-operator/linstor-operator/internal/s3server"
	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
	"github.com/linstor-operator/linstor-operator/pkg/offsite"
)

const bucket = "linstor-backups"

// The layout the package doc promises.
const (
	databasesDir = "linstor-operator/databases"
	dataName     = "database.json.gz.age"
	manifestName = "manifest.json"
)

// secretValue is in the test database (as LINSTOR keeps its master passphrase's hash
// in SecConfiguration): no byte run of it may reach the bucket.
const secretValue = "hunter2-MASTER-PASSPHRASE-d6f1c0ffee"

var testCluster = offsite.ClusterIdentity{Namespace: "linstor", Name: "prod", UID: "2f6b8f2e-2d0c-4d83-9a8e-d1b1e0c0f001"}

// startServer runs a real S3 server with the test bucket.
func startServer(t testing.TB, useTLS bool) *s3server.Server {
	t.Helper()
	ctx := context.Background()
	srv, err := s3server.Start(ctx, s3server.Options{TLS: useTLS})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	if err := srv.CreateBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	return srv
}

func location(srv *s3server.Server, prefix string) offsite.Location {
	return offsite.Location{Endpoint: srv.Endpoint, Bucket: bucket, Prefix: prefix, Region: srv.Region,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, CA: srv.CA, PathStyle: true}
}

func newIdentityKey(t testing.TB) offsite.Key {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return offsite.Key{Identity: id.String()}
}

func newStore(t testing.TB, loc offsite.Location, key offsite.Key) *offsite.Store {
	t.Helper()
	s, err := offsite.New(loc, key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testDatabase is an encoded dbbackup stream (format 2, as dbbackup.Write writes) of a
// small database holding secretValue.
func testDatabase(t testing.TB) []byte {
	t.Helper()
	d := &dbbackup.Dump{CRDs: []apiextensionsv1.CustomResourceDefinition{
		{ObjectMeta: metav1.ObjectMeta{Name: "secconfiguration." + dbbackup.Group}},
		{ObjectMeta: metav1.ObjectMeta{Name: "nodes." + dbbackup.Group}},
	}}
	d.Objects = append(d.Objects, map[string]any{
		"apiVersion": dbbackup.Group + "/v1-27-1", "kind": "SecConfiguration",
		"metadata": map[string]any{"name": "masterpassphrase"},
		"spec":     map[string]any{"entry_key": "MASTERPASSPHRASE", "entry_value": secretValue},
	})
	for i := range 200 {
		d.Objects = append(d.Objects, map[string]any{
			"apiVersion": dbbackup.Group + "/v1-27-1", "kind": "Nodes",
			"metadata": map[string]any{"name": fmt.Sprintf("node-%03d", i)},
			"spec":     map[string]any{"node_name": fmt.Sprintf("NODE-%03d", i), "node_type": 2, "uuid": fmt.Sprintf("uuid-%d", i)},
		})
	}
	data, err := d.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func writeBytes(data []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.Copy(w, bytes.NewReader(data))
		return err
	}
}

// manifestFor is the manifest a controller would publish after u.
func manifestFor(u offsite.Upload, createdAt time.Time) offsite.Manifest {
	return offsite.Manifest{ID: u.ID, Cluster: testCluster, Backup: "nightly", LinstorVersion: "1.32.3", OperatorVersion: "2.9.0",
		CreatedAt: createdAt, CRDs: 2, Objects: 201, Size: u.Size, Checksum: u.Checksum,
		EncryptedSize: u.EncryptedSize, EncryptedChecksum: u.EncryptedChecksum}
}

// backup uploads data, verifies and publishes it: a backup as a controller makes one.
func backup(t testing.TB, s *offsite.Store, backupName string, createdAt time.Time, data []byte) offsite.Manifest {
	t.Helper()
	ctx := context.Background()
	u, err := s.Upload(ctx, offsite.NewID(testCluster, createdAt, backupName), writeBytes(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(ctx, u); err != nil {
		t.Fatal(err)
	}
	m := manifestFor(u, createdAt)
	if err := s.Publish(ctx, m); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func listIDs(t testing.TB, s *offsite.Store) []string {
	t.Helper()
	ms, unreadable, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(unreadable) > 0 {
		t.Fatalf("unreadable manifests: %v", unreadable)
	}
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	return ids
}

func readAll(t testing.TB, s *offsite.Store, m offsite.Manifest) ([]byte, error) {
	t.Helper()
	rc, err := s.Open(context.Background(), m)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// newRandomReader is an endless stream of incompressible bytes, the same for a seed.
func newRandomReader(seed byte) io.Reader {
	var s [32]byte
	s[0] = seed
	return rand.NewChaCha8(s)
}

// uploadOf is what a manifest says was uploaded.
func uploadOf(m offsite.Manifest) offsite.Upload {
	return offsite.Upload{ID: m.ID, Size: m.Size, Checksum: m.Checksum, EncryptedSize: m.EncryptedSize, EncryptedChecksum: m.EncryptedChecksum}
}

// ageIdentity is the key as the age library (and its CLI) takes it.
func ageIdentity(t testing.TB, key offsite.Key) age.Identity {
	t.Helper()
	if key.Passphrase != "" {
		id, err := age.NewScryptIdentity(key.Passphrase)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	id, err := age.ParseX25519Identity(key.Identity)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
