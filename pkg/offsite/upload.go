package offsite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"filippo.io/age"
	"github.com/minio/minio-go/v7"
)

// PartSize is the size of one part of a multipart upload, and so about the memory an
// upload holds. minio-go's part size for a stream of unknown length is ~537 MiB
// (5 TiB / 10,000 parts); 8 MiB allows backups of 78 GiB (10,000 parts).
const PartSize = 8 << 20

// abortTimeout bounds the clean-up of a failed upload, which runs even when the
// caller's context has ended.
const abortTimeout = 10 * time.Second

// Upload is what an upload wrote: the ID and the sizes and checksums of the
// plaintext and of the stored (encrypted) object.
type Upload struct {
	ID                string
	Size              int64
	Checksum          string
	EncryptedSize     int64
	EncryptedChecksum string
}

// Upload streams what write writes, encrypted with the store's key (age: X25519 or
// scrypt, then ChaCha20-Poly1305 in 64 KiB chunks), to the backup's data object in a
// multipart upload of PartSize parts: memory does not grow with the backup. A failed
// upload is aborted, so no part stays behind. Upload writes no manifest: call Verify,
// then Publish. An ID whose manifest exists is refused (ReasonExists): a published
// backup is never overwritten. An error of write comes back wrapped, not as an *Error
// (it is not the bucket's).
func (s *Store) Upload(ctx context.Context, id string, write func(io.Writer) error) (Upload, error) {
	if err := validateID(id); err != nil {
		return Upload{}, s.failWith(ReasonInvalid, "upload", "", err)
	}
	key := s.dataKey(id)
	// The ID must be new: a published backup's data is never replaced.
	if _, err := s.client.StatObject(ctx, s.loc.Bucket, s.manifestKey(id), minio.StatObjectOptions{}); err == nil {
		return Upload{}, s.failWith(ReasonExists, "upload", s.manifestKey(id), errors.New("a backup of this ID is already published"))
	} else if r := classify(err); r != ReasonNotFound {
		return Upload{}, s.fail("upload", key, err)
	}
	recipient, err := s.key.recipient()
	if err != nil {
		return Upload{}, s.failWith(ReasonInvalid, "upload", key, err)
	}

	pr, pw := io.Pipe()
	stored := newDigest()
	plain := newDigest()
	written := make(chan error, 1)
	go func() {
		err := encryptTo(io.MultiWriter(pw, stored), recipient, func(enc io.Writer) error {
			return write(io.MultiWriter(enc, plain))
		})
		// The upload reads an error as a failed source, aborts and returns it.
		_ = pw.CloseWithError(err)
		written <- err
	}()
	info, err := s.client.PutObject(ctx, s.loc.Bucket, key, pr, -1, minio.PutObjectOptions{
		PartSize:    PartSize,
		ContentType: "application/octet-stream",
	})
	// A failed upload stops reading: the writer gets an error instead of blocking.
	_ = pr.CloseWithError(errUploadStopped)
	writeErr := <-written
	if err != nil || writeErr != nil {
		s.abort(ctx, key)
		// The upload returns the source's error as it is when the source failed first.
		if writeErr != nil && (err == nil || errors.Is(err, writeErr)) {
			return Upload{}, fmt.Errorf("offsite backup: upload s3://%s/%s: writing the backup: %w", s.loc.Bucket, key, writeErr)
		}
		return Upload{}, s.fail("upload", key, err)
	}
	u := Upload{ID: id, Size: plain.n, Checksum: plain.sum(), EncryptedSize: stored.n, EncryptedChecksum: stored.sum()}
	if info.Size != u.EncryptedSize {
		return Upload{}, s.failWith(ReasonCorrupt, "upload", key, fmt.Errorf("the service took %d bytes of %d", info.Size, u.EncryptedSize))
	}
	return u, nil
}

var errUploadStopped = errors.New("the upload stopped")

// encryptTo encrypts what write writes to dst; the age stream is closed (its last
// chunk written) only when write succeeds.
func encryptTo(dst io.Writer, recipient age.Recipient, write func(io.Writer) error) error {
	enc, err := age.Encrypt(dst, recipient)
	if err != nil {
		return err
	}
	if err := write(enc); err != nil {
		return err
	}
	return enc.Close()
}

// abort removes what a failed upload left when the caller's context has ended:
// minio-go aborts a failed multipart upload itself, but with that context. Best
// effort: a lifecycle rule for incomplete multipart uploads is the backstop.
func (s *Store) abort(ctx context.Context, key string) {
	if ctx.Err() == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	_ = s.client.RemoveIncompleteUpload(ctx, s.loc.Bucket, key)
}

// digest counts and hashes what is written through it.
type digest struct {
	h hash.Hash
	n int64
}

func newDigest() *digest { return &digest{h: sha256.New()} }

func (d *digest) Write(p []byte) (int, error) {
	d.h.Write(p)
	d.n += int64(len(p))
	return len(p), nil
}

func (d *digest) sum() string { return "sha256:" + hex.EncodeToString(d.h.Sum(nil)) }
