package offsite_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/internal/s3server"
	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
	"github.com/linstor-operator/linstor-operator/pkg/offsite"
)

// faultEnv is one row's own server, proxy and published backup.
type faultEnv struct {
	srv    *s3server.Server
	faults *s3server.Faults
	key    offsite.Key
	data   []byte
	// good is a published backup made before the fault.
	good offsite.Manifest
	// heal ends the fault (default: the proxy passes through).
	heal func() error
}

func newFaultEnv(t *testing.T) *faultEnv {
	t.Helper()
	e := &faultEnv{srv: startServer(t, false), key: newIdentityKey(t), data: testDatabase(t)}
	var err error
	if e.faults, err = s3server.StartFaults(e.srv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.faults.Close)
	e.heal = e.faults.PassThrough
	e.good = backup(t, e.direct(t), "before-the-fault", time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC), e.data)
	return e
}

// direct is a store that talks to the server; proxied one through the faults.
func (e *faultEnv) direct(t *testing.T) *offsite.Store {
	return newStore(t, location(e.srv, "faults"), e.key)
}
func (e *faultEnv) proxied(t *testing.T) *offsite.Store {
	loc := location(e.srv, "faults")
	loc.Endpoint = e.faults.Endpoint
	return newStore(t, loc, e.key)
}

func (e *faultEnv) objectFile() string {
	return filepath.Join(e.srv.Dir, bucket, "faults", databasesDir, e.good.ID, dataName)
}

// flipByte changes one byte of the stored object in place (its size stays).
func flipByte(t *testing.T, path string, at func(size int) int) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw[at(len(raw))] ^= 0x01
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// op is one store operation run under a fault.
type op struct {
	name string
	run  func(ctx context.Context, s *offsite.Store, e *faultEnv) error
}

var (
	opCheck  = op{"Check", func(ctx context.Context, s *offsite.Store, _ *faultEnv) error { return s.Check(ctx) }}
	opUpload = op{"Upload", func(ctx context.Context, s *offsite.Store, e *faultEnv) error {
		_, err := s.Upload(ctx, offsite.NewID(testCluster, time.Now(), "under-the-fault"), writeBytes(e.data))
		return err
	}}
	opVerify = op{"Verify", func(ctx context.Context, s *offsite.Store, e *faultEnv) error { return s.Verify(ctx, uploadOf(e.good)) }}
	opOpen   = op{"Open+Read", func(ctx context.Context, s *offsite.Store, e *faultEnv) error {
		rc, err := s.Open(ctx, e.good)
		if err != nil {
			return err
		}
		defer rc.Close()
		// As a restore reads it: a damaged stream must fail the decode, not end it early.
		_, err = dbbackup.ReadAll(rc)
		return err
	}}
	opList = op{"List", func(ctx context.Context, s *offsite.Store, _ *faultEnv) error { _, _, err := s.List(ctx); return err }}
	opGet  = op{"Get", func(ctx context.Context, s *offsite.Store, e *faultEnv) error {
		_, err := s.Get(ctx, e.good.ID)
		return err
	}}
)

