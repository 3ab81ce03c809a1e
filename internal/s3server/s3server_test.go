package s3server

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/minio/minio-go/v7"
)

// The server stores what it is sent, serves it back over HTTP and TLS, and keeps its
// data across Kill and Restart.
func TestServerStoresAndSurvivesARestart(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		ctx := context.Background()
		s, err := Start(ctx, Options{TLS: useTLS})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Stop() })
		if err := s.CreateBucket(ctx, "backups"); err != nil {
			t.Fatalf("tls=%v: %v", useTLS, err)
		}
		data := bytes.Repeat([]byte("linstor"), 1000)
		if _, err := s.Client().PutObject(ctx, "backups", "a/b.bin", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
		if raw, err := os.ReadFile(filepath.Join(s.Dir, "backups", "a", "b.bin")); err != nil || !bytes.Equal(raw, data) {
			t.Fatalf("tls=%v: the object is not stored as a file under the bucket's directory: %v", useTLS, err)
		}
		s.Kill()
		if _, err := s.Client().ListBuckets(ctx); err == nil {
			t.Fatal("a killed server still answers")
		}
		if err := s.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		obj, err := s.Client().GetObject(ctx, "backups", "a/b.bin", minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(obj)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("tls=%v: after a restart the object reads %d bytes, %v", useTLS, len(got), err)
		}
	}
}
