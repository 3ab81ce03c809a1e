package linstorbackup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
	"github.com/linstor-operator/linstor-operator/pkg/names"
)

// take streams the database into chunk Secrets and verifies them: a page of objects
// and a chunk are all it holds, whatever the database's size. Resuming after a restart
// starts the copy again: the controller is still stopped, so it is the same.
//
// The controller was seen stopped once, before the copy; it is looked for again before
// each chunk is stored and before the copy is called Completed. A controller that
// started meanwhile (the LinstorCluster reconciler deciding on a stale view) may have
// written while the tables were read: such a copy is torn, yet its checksum matches
// (it proves only that the Secrets hold what was read), so it fails instead.
func (r *Reconciler) take(ctx context.Context, b *linstorv1.LinstorBackup, cluster *linstorv1.LinstorCluster) error {
	if b.Spec.TargetRef != nil {
		return r.takeToBucket(ctx, b, cluster)
	}
	started := time.Now()
	stayedStopped := func() error { return r.controllerStayedStopped(ctx, cluster, started) }
	cw := &chunkWriter{ctx: ctx, r: r, b: b, hash: sha256.New(), stayedStopped: stayedStopped}
	counts, err := dbbackup.Write(ctx, r.Database, cw)
	if err == nil {
		err = cw.flush()
	}
	switch {
	case errors.Is(err, dbbackup.ErrNoDatabase), errors.Is(err, errForeignSecret), errors.Is(err, errControllerRan):
		return r.fail(ctx, b, err.Error())
	case err != nil:
		return err
	}
	checksum := "sha256:" + hex.EncodeToString(cw.hash.Sum(nil))
	// Read back what was written, from the API server: only a verified stored copy
	// counts, and the cache may not have seen the new Secrets yet (a miss there failed
	// the try and wrote every chunk again).
	if got, err := dbbackup.ChecksumOf(ctx, r.Database, b.Namespace, cw.names); err != nil {
		return err
	} else if got != checksum {
		return r.fail(ctx, b, fmt.Sprintf("the stored copy does not match: checksum %s, wrote %s", got, checksum))
	}
	if err := stayedStopped(); errors.Is(err, errControllerRan) {
		return r.fail(ctx, b, err.Error())
	} else if err != nil {
		return err
	}
	if err := r.setStatus(ctx, b, func(st *linstorv1.LinstorBackupStatus) {
		st.Phase, st.Checksum, st.Size, st.Secrets = linstorv1.BackupCompleted, checksum, cw.size, cw.names
		st.CRDs, st.Objects = int32(counts.CRDs), int32(counts.Objects)
		st.CompletedAt = ptrTime(metav1.Now())
		st.ControllerStopped = &metav1.Duration{Duration: time.Since(b.CreationTimestamp.Time).Round(time.Millisecond)}
		st.Message = fmt.Sprintf("%d CRDs, %d objects, %d bytes in %d Secrets", counts.CRDs, counts.Objects, cw.size, len(cw.names))
	}); err != nil {
		return err
	}
	r.Recorder.Eventf(b, corev1.EventTypeNormal, "BackupCompleted", "Backed up LINSTOR %s: %d CRDs, %d objects (%s)", b.Status.LinstorVersion, counts.CRDs, counts.Objects, checksum)
	return nil
}

// writeChunk creates a chunk Secret, or updates one this backup created before (a
// resumed copy). A Secret of that name that belongs to anything else is left alone
// and reported (foreign): adopting it would hand it to the garbage collector when the
// backup is pruned.
func (r *Reconciler) writeChunk(ctx context.Context, b *linstorv1.LinstorBackup, name string, chunk []byte) (foreign bool, err error) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.Namespace,
		Labels: map[string]string{names.LabelBackup: b.Name, names.LabelManagedBy: names.ManagedBy}},
		Data: map[string][]byte{dbbackup.ChunkKey: chunk}}
	if err := controllerutil.SetControllerReference(b, secret, r.Client.Scheme()); err != nil {
		return false, err
	}
	err = r.Client.Create(ctx, secret)
	if !apierrors.IsAlreadyExists(err) {
		return false, err
	}
	existing := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: name}, existing); err != nil {
		return false, err
	}
	if !metav1.IsControlledBy(existing, b) {
		return true, nil
	}
	existing.Data = secret.Data
	return false, r.Client.Update(ctx, existing)
}

