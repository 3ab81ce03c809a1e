package dbbackup

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// flakySecrets serves chunk Secrets from memory; the first read of each name fails as an
// overloaded API server answers (unless failed says it already did). Hand-written: only Get of Secrets is needed.
type flakySecrets struct {
	data   map[string][]byte
	failed map[string]bool
}

func (f *flakySecrets) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if !f.failed[key.Name] {
		f.failed[key.Name] = true
		return apierrors.NewServerTimeout(schema.GroupResource{Resource: "secrets"}, "get", 1)
	}
	d, ok := f.data[key.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, key.Name)
	}
	obj.(*corev1.Secret).Data = map[string][]byte{ChunkKey: d}
	return nil
}

func (f *flakySecrets) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not served")
}

// One failed read of a chunk is a reason to retry, never "the backup is damaged": a
// reader that resumed after its error fed the decoder a gap while the checksum, read on,
// matched — the restore would end Failed on a good backup.
func TestACheckThatCouldNotReadAChunkIsRetriedNotFailed(t *testing.T) {
	d := &Dump{CRDs: []apiextensionsv1.CustomResourceDefinition{table("nodes", "Nodes")}, Objects: []map[string]any{
		{"apiVersion": Group + "/v1-27-1", "kind": "Nodes", "metadata": map[string]any{"name": "n1"}, "spec": map[string]any{"node_name": "N1"}},
	}}
	data, err := d.Encode()
	if err != nil {
		t.Fatal(err)
	}
	chunks := Split(data, 64)
	f := &flakySecrets{data: map[string][]byte{}, failed: map[string]bool{}}
	b := &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "linstor"},
		Status: linstorv1.LinstorBackupStatus{Phase: linstorv1.BackupCompleted, Checksum: Checksum(data), Objects: 1}}
	for i, c := range chunks {
		name := ChunkName(b, i)
		f.data[name], b.Status.Secrets = c, append(b.Status.Secrets, name)
	}
	for _, name := range b.Status.Secrets[1:] {
		f.failed[name] = true // only the first chunk's first read fails
	}
	_, err = Check(context.Background(), f, b)
	if err == nil || errors.Is(err, ErrBackupUnusable) || !errors.Is(err, ErrNothingWritten) || !apierrors.IsServerTimeout(err) {
		t.Fatalf("a read that timed out: %v (unusable %v); want a retryable timeout that wrote nothing", err, errors.Is(err, ErrBackupUnusable))
	}
	// A chunk that is gone is unusable.
	delete(f.data, b.Status.Secrets[0])
	f.failed = map[string]bool{b.Status.Secrets[0]: true}
	if _, err := Check(context.Background(), f, b); !errors.Is(err, ErrBackupUnusable) {
		t.Fatalf("a missing chunk: %v; want ErrBackupUnusable", err)
	}
}
