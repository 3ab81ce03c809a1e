package offsite_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/minio/minio-go/v7"

	"github.com/linstor-operator/linstor-operator/pkg/offsite"
)

// notAuthenticated is the start of the message of a manifest the key did not make.
const notAuthenticated = "the manifest is not authenticated by this key"

func sha256Of(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// putObject writes an object as anyone with write access to the bucket can.
func putObject(t *testing.T, client *minio.Client, key string, data []byte) {
	t.Helper()
	if _, err := client.PutObject(context.Background(), bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
}

// assertRefused checks that Get and Open refuse a backup as not authenticated, and
// that the message says what to do (not to check the storage).
func assertRefused(t *testing.T, s *offsite.Store, m offsite.Manifest, why string) {
	t.Helper()
	_, err := s.Get(context.Background(), m.ID)
	if offsite.ReasonOf(err) != offsite.ReasonCorrupt || !strings.Contains(err.Error(), why) {
		t.Fatalf("Get: %v, want %s with %q", err, offsite.ReasonCorrupt, why)
	}
	if !strings.Contains(err.Error(), "check who may write to the bucket") || strings.Contains(err.Error(), "S3 service's storage") {
		t.Fatalf("Get: the message does not say what to do: %v", err)
	}
	if _, err := readAll(t, s, m); offsite.ReasonOf(err) != offsite.ReasonCorrupt || !strings.Contains(err.Error(), why) {
		t.Fatalf("Open: %v, want %s with %q", err, offsite.ReasonCorrupt, why)
	}
}

// listed is the manifest of id as List returns it.
func listed(t *testing.T, s *offsite.Store, id string) offsite.Manifest {
	t.Helper()
	ms, unreadable, err := s.List(context.Background())
	if err != nil || len(unreadable) > 0 {
		t.Fatalf("List: %v, unreadable %v", err, unreadable)
	}
	for _, m := range ms {
		if m.ID == id {
			return m
		}
	}
	t.Fatalf("List does not show %s", id)
	return offsite.Manifest{}
}

// Someone with write access to the bucket and the public recipient (which every
// manifest shows) replaces a backup with another database: they encrypt it to the
// recipient and write the object and a manifest with its true sizes and checksums.
// The forgery is whole (Verify, which checks an upload against the object and knows
// no manifest, accepts it), but its manifest carries no MAC of the key: Get and Open
// refuse it, with or without the real backup's MAC, or with none; List shows it as
// not authenticated. The real backup, put back, passes.
func TestForgedBackupIsRefused(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t, false)
	key := newIdentityKey(t)
	s := newStore(t, location(srv, "forged"), key)
	data := testDatabase(t)
	real := backup(t, s, "nightly", time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC), data)
	if !strings.HasPrefix(real.MAC, "hmac-sha256:") || !real.Authenticated {
		t.Fatalf("the published manifest: MAC %q, authenticated %v", real.MAC, real.Authenticated)
	}
	if m := listed(t, s, real.ID); !m.Authenticated {
		t.Fatal("List does not show the real backup as authenticated")
	}

	// The forger knows only what the bucket shows.
	recipient, err := age.ParseX25519Recipient(real.KeyFingerprint)
	if err != nil {
		t.Fatal(err)
	}
	forgedPlain := bytes.Replace(data, []byte{data[len(data)/2]}, []byte{data[len(data)/2] ^ 0xff}, 1)
	var forgedObject bytes.Buffer
	enc, err := age.Encrypt(&forgedObject, recipient)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := enc.Write(forgedPlain); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	forged := real
	forged.Size, forged.Checksum = int64(len(forgedPlain)), sha256Of(forgedPlain)
	forged.EncryptedSize, forged.EncryptedChecksum = int64(forgedObject.Len()), sha256Of(forgedObject.Bytes())
	forged.LinstorVersion = "1.99.0"
	if forged.Checksum == real.Checksum || forged.EncryptedChecksum == real.EncryptedChecksum {
		t.Fatal("the forgery is the real backup")
	}

	dir := "forged/" + databasesDir + "/" + real.ID + "/"
	realObject, err := os.ReadFile(filepath.Join(srv.Dir, bucket, dir, dataName))
	if err != nil {
		t.Fatal(err)
	}
	client := srv.Client()
	putObject(t, client, dir+dataName, forgedObject.Bytes())
	if err := s.Verify(ctx, uploadOf(forged)); err != nil {
		t.Fatalf("the forged object is not a whole backup for this key, so the test proves nothing: %v", err)
	}
	for name, mac := range map[string]string{"the real backup's MAC": real.MAC, "a made-up MAC": "hmac-sha256:" + strings.Repeat("0", 64), "no MAC": ""} {
		t.Run(name, func(t *testing.T) {
			m := forged
			m.MAC, m.Authenticated = mac, false
			raw, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			putObject(t, client, dir+manifestName, raw)
			why := notAuthenticated + ": it was made with another key or changed in the bucket"
			if mac == "" {
				why = notAuthenticated + ": it carries no MAC"
			}
			assertRefused(t, s, m, why)
			if got := listed(t, s, m.ID); got.Authenticated || got.LinstorVersion != forged.LinstorVersion {
				t.Fatalf("List shows the forged manifest (LINSTOR %s) as authenticated: %v", got.LinstorVersion, got.Authenticated)
			}
		})
	}

	// The real backup, put back, passes.
	putObject(t, client, dir+dataName, realObject)
	raw, err := json.Marshal(real)
	if err != nil {
		t.Fatal(err)
	}
	putObject(t, client, dir+manifestName, raw)
	got, err := s.Get(ctx, real.ID)
	if err != nil || !got.Authenticated {
		t.Fatalf("Get of the real backup: %v (authenticated %v)", err, got.Authenticated)
	}
	if read, err := readAll(t, s, got); err != nil || !bytes.Equal(read, data) {
		t.Fatalf("Open of the real backup: %d bytes, %v", len(read), err)
	}
}