var errForeignSecret = errors.New("foreign Secret")

// errControllerRan: a LINSTOR controller pod was seen during the copy.
var errControllerRan = errors.New("the LINSTOR controller did not stay stopped while the database was copied")

// controllerStayedStopped reports errControllerRan, naming the pod and when it was
// created, if a LINSTOR controller pod of the cluster exists now (read from the API
// server). A terminating one counts: its controller may still write.
func (r *Reconciler) controllerStayedStopped(ctx context.Context, cluster *linstorv1.LinstorCluster, copyStarted time.Time) error {
	// A restore, rollback or migration that began meanwhile writes with no controller
	// pod at all.
	now := &linstorv1.LinstorCluster{}
	if err := r.Database.Get(ctx, client.ObjectKeyFromObject(cluster), now); err != nil {
		return err
	}
	why := lifecycle.BackupMayBeTorn(&now.Status)
	if r := now.Status.Restore; why == "" && r != nil && r.Phase == lifecycle.RestoreRestored && r.CompletedAt != nil &&
		r.CompletedAt.Time.After(copyStarted) { // seconds: one completed in the copy's first second is not seen
		why = fmt.Sprintf("a restore of %s replaced the database while it was copied (completed at %s)", r.BackupName, r.CompletedAt.UTC().Format(time.RFC3339))
	}
	if why != "" {
		return fmt.Errorf("%w: %s. The copy may mix the database from before and after it, so it is not a backup; create another LinstorBackup once it has ended", errControllerRan, why)
	}
	pods, err := dbbackup.ControllerPods(ctx, r.Database, cluster)
	if err != nil || len(pods) == 0 {
		return err
	}
	p := pods[0]
	created := p.CreationTimestamp.UTC().Format(time.RFC3339)
	when := fmt.Sprintf("exists (created at %s)", created)
	// Creation times have seconds: one in the second the copy started counts as after.
	if !p.CreationTimestamp.Time.Before(copyStarted.Truncate(time.Second)) {
		when = fmt.Sprintf("was created at %s, after the copy started at %s", created, copyStarted.UTC().Format(time.RFC3339))
	}
	return fmt.Errorf("%w: pod %s %s. The copy may mix the database from before and after the controller's writes, so it is not a backup "+
		"(its checksum only proves the Secrets hold what was read); create another LinstorBackup", errControllerRan, p.Name, when)
}

// chunkWriter cuts the stream into chunk Secrets as it comes, hashing it.
type chunkWriter struct {
	ctx   context.Context
	r     *Reconciler
	b     *linstorv1.LinstorBackup
	buf   []byte
	names []string
	size  int64
	hash  hash.Hash
	// stayedStopped is asked before each chunk is stored.
	stayedStopped func() error
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	n := len(p)
	w.hash.Write(p)
	w.size += int64(n)
	for len(p) > 0 {
		room := dbbackup.ChunkSize - len(w.buf)
		take := min(room, len(p))
		w.buf = append(w.buf, p[:take]...)
		p = p[take:]
		if len(w.buf) == dbbackup.ChunkSize {
			if err := w.flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

// flush writes the buffered chunk (the last one may be short; an empty stream is one
// empty chunk).
func (w *chunkWriter) flush() error {
	if len(w.buf) == 0 && len(w.names) > 0 {
		return nil
	}
	if w.stayedStopped != nil {
		if err := w.stayedStopped(); err != nil {
			return err
		}
	}
	name := dbbackup.ChunkName(w.b, len(w.names))
	foreign, err := w.r.writeChunk(w.ctx, w.b, name, w.buf)
	if err != nil {
		return fmt.Errorf("writing Secret %s: %w", name, err)
	}
	if foreign {
		return fmt.Errorf("%w: Secret %s already exists and is not this backup's: the operator never overwrites, adopts or deletes a Secret it did not create; rename it or create the backup under another name", errForeignSecret, name)
	}
	w.names = append(w.names, name)
	w.buf = w.buf[:0]
	return nil
}
