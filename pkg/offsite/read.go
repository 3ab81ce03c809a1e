package offsite

import (
	"context"
	"errors"
	"fmt"
	"io"

	"filippo.io/age"
	"github.com/minio/minio-go/v7"
)

// Verify reads the uploaded object back and decrypts it with the store's key: its
// size and checksum, and the plaintext's, must be those Upload counted. A mismatch is
// ReasonCorrupt; intact bytes the key does not open are ReasonWrongKey.
func (s *Store) Verify(ctx context.Context, u Upload) error {
	rc, err := s.open(ctx, "verify", u)
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, rc)
	return err
}

// Open reads a backup: the decrypted gzip stream (dbbackup.NewReader reads it). The
// checks of Verify run as it is read; at the end Read returns an error instead of
// io.EOF when a size or checksum differs from the manifest's, so a consumer never
// takes a damaged stream for whole. A manifest the store's key did not make fails at
// once, as in Get: another identity's is ReasonWrongKey (both fingerprints named), a
// missing or foreign MAC ReasonCorrupt.
func (s *Store) Open(ctx context.Context, m Manifest) (io.ReadCloser, error) {
	if err := m.validate(); err != nil {
		return nil, s.failWith(ReasonInvalid, "open", "", err)
	}
	if err := s.authenticate("open", s.manifestKey(m.ID), m); err != nil {
		return nil, err
	}
	return s.open(ctx, "open", m.upload())
}

func (s *Store) open(ctx context.Context, op string, want Upload) (io.ReadCloser, error) {
	if err := validateID(want.ID); err != nil {
		return nil, s.failWith(ReasonInvalid, op, "", err)
	}
	key := s.dataKey(want.ID)
	identity, err := s.key.identity()
	if err != nil {
		return nil, s.failWith(ReasonInvalid, op, key, err)
	}
	obj, err := s.client.GetObject(ctx, s.loc.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, s.fail(op, key, err)
	}
	info, err := obj.Stat()
	if err != nil {
		obj.Close()
		return nil, s.failObject(ctx, op, key, err)
	}
	if info.Size != want.EncryptedSize {
		obj.Close()
		return nil, s.failWith(ReasonCorrupt, op, key, fmt.Errorf("the object is %d bytes, the backup wrote %d", info.Size, want.EncryptedSize))
	}
	r := &checkedReader{s: s, op: op, key: key, want: want, obj: obj, stored: newDigest(), plain: newDigest()}
	r.src = &sourceReader{r: io.TeeReader(obj, r.stored)}
	dec, err := age.Decrypt(r.src, identity)
	if err != nil {
		err = r.failure(err)
		obj.Close()
		return nil, err
	}
	r.dec = dec
	return r, nil
}

// checkedReader decrypts an object as it is read, hashing both sides, and compares at
// the end.
type checkedReader struct {
	s       *Store
	op, key string
	want    Upload
	obj     *minio.Object
	src     *sourceReader
	dec     io.Reader
	stored  *digest
	plain   *digest
	err     error
}

func (r *checkedReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.dec.Read(p)
	r.plain.Write(p[:n])
	switch {
	case err == io.EOF:
		r.err = r.finish()
		if r.err == nil {
			r.err = io.EOF
		}
	case err != nil:
		r.err = r.failure(err)
	}
	if r.err != nil && r.err != io.EOF {
		// Nothing of a damaged stream's last read is handed on.
		return 0, r.err
	}
	return n, r.err
}

func (r *checkedReader) Close() error { return r.obj.Close() }

// finish drains what age left of the object (nothing, normally) and compares sizes
// and checksums.
func (r *checkedReader) finish() error {
	if _, err := io.Copy(io.Discard, r.src); err != nil {
		return r.s.fail(r.op, r.key, err)
	}
	stored, plain := r.stored.sum(), r.plain.sum()
	switch {
	case r.stored.n != r.want.EncryptedSize || stored != r.want.EncryptedChecksum:
		return r.s.failWith(ReasonCorrupt, r.op, r.key, fmt.Errorf("read %d bytes, %s; the backup wrote %d bytes, %s",
			r.stored.n, stored, r.want.EncryptedSize, r.want.EncryptedChecksum))
	case r.plain.n != r.want.Size || plain != r.want.Checksum:
		return r.s.failWith(ReasonCorrupt, r.op, r.key, fmt.Errorf("decrypted %d bytes, %s; the backup was %d bytes, %s",
			r.plain.n, plain, r.want.Size, r.want.Checksum))
	}
	return nil
}

// failure names the reason of an error while decrypting: the source's own error
// (network, service) if it had one; a key that matches no recipient is WrongKey only
// if the stored bytes are intact (read to the end to know); anything else age found
// (a bad header MAC, a chunk that does not authenticate, truncation) is Corrupt.
func (r *checkedReader) failure(err error) error {
	if r.src.err != nil {
		return r.s.fail(r.op, r.key, r.src.err)
	}
	var noMatch *age.NoIdentityMatchError
	if errors.As(err, &noMatch) {
		if _, drainErr := io.Copy(io.Discard, r.src); drainErr != nil {
			return r.s.fail(r.op, r.key, drainErr)
		}
		stored := r.stored.sum()
		if r.stored.n != r.want.EncryptedSize || stored != r.want.EncryptedChecksum {
			return r.s.failWith(ReasonCorrupt, r.op, r.key, fmt.Errorf("the key does not open the object and its bytes are not those written: read %d bytes, %s; the backup wrote %d bytes, %s",
				r.stored.n, stored, r.want.EncryptedSize, r.want.EncryptedChecksum))
		}
		return r.s.failWith(ReasonWrongKey, r.op, r.key, fmt.Errorf("the stored bytes are intact, but the %s key %s does not open them: %w",
			r.s.key.Encryption(), r.s.key.Fingerprint(), err))
	}
	return r.s.failWith(ReasonCorrupt, r.op, r.key, fmt.Errorf("decrypting: %w", err))
}

// sourceReader remembers the first error of reading the object (not io.EOF), so a
// failure of the network is not taken for a damaged backup.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}
