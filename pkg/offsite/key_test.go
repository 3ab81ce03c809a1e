package offsite_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/linstor-operator/linstor-operator/pkg/offsite"
)

// A key Secret holds an identity (as age-keygen writes it, comments included) or a
// passphrase, never both, never neither, and the errors name the Secret's keys
// without quoting key material.
func TestKeyFromSecret(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	keygenFile := "# created: 2026-11-28T00:00:00Z\n# public key: " + id.Recipient().String() + "\n" + id.String() + "\n"
	for _, tc := range []struct {
		name       string
		data       map[string][]byte
		want       offsite.Key
		wantErr    string
		wantFprint string
	}{
		{name: "identity as age-keygen writes it", data: map[string][]byte{"identity": []byte(keygenFile)},
			want: offsite.Key{Identity: strings.TrimSpace(keygenFile)}, wantFprint: id.Recipient().String()},
		{name: "passphrase with a trailing newline", data: map[string][]byte{"passphrase": []byte("s3cr3t passphrase\n")},
			want: offsite.Key{Passphrase: "s3cr3t passphrase"}, wantFprint: "scrypt"},
		{name: "both", data: map[string][]byte{"identity": []byte(id.String()), "passphrase": []byte("x")},
			wantErr: `has both "identity" and "passphrase"`},
		{name: "neither", data: map[string][]byte{"key": []byte("x")}, wantErr: `neither "identity" (an age X25519 identity`},
		{name: "empty passphrase", data: map[string][]byte{"passphrase": []byte("\n")}, wantErr: `neither "identity"`},
		{name: "not an identity", data: map[string][]byte{"identity": []byte("AGE-SECRET-KEY-1NOTAKEY")}, wantErr: `the "identity" is not an age identity`},
		{name: "two identities", data: map[string][]byte{"identity": []byte(id.String() + "\n" + id.String())}, wantErr: "holds 2 identities"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := offsite.KeyFromSecret(tc.data)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error with %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "AGE-SECRET-KEY-1") && !strings.Contains(err.Error(), "AGE-SECRET-KEY-1…") {
					t.Fatalf("the error quotes key material: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || got.Fingerprint() != tc.wantFprint {
				t.Fatalf("got %+v (fingerprint %s), want %+v (%s)", got, got.Fingerprint(), tc.want, tc.wantFprint)
			}
		})
	}
}

// New checks the location and the key without I/O: a bad one is ReasonInvalid.
func TestNewRejectsInvalid(t *testing.T) {
	good := offsite.Location{Endpoint: "https://s3.example.com:9000", Bucket: "b", AccessKeyID: "a", SecretAccessKey: "s"}
	key := offsite.Key{Passphrase: "p"}
	if _, err := offsite.New(good, key); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*offsite.Location, *offsite.Key){
		"endpoint without scheme": func(l *offsite.Location, _ *offsite.Key) { l.Endpoint = "s3.example.com" },
		"endpoint with a path":    func(l *offsite.Location, _ *offsite.Key) { l.Endpoint = "https://s3.example.com/bucket" },
		"ftp endpoint":            func(l *offsite.Location, _ *offsite.Key) { l.Endpoint = "ftp://s3.example.com" },
		"no bucket":               func(l *offsite.Location, _ *offsite.Key) { l.Bucket = "" },
		"no credentials":          func(l *offsite.Location, _ *offsite.Key) { l.SecretAccessKey = "" },
		"CA without certificates": func(l *offsite.Location, _ *offsite.Key) { l.CA = []byte("not PEM") },
		"no key":                  func(_ *offsite.Location, k *offsite.Key) { *k = offsite.Key{} },
		"two keys":                func(_ *offsite.Location, k *offsite.Key) { k.Identity = "AGE-SECRET-KEY-1X" },
	} {
		loc, k := good, key
		change(&loc, &k)
		if _, err := offsite.New(loc, k); offsite.ReasonOf(err) != offsite.ReasonInvalid {
			t.Errorf("%s: got %v, want %s", name, err, offsite.ReasonInvalid)
		}
	}
}

// IDs are made from the cluster, the UTC time and the backup's name; anything that
// could leave the backup's directory is refused before a request.
func TestIDs(t *testing.T) {
	at := time.Date(2026, 11, 28, 1, 2, 3, 0, time.FixedZone("CET", 3600))
	if got := offsite.NewID(testCluster, at, "nightly-1"); got != "linstor.prod/20261128T000203Z-2f6b8f2e-nightly-1" {
		t.Fatalf("NewID: %s", got)
	}
	// Two clusters of the same namespace and name (a restored cluster beside the one it
	// came from, two sites sharing a bucket) whose schedules fire in the same second
	// name their backups alike: their copies must not land on one object.
	other := testCluster
	other.UID = "9a0c31d4-0000-4000-8000-000000000002"
	if a, b := offsite.NewID(testCluster, at, "daily-20261128t0000"), offsite.NewID(other, at, "daily-20261128t0000"); a == b {
		t.Fatalf("two clusters' backups share the ID %s", a)
	}
	s0 := newStore(t, offsite.Location{Endpoint: "http://127.0.0.1:1", Bucket: "b", AccessKeyID: "a", SecretAccessKey: "s"}, offsite.Key{Passphrase: "p"})
	if _, err := s0.Get(context.Background(), offsite.NewID(other, at, "daily-20261128t0000")); offsite.ReasonOf(err) == offsite.ReasonInvalid {
		t.Fatalf("an ID NewID made is refused: %v", err)
	}
	s := newStore(t, offsite.Location{Endpoint: "http://127.0.0.1:1", Bucket: "b", AccessKeyID: "a", SecretAccessKey: "s"}, offsite.Key{Passphrase: "p"})
	for _, id := range []string{"", "../x", "linstor.prod/../../etc", "linstor.prod/20261128T000203Z-a/b", "/linstor.prod/20261128T000203Z-a", "Linstor.prod/20261128T000203Z-a"} {
		if _, err := s.Get(context.Background(), id); offsite.ReasonOf(err) != offsite.ReasonInvalid {
			t.Errorf("Get(%q): %v, want %s", id, err, offsite.ReasonInvalid)
		}
	}
}