// A manifest edited in place (only a field no check reads, the LINSTOR version) is
// refused by Get and by Open, and listed as not authenticated; put back, it passes.
// A new store of the same key (a new cluster after a disaster) authenticates it: the
// MAC's key comes from the key alone. With an identity and with a passphrase.
func TestEditedManifestIsRefused(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t, false)
	data := testDatabase(t)
	for _, key := range []offsite.Key{newIdentityKey(t), {Passphrase: "a long random passphrase 5e4d3c2b1a09"}} {
		t.Run(key.Encryption(), func(t *testing.T) {
			s := newStore(t, location(srv, key.Encryption()), key)
			real := backup(t, s, "nightly", time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC), data)
			path := filepath.Join(srv.Dir, bucket, key.Encryption(), databasesDir, real.ID, manifestName)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var fields map[string]any
			if err := json.Unmarshal(raw, &fields); err != nil {
				t.Fatal(err)
			}
			if fields["mac"] != real.MAC {
				t.Fatalf("the stored manifest's mac is %v, Get says %s", fields["mac"], real.MAC)
			}
			fields["linstorVersion"] = "1.99.0"
			edited, err := json.Marshal(fields)
			if err != nil {
				t.Fatal(err)
			}
			must(t, os.WriteFile(path, edited, 0o644))
			m := real
			m.LinstorVersion = "1.99.0"
			assertRefused(t, s, m, notAuthenticated+": it was made with another key or changed in the bucket")
			if got := listed(t, s, real.ID); got.Authenticated || got.LinstorVersion != "1.99.0" {
				t.Fatalf("List: LINSTOR %s, authenticated %v; want the edited manifest, not authenticated", got.LinstorVersion, got.Authenticated)
			}

			must(t, os.WriteFile(path, raw, 0o644))
			fresh := newStore(t, location(srv, key.Encryption()), key)
			got, err := fresh.Get(ctx, real.ID)
			if err != nil || !got.Authenticated {
				t.Fatalf("Get by a new store of the key: %v (authenticated %v)", err, got.Authenticated)
			}
			if read, err := readAll(t, fresh, got); err != nil || !bytes.Equal(read, data) {
				t.Fatalf("Open by a new store of the key: %d bytes, %v", len(read), err)
			}
			if !listed(t, fresh, real.ID).Authenticated {
				t.Fatal("List by a new store of the key: not authenticated")
			}
		})
	}
}

