package offsite_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/linstor-operator/linstor-operator/pkg/offsite"
)

// window is the length of the plaintext runs searched for in the stored bytes.
const window = 12

// leaks reports whether stored contains any window-byte run of plain (or plain's
// secretValue, or the decompressed database's).
func leaks(t *testing.T, stored, plain []byte) string {
	t.Helper()
	if bytes.Contains(stored, []byte(secretValue)) {
		return "the secret value"
	}
	index := map[string]bool{}
	for i := 0; i+window <= len(stored); i++ {
		index[string(stored[i:i+window])] = true
	}
	for i := 0; i+window <= len(plain); i++ {
		if index[string(plain[i:i+window])] {
			return fmt.Sprintf("the %d plaintext bytes at offset %d", window, i)
		}
	}
	return ""
}

// Without the key the bucket's bytes reveal nothing: neither the stored object nor
// the manifest holds the secret value or any 12-byte run of the plaintext stream or
// of the database it decompresses to (the same search finds both in an unencrypted
// copy, so it would see a leak); the object is an age file the age library opens with
// the key; Verify with another identity or another passphrase fails as WrongKey, and
// so does Open, but for another passphrase: its manifest's MAC fails first (Corrupt).
func TestEncryption(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t, false)
	data := testDatabase(t)
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	database, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(database, []byte(secretValue)) {
		t.Fatal("the test database does not hold the secret value")
	}
	// The search works: it finds the plaintext in itself.
	if leaks(t, append([]byte("header"), data...), data) == "" || leaks(t, database, database) == "" {
		t.Fatal("the leak search does not find plaintext in plaintext")
	}

	for _, key := range []offsite.Key{newIdentityKey(t), {Passphrase: "a long random passphrase 0f9e8d7c6b5a"}} {
		t.Run(key.Encryption(), func(t *testing.T) {
			s := newStore(t, location(srv, key.Encryption()), key)
			m := backup(t, s, "enc", time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC), data)
			dir := filepath.Join(srv.Dir, bucket, key.Encryption(), databasesDir, m.ID)
			stored, err := os.ReadFile(filepath.Join(dir, dataName))
			if err != nil {
				t.Fatal(err)
			}
			manifest, err := os.ReadFile(filepath.Join(dir, manifestName))
			if err != nil {
				t.Fatal(err)
			}
			for name, raw := range map[string][]byte{"object": stored, "manifest": manifest} {
				for plainName, plain := range map[string][]byte{"gzip stream": data, "database": database} {
					if leak := leaks(t, raw, plain); leak != "" {
						t.Fatalf("the stored %s holds %s of the %s", name, leak, plainName)
					}
				}
			}
			if _, err := gzip.NewReader(bytes.NewReader(stored)); err == nil {
				t.Fatal("the stored object reads as gzip")
			}
			// A passphrase's scrypt work factor fits the operator's memory (2^15: 32 MiB).
			if key.Passphrase != "" && !regexp.MustCompile(`\n-> scrypt \S+ 15\n`).Match(stored[:200]) {
				t.Fatalf("the scrypt stanza is not of work factor 15: %q", stored[:100])
			}

			// Any age implementation opens it with the key (the runbook's `age -d`).
			identity := ageIdentity(t, key)
			dec, err := age.Decrypt(bytes.NewReader(stored), identity)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := io.ReadAll(dec); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("age decrypts %d bytes, %v", len(got), err)
			}

			for _, other := range []offsite.Key{newIdentityKey(t), {Passphrase: "another passphrase"}} {
				o := newStore(t, location(srv, key.Encryption()), other)
				err := o.Verify(ctx, uploadOf(m))
				if offsite.ReasonOf(err) != offsite.ReasonWrongKey || !strings.Contains(err.Error(), bucket) {
					t.Fatalf("Verify with another %s key: %v (reason %q), want %s naming the bucket", other.Encryption(), err, offsite.ReasonOf(err), offsite.ReasonWrongKey)
				}
				// Passphrases share the fingerprint "scrypt": only the manifest's MAC tells
				// another passphrase's backup, as it tells a forgery.
				wantReason, wantText := offsite.ReasonWrongKey, m.KeyFingerprint
				if key.Passphrase != "" && other.Passphrase != "" {
					wantReason, wantText = offsite.ReasonCorrupt, notAuthenticated
				}
				if _, err := readAll(t, o, m); offsite.ReasonOf(err) != wantReason || !strings.Contains(err.Error(), wantText) {
					t.Fatalf("Open with another %s key: %v, want %s with %q", other.Encryption(), err, wantReason, wantText)
				}
			}
		})
	}
}
