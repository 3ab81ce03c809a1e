package dbbackup

import (
	"context"
	"fmt"
	"io"

	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/backuptarget"
	"github.com/linstor-operator/linstor-operator/pkg/offsite"
)

// storedReader reads a backup kept in a LinstorBackupTarget's bucket, decrypted. It
// opens the bucket on the first Read; every failure is sticky, and a read that ends
// on bytes other than those written fails instead of ending (offsite.Store.Open).
type storedReader struct {
	ctx context.Context
	c   client.Reader
	b   *linstorv1.LinstorBackup
	rc  io.ReadCloser
	err error
}

func (r *storedReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.rc == nil {
		if r.rc, r.err = OpenStored(r.ctx, r.c, r.b); r.err != nil {
			return 0, r.err
		}
	}
	n, err := r.rc.Read(p)
	if err != nil {
		r.rc.Close()
		r.err = err
	}
	return n, err
}

// OpenStored opens a backup kept in a bucket. The bucket's manifest must describe the
// copy the LinstorBackup recorded (its checksum): a manifest replaced in the bucket
// does not smuggle another database in.
func OpenStored(ctx context.Context, c client.Reader, b *linstorv1.LinstorBackup) (io.ReadCloser, error) {
	st := b.Status.Stored
	target := &linstorv1.LinstorBackupTarget{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: st.Target}, target); err != nil {
		return nil, fmt.Errorf("LinstorBackupTarget %s of LinstorBackup %s: %w", st.Target, b.Name, err)
	}
	store, err := backuptarget.Open(ctx, c, target)
	if err != nil {
		return nil, err
	}
	m, err := store.Get(ctx, st.ID)
	if err != nil {
		return nil, err
	}
	if m.Checksum != b.Status.Checksum || m.EncryptedChecksum != st.EncryptedChecksum {
		return nil, unusable(fmt.Errorf("the bucket's manifest of %s says checksum %s (stored %s), the LinstorBackup recorded %s (stored %s)",
			st.ID, m.Checksum, m.EncryptedChecksum, b.Status.Checksum, st.EncryptedChecksum))
	}
	return store.Open(ctx, m)
}

// storedUnusable reports whether a bucket error means the copy cannot be restored
// (gone, damaged, another key) rather than that the bucket cannot be reached now.
func storedUnusable(err error) bool {
	switch offsite.ReasonOf(err) {
	case offsite.ReasonNotFound, offsite.ReasonCorrupt, offsite.ReasonWrongKey:
		return true
	}
	return false
}
