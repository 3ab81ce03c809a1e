package dbbackup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// What the operator's controllers share about LinstorBackups: where their chunks are,
// how to read and verify them, and when a backup is possible or under way.

// ChunkKey is the data key of a chunk Secret.
const ChunkKey = "chunk"

// ChunkName is the name of a backup's i-th chunk Secret.
func ChunkName(b *linstorv1.LinstorBackup, i int) string { return fmt.Sprintf("%s-%d", b.Name, i) }

// chunkReader reads a backup's chunk Secrets one after the other.
type chunkReader struct {
	ctx       context.Context
	c         client.Reader
	namespace string
	names     []string
	cur       []byte
	// err is sticky: a reader that failed once never resumes, so a chunk that could not
	// be read is never skipped by whoever reads on (a decoder's error and a checksum
	// over the rest would then disagree about what was read).
	err error
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	for len(r.cur) == 0 {
		if len(r.names) == 0 {
			return 0, io.EOF
		}
		s := &corev1.Secret{}
		if err := r.c.Get(r.ctx, client.ObjectKey{Namespace: r.namespace, Name: r.names[0]}, s); err != nil {
			r.err = fmt.Errorf("reading backup chunk %s: %w", r.names[0], err)
			return 0, r.err
		}
		r.cur, r.names = s.Data[ChunkKey], r.names[1:]
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// Open streams a backup's encoded data, from its chunk Secrets or its bucket.
func Open(ctx context.Context, c client.Reader, b *linstorv1.LinstorBackup) io.Reader {
	if b.Status.Stored != nil {
		return &storedReader{ctx: ctx, c: c, b: b}
	}
	return &chunkReader{ctx: ctx, c: c, namespace: b.Namespace, names: append([]string(nil), b.Status.Secrets...)}
}

// ChecksumOf is the checksum of the data in a backup's chunk Secrets, read as a stream.
func ChecksumOf(ctx context.Context, c client.Reader, namespace string, secrets []string) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, &chunkReader{ctx: ctx, c: c, namespace: namespace, names: secrets}); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// Verify checks a completed backup against its checksum, reading it as a stream.
func Verify(ctx context.Context, c client.Reader, b *linstorv1.LinstorBackup) error {
	if b.Status.Phase != linstorv1.BackupCompleted {
		return fmt.Errorf("LinstorBackup %s is %s, not Completed", b.Name, b.Status.Phase)
	}
	var got string
	if b.Status.Stored != nil {
		h := sha256.New()
		if _, err := io.Copy(h, Open(ctx, c, b)); err != nil {
			return err
		}
		got = "sha256:" + hex.EncodeToString(h.Sum(nil))
	} else {
		var err error
		if got, err = ChecksumOf(ctx, c, b.Namespace, b.Status.Secrets); err != nil {
			return err
		}
	}
	if got != b.Status.Checksum {
		return fmt.Errorf("LinstorBackup %s is damaged: checksum %s, expected %s", b.Name, got, b.Status.Checksum)
	}
	return nil
}

// Load reads a completed backup whole after checking its checksum (tests and small
// databases; the operator restores with Verify and Open, as a stream).
func Load(ctx context.Context, c client.Reader, b *linstorv1.LinstorBackup) (*Dump, error) {
	if err := Verify(ctx, c, b); err != nil {
		return nil, err
	}
	return ReadAll(Open(ctx, c, b))
}

// LoadNamed reads LinstorBackup namespace/name and loads it (Load): what the upgrade
// rehearsal's "load" step reads.
func LoadNamed(ctx context.Context, c client.Reader, namespace, name string) (*Dump, error) {
	b := &linstorv1.LinstorBackup{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, b); err != nil {
		return nil, fmt.Errorf("reading LinstorBackup %s: %w", name, err)
	}
	return Load(ctx, c, b)
}

// Unsupported says why the cluster's database cannot be backed up by the operator.
func Unsupported(c *linstorv1.LinstorCluster) string {
	switch {
	case c.Spec.ExternalController != nil:
		return "the LINSTOR controller is external: back up its database where it runs"
	case c.Spec.Database != nil && c.Spec.Database.Type == linstorv1.DatabaseExternal:
		return "the LINSTOR database is external: back it up with the database's own tools"
	}
	return ""
}

// ControllerStopped reports that no LINSTOR controller pod of the cluster exists and its
// Deployment, if there is one, asks for none: a Deployment scaled up whose pod is not
// created yet is about to start the controller.
func ControllerStopped(ctx context.Context, c client.Reader, cluster *linstorv1.LinstorCluster) (bool, error) {
	pods, err := ControllerPods(ctx, c, cluster)
	if err != nil || len(pods) > 0 {
		return false, err
	}
	var d appsv1.Deployment
	err = c.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: names.ControllerName}, &d)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	}
	return d.Spec.Replicas != nil && *d.Spec.Replicas == 0, nil
}

// ControllerPods lists the cluster's LINSTOR controller pods, terminating ones too
// (their controller may still write).
func ControllerPods(ctx context.Context, c client.Reader, cluster *linstorv1.LinstorCluster) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(cluster.Namespace),
		client.MatchingLabels{names.LabelName: names.ControllerName, names.LabelInstance: cluster.Name}); err != nil {
		return nil, err
	}
	return pods.Items, nil
}

// StopsController reports whether a backup needs the LINSTOR controller stopped now:
// accepted (Pending) or copying (Running). A new backup to a bucket stops nothing
// before its target was checked (it is accepted after): a bucket that cannot be used
// must fail the backup with LINSTOR running. An import reads a bucket, not the
// database.
func StopsController(b *linstorv1.LinstorBackup) bool {
	if b.DeletionTimestamp != nil || b.Spec.ImportFrom != "" {
		return false
	}
	switch b.Status.Phase {
	case "":
		return b.Spec.TargetRef == nil
	case linstorv1.BackupPending, linstorv1.BackupRunning:
		return true
	}
	return false
}