// List shows every cluster's backups, authenticated or not by the store's key: those
// of another identity or another passphrase are listed, not authenticated; Get and
// Open refuse them (another identity is named by its fingerprint: WrongKey; another
// passphrase has the same fingerprint, so only the MAC tells: Corrupt).
func TestListShowsOtherKeysBackups(t *testing.T) {
	srv := startServer(t, false)
	data := testDatabase(t)
	at := func(h int) time.Time { return time.Date(2026, 11, 28, h, 0, 0, 0, time.UTC) }
	identity, otherIdentity := newIdentityKey(t), newIdentityKey(t)
	passphrase, otherPassphrase := offsite.Key{Passphrase: "passphrase one 0a1b2c3d4e5f"}, offsite.Key{Passphrase: "passphrase two 6a7b8c9d0e1f"}
	loc := location(srv, "shared")
	s := newStore(t, loc, identity)
	own := backup(t, s, "own", at(1), data)
	ofIdentity := backup(t, newStore(t, loc, otherIdentity), "other-identity", at(2), data)
	ofPassphrase := backup(t, newStore(t, loc, passphrase), "passphrase", at(3), data)
	ofOtherPassphrase := backup(t, newStore(t, loc, otherPassphrase), "other-passphrase", at(4), data)

	ms, unreadable, err := s.List(context.Background())
	if err != nil || len(unreadable) > 0 || len(ms) != 4 {
		t.Fatalf("List: %d manifests, unreadable %v, %v", len(ms), unreadable, err)
	}
	for _, m := range ms {
		if m.Authenticated != (m.ID == own.ID) {
			t.Fatalf("List by the identity's store: %s authenticated %v", m.ID, m.Authenticated)
		}
	}
	for _, m := range []offsite.Manifest{ofIdentity, ofPassphrase} {
		if _, err := s.Get(context.Background(), m.ID); offsite.ReasonOf(err) != offsite.ReasonWrongKey || !strings.Contains(err.Error(), m.KeyFingerprint) {
			t.Fatalf("Get of %s: %v, want %s naming %s", m.ID, err, offsite.ReasonWrongKey, m.KeyFingerprint)
		}
	}

	p := newStore(t, loc, passphrase)
	ms, _, err = p.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Authenticated != (m.ID == ofPassphrase.ID) {
			t.Fatalf("List by the passphrase's store: %s authenticated %v", m.ID, m.Authenticated)
		}
	}
	assertRefused(t, p, ofOtherPassphrase, notAuthenticated+": it was made with another key or changed in the bucket")
}

// The MAC is of the manifest as a reader decodes it: a creation time in a zone other
// than UTC, with a monotonic reading (time.Now, as a controller has it), and a version
// string that is not UTF-8 (JSON carries it as U+FFFD) still authenticate.
func TestManifestAuthenticatesAsDecoded(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, location(startServer(t, false), ""), newIdentityKey(t))
	createdAt := time.Now().In(time.FixedZone("CET", 3600))
	u, err := s.Upload(ctx, offsite.NewID(testCluster, createdAt, "zoned"), writeBytes(testDatabase(t)))
	must(t, err)
	m := manifestFor(u, createdAt)
	m.LinstorVersion = "1.32.3\xff"
	must(t, s.Publish(ctx, m))
	got, err := s.Get(ctx, u.ID)
	if err != nil || !got.Authenticated {
		t.Fatalf("Get: %v (authenticated %v)", err, got.Authenticated)
	}
	if !got.CreatedAt.Equal(createdAt) || got.LinstorVersion != "1.32.3\uFFFD" {
		t.Fatalf("Get: created %v, LINSTOR %q", got.CreatedAt, got.LinstorVersion)
	}
	if _, err := readAll(t, s, got); err != nil {
		t.Fatalf("Open: %v", err)
	}
}
