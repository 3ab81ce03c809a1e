package s3server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Each fault does what it says to a real client's requests, and PassThrough ends it:
// signed requests pass the proxy (the server checks their signatures), S3 errors
// carry S3's XML, a delay outlasts a deadline, a refused proxy refuses and a dropping
// one closes connections unanswered.
func TestFaults(t *testing.T) {
	ctx := context.Background()
	s, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	if err := s.CreateBucket(ctx, "backups"); err != nil {
		t.Fatal(err)
	}
	f, err := StartFaults(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	// No retries: each call is one request, so the test sees each fault as it is.
	c, err := minio.New(f.Host, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""), Region: s.Region, MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	put := func() error {
		_, err := c.PutObject(ctx, "backups", "k", strings.NewReader("v"), 1, minio.PutObjectOptions{})
		return err
	}
	passes := func(step string) {
		t.Helper()
		if err := put(); err != nil {
			t.Fatalf("%s: a signed request does not pass the proxy: %v", step, err)
		}
	}
	passes("start")

	if err := f.FailNext(2, http.StatusServiceUnavailable, "SlowDown", nil); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if resp := minio.ToErrorResponse(put()); resp.StatusCode != http.StatusServiceUnavailable || resp.Code != "SlowDown" {
			t.Fatalf("FailNext request %d: got %+v, want 503 SlowDown", i, resp)
		}
	}
	passes("after FailNext's two")

	matchDelete := func(r *http.Request) bool { return r.Method == http.MethodDelete }
	if err := f.FailNext(1, http.StatusInternalServerError, "InternalError", matchDelete); err != nil {
		t.Fatal(err)
	}
	passes("FailNext of DELETEs lets a PUT pass")
	if resp := minio.ToErrorResponse(c.RemoveObject(ctx, "backups", "k", minio.RemoveObjectOptions{})); resp.Code != "InternalError" {
		t.Fatalf("FailNext(match DELETE): the DELETE got %+v", resp)
	}

	if err := f.FailAll(http.StatusInternalServerError, "InternalError"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if resp := minio.ToErrorResponse(put()); resp.StatusCode != http.StatusInternalServerError || resp.Code != "InternalError" {
			t.Fatalf("FailAll: got %+v", resp)
		}
	}
	raw, err := http.Get(f.Endpoint + "/backups/k")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(raw.Body)
	raw.Body.Close()
	if !strings.Contains(string(body), "<Code>InternalError</Code>") || raw.Header.Get("Content-Type") != "application/xml" {
		t.Fatalf("FailAll's answer is not an S3 error document: %s %q", raw.Header.Get("Content-Type"), body)
	}

	if err := f.Delay(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	start := time.Now()
	_, err = c.StatObject(short, "backups", "k", minio.StatObjectOptions{})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 1500*time.Millisecond {
		t.Fatalf("Delay: a 300 ms deadline ended after %v with %v", time.Since(start), err)
	}

	if err := f.Refuse(); err != nil {
		t.Fatal(err)
	}
	if err := put(); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("Refuse: got %v, want connection refused", err)
	}

	if err := f.Drop(); err != nil {
		t.Fatal(err)
	}
	if err := put(); err == nil || minio.ToErrorResponse(err).StatusCode != 0 {
		t.Fatalf("Drop: got %v, want a connection closed without an answer", err)
	}

	if err := f.PassThrough(); err != nil {
		t.Fatal(err)
	}
	passes("PassThrough after Refuse and Drop, on the same endpoint")
	got := f.Requests()
	if len(got) == 0 || !strings.HasPrefix(got[0], "PUT /backups/k") {
		t.Fatalf("Requests: %v", got)
	}
}
