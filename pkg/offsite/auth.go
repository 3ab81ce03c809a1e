package offsite

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"golang.org/x/crypto/scrypt"
)

// The manifest's MAC (see the package doc).
const (
	macPrefix = "hmac-sha256:"
	// macInfo is HKDF's info: the MAC's key is of no other use of the key's secret.
	macInfo = "linstor-operator offsite manifest MAC v1"
	// macScryptSalt is the fixed salt of a passphrase's MAC key: one derivation serves
	// every manifest of a List, where a salt per manifest would cost a scrypt (32 MiB,
	// a tenth of a second) per manifest.
	macScryptSalt = "linstor-operator offsite manifest MAC v1"
	macKeySize    = 32
)

// errNotAuthenticated is a MAC that is not the store key's.
var errNotAuthenticated = errors.New("the manifest is not authenticated by this key: it was made with another key or changed in the bucket")

// notAuthenticatedHint is the next step for a manifest the key did not make.
const notAuthenticatedHint = "do not restore from this backup unless you know which key made it and use that key Secret: " +
	"anyone who may write to the bucket can replace a backup with another database encrypted to the public recipient; check who may write to the bucket"

// macKey derives the key of the manifests' MACs once per store (a passphrase's costs
// a scrypt).
type macKey struct {
	once sync.Once
	key  []byte
	err  error
}

func (s *Store) macKey() ([]byte, error) {
	s.mac.once.Do(func() { s.mac.key, s.mac.err = deriveMACKey(s.key) })
	return s.mac.key, s.mac.err
}

// deriveMACKey is HKDF-SHA256 of the key's secret: an identity's canonical string
// (AGE-SECRET-KEY-1…, whatever comments the Secret holds); for a passphrase, scrypt of
// it with the encryption's work factor, because the manifest lies open in the bucket
// and an HMAC keyed by a fast hash of the passphrase would test guesses of it faster
// than the object's scrypt stanza does.
func deriveMACKey(k Key) ([]byte, error) {
	var secret []byte
	if k.Passphrase != "" {
		var err error
		if secret, err = scrypt.Key([]byte(k.Passphrase), []byte(macScryptSalt), 1<<scryptWorkFactor, 8, 1, macKeySize); err != nil {
			return nil, err
		}
	} else {
		id, err := k.x25519()
		if err != nil {
			return nil, err
		}
		secret = []byte(id.String())
	}
	return hkdf.Key(sha256.New, secret, nil, macInfo, macKeySize)
}

// digestInfo is HKDF's info for KeyedDigest's key: apart from the manifests' MAC key.
const digestInfo = "linstor-operator keyed digest v1"

// KeyedDigest is an HMAC of parts keyed from the store's key (apart from the
// manifests' MAC key): for a status that must tell whether secret values (S3
// credentials given to LINSTOR) changed without letting whoever reads the status test
// guesses of them offline, as a plain hash would.
func (s *Store) KeyedDigest(parts ...string) (string, error) {
	mk, err := s.macKey()
	if err != nil {
		return "", err
	}
	key, err := hkdf.Key(sha256.New, mk, nil, digestInfo, macKeySize)
	if err != nil {
		return "", err
	}
	h := hmac.New(sha256.New, key)
	for _, p := range parts {
		// Length-prefixed: "ab","c" and "a","bc" differ.
		h.Write([]byte(strconv.Itoa(len(p)) + ":" + p))
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// macOf is the MAC of m: HMAC-SHA256 of its JSON with MAC empty (so left out).
func (s *Store) macOf(m Manifest) (string, error) {
	key, err := s.macKey()
	if err != nil {
		return "", err
	}
	m.MAC = ""
	raw, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	h := hmac.New(sha256.New, key)
	h.Write(raw)
	return macPrefix + hex.EncodeToString(h.Sum(nil)), nil
}

// authentic reports whether the store's key made m's MAC.
func (s *Store) authentic(m Manifest) bool {
	if m.MAC == "" || !s.keyOpens(m) {
		return false
	}
	want, err := s.macOf(m)
	return err == nil && hmac.Equal([]byte(m.MAC), []byte(want))
}

// keyOpens reports whether m names the store's key.
func (s *Store) keyOpens(m Manifest) bool {
	return m.Encryption == s.key.Encryption() && m.KeyFingerprint == s.key.Fingerprint()
}

// authenticate refuses a manifest the store's key did not make: WrongKey if it names
// another key (an identity's fingerprint tells), Corrupt if its MAC is missing or not
// the key's (another passphrase, or a manifest written or changed by someone with
// write access to the bucket).
func (s *Store) authenticate(op, key string, m Manifest) error {
	switch {
	case !s.keyOpens(m):
		return s.failWith(ReasonWrongKey, op, key, fmt.Errorf(
			"the backup is encrypted with %s key %s, the store's key is %s key %s",
			m.Encryption, m.KeyFingerprint, s.key.Encryption(), s.key.Fingerprint()))
	case m.MAC == "":
		return s.notAuthenticated(op, key, errors.New("the manifest is not authenticated by this key: it carries no MAC (written by hand, or by an operator that did not authenticate manifests)"))
	case !s.authentic(m):
		return s.notAuthenticated(op, key, errNotAuthenticated)
	}
	return nil
}

// notAuthenticated is a Corrupt manifest whose next step is not the storage's.
func (s *Store) notAuthenticated(op, key string, err error) error {
	return &Error{Reason: ReasonCorrupt, Op: op, Endpoint: s.loc.Endpoint, Bucket: s.loc.Bucket, Key: key, Err: err, hint: notAuthenticatedHint}
}
