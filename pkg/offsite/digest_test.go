package offsite_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/offsite"
)

// A keyed digest tells whether secret values changed without letting whoever reads
// it (a status) test guesses of them offline: it depends on the store's key, on every
// part, and is no plain hash of the parts.
func TestKeyedDigest(t *testing.T) {
	loc := offsite.Location{Endpoint: "http://127.0.0.1:1", Bucket: "b", AccessKeyID: "a", SecretAccessKey: "s"}
	digest := func(k offsite.Key, parts ...string) string {
		t.Helper()
		d, err := newStore(t, loc, k).KeyedDigest(parts...)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	idA, idB := newIdentityKey(t), newIdentityKey(t)
	parts := []string{"https://s3.example.com", "bucket", "eu-1", "AKIA", "the secret key"}
	d := digest(idA, parts...)
	if again := digest(idA, parts...); again != d {
		t.Fatalf("the same key and parts gave %s and %s", d, again)
	}
	if digest(idB, parts...) == d {
		t.Error("another key gave the same digest")
	}
	if digest(offsite.Key{Passphrase: "a passphrase"}, parts...) == d {
		t.Error("a passphrase gave the identity's digest")
	}
	for i := range parts {
		changed := append([]string(nil), parts...)
		changed[i] += "x"
		if digest(idA, changed...) == d {
			t.Errorf("changing part %d left the digest", i)
		}
	}
	if digest(idA, "ab", "c") == digest(idA, "a", "bc") {
		t.Error("the parts' boundaries are not in the digest")
	}
	plain := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	if strings.HasPrefix(hex.EncodeToString(plain[:]), d) || strings.Contains(d, hex.EncodeToString(plain[:8])) {
		t.Error("the digest is a plain hash of the parts")
	}
}
