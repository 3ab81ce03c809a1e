package offsite

import (
	"errors"
	"fmt"
	"strings"

	"filippo.io/age"
)

// The keys of an encryption key Secret.
const (
	SecretKeyIdentity   = "identity"
	SecretKeyPassphrase = "passphrase"
)

// The Encryption values of a manifest.
const (
	EncryptionX25519 = "age-x25519"
	EncryptionScrypt = "age-scrypt"
)

// scryptWorkFactor is log2 of scrypt's N for passphrase backups. scrypt holds
// 128·r·N bytes (r = 8): age's default of 18 needs 256 MiB, the operator pod's whole
// limit, while 15 needs 32 MiB, for a moment, next to the upload's 8 MiB part. The
// passphrase is a Secret's random string, not a word a person chose, so its strength
// is its length, not the work factor. Decryption refuses larger factors
// (SetMaxWorkFactor), so a file in the bucket cannot make the operator allocate more.
const scryptWorkFactor = 15

// Key opens backups: an age X25519 identity or a passphrase (exactly one set).
type Key struct{ Identity, Passphrase string }

// KeyFromSecret reads a key Secret's data: "identity" (an age X25519 identity,
// AGE-SECRET-KEY-1…, as age-keygen writes it, comments allowed) or "passphrase". A
// passphrase loses a trailing newline (as `kubectl create secret --from-file` keeps).
func KeyFromSecret(data map[string][]byte) (Key, error) {
	identity := strings.TrimSpace(string(data[SecretKeyIdentity]))
	passphrase := strings.TrimRight(string(data[SecretKeyPassphrase]), "\r\n")
	k := Key{Identity: identity, Passphrase: passphrase}
	switch {
	case identity != "" && passphrase != "":
		return Key{}, fmt.Errorf("the key Secret has both %q and %q: keep one", SecretKeyIdentity, SecretKeyPassphrase)
	case identity == "" && passphrase == "":
		return Key{}, fmt.Errorf("the key Secret has neither %q (an age X25519 identity, AGE-SECRET-KEY-1…, from age-keygen) nor %q (a long random string): set one", SecretKeyIdentity, SecretKeyPassphrase)
	}
	if err := k.validate(); err != nil {
		return Key{}, err
	}
	return k, nil
}

func (k Key) validate() error {
	switch {
	case k.Identity != "" && k.Passphrase != "":
		return errors.New("a key has an identity and a passphrase: keep one")
	case k.Identity == "" && k.Passphrase == "":
		return errors.New("a key has neither an identity nor a passphrase")
	case k.Identity != "":
		_, err := k.x25519()
		return err
	}
	return nil
}

// x25519 parses the identity: exactly one X25519 identity.
func (k Key) x25519() (*age.X25519Identity, error) {
	ids, err := age.ParseIdentities(strings.NewReader(k.Identity))
	if err != nil {
		// age's message quotes no key material, only the line number.
		return nil, fmt.Errorf("the %q is not an age identity: %w", SecretKeyIdentity, err)
	}
	if len(ids) != 1 {
		return nil, fmt.Errorf("the %q holds %d identities: keep one", SecretKeyIdentity, len(ids))
	}
	id, ok := ids[0].(*age.X25519Identity)
	if !ok {
		return nil, fmt.Errorf("the %q is a %T, not an X25519 identity (AGE-SECRET-KEY-1…)", SecretKeyIdentity, ids[0])
	}
	return id, nil
}

// Fingerprint says which key opens a backup without revealing anything of it: the
// age recipient ("age1…") of an identity; "scrypt" for a passphrase (anything derived
// from a passphrase would help guess it and tell nothing an admin can use).
func (k Key) Fingerprint() string {
	if k.Passphrase != "" {
		return "scrypt"
	}
	id, err := k.x25519()
	if err != nil {
		return ""
	}
	return id.Recipient().String()
}

// Encryption is the manifest's Encryption for this key.
func (k Key) Encryption() string {
	if k.Passphrase != "" {
		return EncryptionScrypt
	}
	return EncryptionX25519
}

func (k Key) recipient() (age.Recipient, error) {
	if k.Passphrase != "" {
		r, err := age.NewScryptRecipient(k.Passphrase)
		if err != nil {
			return nil, err
		}
		r.SetWorkFactor(scryptWorkFactor)
		return r, nil
	}
	id, err := k.x25519()
	if err != nil {
		return nil, err
	}
	return id.Recipient(), nil
}

func (k Key) identity() (age.Identity, error) {
	if k.Passphrase != "" {
		id, err := age.NewScryptIdentity(k.Passphrase)
		if err != nil {
			return nil, err
		}
		id.SetMaxWorkFactor(scryptWorkFactor)
		return id, nil
	}
	return k.x25519()
}