// The fault table: each fault gives its offsite.Reason, with a message that names the bucket,
// for every operation it reaches; an upload under a fault publishes nothing (after the
// fault, only the backup made before it is listed) and leaves no multipart upload
// behind; transient 5xx answers are retried.
func TestFaultTable(t *testing.T) {
	for _, row := range []struct {
		name string
		// fault sets the fault up and returns the store to use.
		fault    func(t *testing.T, e *faultEnv) *offsite.Store
		deadline time.Duration
		want     offsite.Reason
		ops      []op
		// leavesUnreadable: the fault is a manifest List reports as unreadable.
		leavesUnreadable bool
	}{
		{name: "endpoint down", want: offsite.ReasonUnreachable, ops: []op{opCheck, opUpload, opOpen, opList},
			fault: func(t *testing.T, e *faultEnv) *offsite.Store {
				e.srv.Kill()
				e.heal = func() error { return e.srv.Restart(context.Background()) }
				return e.direct(t)
			}},
		{name: "connections refused", want: offsite.ReasonUnreachable, ops: []op{opCheck, opUpload, opOpen},
			fault: func(t *testing.T, e *faultEnv) *offsite.Store { must(t, e.faults.Refuse()); return e.proxied(t) }},
		{name: "connections closed unanswered", want: offsite.ReasonUnreachable, ops: []op{opCheck, opUpload, opVerify},
			fault: func(t *testing.T, e *faultEnv) *offsite.Store { must(t, e.faults.Drop()); return e.proxied(t) }},
		{name: "slow beyond the deadline", want: offsite.ReasonSlow, deadline: 700 * time.Millisecond, ops: []op{opCheck, opUpload, opVerify, opOpen, opList, opGet},
			fault: func(t *testing.T, e *faultEnv) *offsite.Store {
				must(t, e.faults.Delay(5*time.Second))
				return e.proxied(t)
			}},
		{name: "HTTP 503 SlowDown on every request", want: offsite.ReasonServerError, ops: []op{opCheck, opUpload, opVerify},
			fault: func(t *testing.T, e *faultEnv) *offsite.Store {
				must(t, e.faults.FailAll(http.StatusServiceUnavailable, "SlowDown"))
				return e.proxied(t)
			}},
		{name: "HTTP 501 on every request (not retried)", want: offsite.ReasonServerError, ops: []op{opCheck, opUpload, opVerify, opOpen, opList, opGet},
			fault: func(t *testing.T, e *faultEnv) *offsite.Store {
				must(t, e.faults.FailAll(http.StatusNotImplemented, "NotImplemented"))
				return e.proxied(t)
			}},
		{name: "two HTTP 500s, then answers: retried", want: "", ops: []op{opUpload},
			fault: func(t *testing.T, e *faultEnv) *offsite.Store {
				must(t, e.faults.FailNext(2, http.StatusInternalServerError, "InternalError", nil))
				return e.proxied(t)
			}},
		{name: "wrong credentials", want: offsite.ReasonUnauthorized, ops: []op{opCheck, opUpload, opVerify, opOpen, opList, opGet},
			fault: func(t *testing.T, e *faultEnv) *offsite.Store {
				loc := location(e.srv, "faults")
				loc.SecretAccessKey = "not-" + loc.SecretAccessKey
				return newStore(t, loc, e.key)
			}},
		{name: "missing bucket", want: offsite.ReasonNoSuchBucket, ops: []op{opCheck, opUpload, opVerify, opOpen, opList, opGet},
			fault: func(t *testing.T, e *faultEnv) *offsite.Store {
				loc := location(e.srv, "faults")
				loc.Bucket = "no-such-bucket"
				return newStore(t, loc, e.key)
			}},
		{name: "object deleted after upload (a lifecycle rule)", want: offsite.ReasonNotFound, ops: []op{opVerify, opOpen},
			fault: func(t *testing.T, e *faultEnv) *offsite.Store { must(t, os.Remove(e.objectFile())); return e.direct(t) }},
		{name: "object altered on disk", want: offsite.ReasonCorrupt, ops: []op{opVerify, opOpen},
			fault: func(t *testing.T, e *faultEnv) *offsite.Store {
				flipByte(t, e.objectFile(), func(size int) int { return size / 2 })
				return e.direct(t)
			}},
		{name: "object's age header altered", want: offsite.ReasonCorrupt, ops: []op{opVerify, opOpen},
			fault: func(t *testing.T, e *faultEnv) *offsite.Store {
				// The first stanza's body: the wrapped file key.
				flipByte(t, e.objectFile(), func(int) int { return 100 })
				return e.direct(t)
			}},
		{name: "object cut short", want: offsite.ReasonCorrupt, ops: []op{opVerify, opOpen},
			fault: func(t *testing.T, e *faultEnv) *offsite.Store {
				raw, err := os.ReadFile(e.objectFile())
				must(t, err)
				must(t, os.WriteFile(e.objectFile(), raw[:len(raw)-100], 0o644))
				return e.direct(t)
			}},
		{name: "manifest not JSON", want: offsite.ReasonCorrupt, ops: []op{opGet}, leavesUnreadable: true,
			fault: func(t *testing.T, e *faultEnv) *offsite.Store {
				must(t, os.WriteFile(filepath.Join(filepath.Dir(e.objectFile()), manifestName), []byte("{not json"), 0o644))
				return e.direct(t)
			}},
	} {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			e := newFaultEnv(t)
			s := row.fault(t, e)
			// The operations run at once: each waits out the client's retries alone.
			errs, took := make([]error, len(row.ops)), make([]time.Duration, len(row.ops))
			var wg sync.WaitGroup
			for i, o := range row.ops {
				wg.Go(func() {
					ctx := context.Background()
					if row.deadline > 0 {
						var cancel context.CancelFunc
						ctx, cancel = context.WithTimeout(ctx, row.deadline)
						defer cancel()
					}
					start := time.Now()
					errs[i] = o.run(ctx, s, e)
					took[i] = time.Since(start).Round(time.Millisecond)
				})
			}
			wg.Wait()
			for i, o := range row.ops {
				err := errs[i]
				if row.want == "" {
					if err != nil {
						t.Fatalf("%s: %v", o.name, err)
					}
					continue
				}
				if offsite.ReasonOf(err) != row.want {
					t.Fatalf("%s: got %v (reason %q), want %s", o.name, err, offsite.ReasonOf(err), row.want)
				}
				if !strings.Contains(err.Error(), "s3://"+s.Location().Bucket) {
					t.Fatalf("%s: the message does not name the bucket: %v", o.name, err)
				}
				t.Logf("%s after %v: %v", o.name, took[i], err)
			}
			// After the fault: nothing but the backup made before it is listed, and no
			// multipart upload was left behind.
			must(t, e.heal())
			if row.leavesUnreadable {
				return
			}
			if ids := listIDs(t, e.direct(t)); len(ids) != 1 || ids[0] != e.good.ID {
				t.Fatalf("after the fault List shows %v, want only %s", ids, e.good.ID)
			}
			assertNoIncompleteUploads(t, e.srv)
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func assertNoIncompleteUploads(t *testing.T, srv *s3server.Server) {
	t.Helper()
	for u := range srv.Client().ListIncompleteUploads(context.Background(), bucket, "", true) {
		if u.Err != nil {
			t.Fatal(u.Err)
		}
		t.Fatalf("a multipart upload was left behind: %s (%s)", u.Key, u.UploadID)
	}
}

// A failed upload is aborted: when writing the backup fails after a part was sent,
// when the service refuses a part, and when the caller's deadline passes mid-upload
// (minio-go's own abort then fails with the ended context; the store's runs on its
// own deadline). Nothing is stored, listed or left as a multipart upload.
func TestFailedUploadIsAborted(t *testing.T) {
	e := newFaultEnv(t)
	dbErr := errors.New("the API server went away")
	random := make([]byte, offsite.PartSize+offsite.PartSize/2) // incompressible: one part and a half
	if _, err := io.ReadFull(newRandomReader(1), random); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		fault  func(t *testing.T)
		write  func(ctx context.Context) func(io.Writer) error
		expect func(t *testing.T, err error)
	}{
		{name: "writing fails after a part",
			write: func(context.Context) func(io.Writer) error {
				return func(w io.Writer) error {
					if _, err := w.Write(random); err != nil {
						return err
					}
					return dbErr
				}
			},
			expect: func(t *testing.T, err error) {
				if !errors.Is(err, dbErr) {
					t.Fatalf("got %v, want the writer's error", err)
				}
			}},
		{name: "the service refuses the second part",
			fault: func(t *testing.T) {
				must(t, e.faults.FailNext(1, http.StatusNotImplemented, "NotImplemented", func(r *http.Request) bool {
					return r.Method == http.MethodPut && r.URL.Query().Get("partNumber") == "2"
				}))
			},
			write: func(context.Context) func(io.Writer) error { return writeBytes(random) },
			expect: func(t *testing.T, err error) {
				if offsite.ReasonOf(err) != offsite.ReasonServerError {
					t.Fatalf("got %v, want %s", err, offsite.ReasonServerError)
				}
			}},
		{name: "the deadline passes mid-upload",
			write: func(ctx context.Context) func(io.Writer) error {
				return func(w io.Writer) error {
					if _, err := w.Write(random); err != nil {
						return err
					}
					<-ctx.Done()
					return ctx.Err()
				}
			},
			expect: func(t *testing.T, err error) {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("got %v, want the deadline", err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.fault != nil {
				tc.fault(t)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			id := offsite.NewID(testCluster, time.Now(), "aborted")
			_, err := e.proxied(t).Upload(ctx, id, tc.write(ctx))
			tc.expect(t, err)
			must(t, e.faults.PassThrough())
			if _, err := os.Stat(filepath.Join(e.srv.Dir, bucket, "faults", databasesDir, id, dataName)); !os.IsNotExist(err) {
				t.Fatalf("a failed upload stored an object: %v", err)
			}
			assertNoIncompleteUploads(t, e.srv)
			if ids := listIDs(t, e.direct(t)); len(ids) != 1 {
				t.Fatalf("List: %v", ids)
			}
		})
	}
}

// A published backup is never overwritten: an upload to its ID is refused.
func TestPublishedBackupIsNotOverwritten(t *testing.T) {
	e := newFaultEnv(t)
	_, err := e.direct(t).Upload(context.Background(), e.good.ID, writeBytes([]byte("other data")))
	if offsite.ReasonOf(err) != offsite.ReasonExists {
		t.Fatalf("got %v, want %s", err, offsite.ReasonExists)
	}
	got, err := readAll(t, e.direct(t), e.good)
	if err != nil || !bytes.Equal(got, e.data) {
		t.Fatalf("the published backup changed: %d bytes, %v", len(got), err)
	}
}

// Open checks what only the end can show: with intact, decryptable bytes but an
// authentic manifest that says other sizes or checksums (published so by the key's
// holder: only they can make one), the last Read fails Corrupt instead of returning
// io.EOF, so a consumer never takes the stream for whole.
func TestOpenFailsAtTheEndOnAMismatch(t *testing.T) {
	ctx := context.Background()
	e := newFaultEnv(t)
	s := e.direct(t)
	zero := "sha256:" + strings.Repeat("0", 64)
	for name, change := range map[string]func(*offsite.Manifest){
		"plaintext checksum": func(m *offsite.Manifest) { m.Checksum = zero },
		"plaintext size":     func(m *offsite.Manifest) { m.Size++ },
		"stored checksum":    func(m *offsite.Manifest) { m.EncryptedChecksum = zero },
	} {
		createdAt := time.Date(2026, 11, 27, 13, 0, 0, 0, time.UTC)
		u, err := s.Upload(ctx, offsite.NewID(testCluster, createdAt, strings.ReplaceAll(name, " ", "-")), writeBytes(e.data))
		must(t, err)
		published := manifestFor(u, createdAt)
		change(&published)
		must(t, s.Publish(ctx, published))
		m, err := s.Get(ctx, u.ID)
		must(t, err)
		rc, err := s.Open(ctx, m)
		if err != nil {
			t.Fatalf("%s: Open: %v", name, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if offsite.ReasonOf(err) != offsite.ReasonCorrupt {
			t.Fatalf("%s: reading to the end: %d bytes, %v; want %s", name, len(got), err, offsite.ReasonCorrupt)
		}
		if _, err := dbbackup.ReadAll(mustOpen(t, s, m)); offsite.ReasonOf(err) != offsite.ReasonCorrupt {
			t.Fatalf("%s: a restore's decode: %v; want %s", name, err, offsite.ReasonCorrupt)
		}
	}
	if got, err := readAll(t, s, e.good); err != nil || !bytes.Equal(got, e.data) {
		t.Fatalf("the true manifest: %d bytes, %v", len(got), err)
	}
}

func mustOpen(t *testing.T, s *offsite.Store, m offsite.Manifest) io.Reader {
	t.Helper()
	rc, err := s.Open(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	return rc
}
