// Package s3server runs a real S3 server for the tests: versitygw (Versity's Apache-2.0
// S3 gateway, built from source by `make versitygw`) with its POSIX backend, on
// loopback, over plain HTTP or TLS with a CA of its own. Buckets are directories under
// the server's root, so a test can also look at (or damage) the stored bytes directly.
package s3server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// BinaryEnv names the versitygw binary; `make test` sets it.
const BinaryEnv = "VERSITYGW"

// Binary returns the versitygw binary named by $VERSITYGW, or an error that says how to
// get one.
func Binary() (string, error) {
	p := os.Getenv(BinaryEnv)
	if p == "" {
		return "", errors.New(BinaryEnv + " is not set: run `make versitygw` and set " + BinaryEnv +
			" to the binary it builds (bin/versitygw/versitygw-<version>, an absolute path); `make test` sets it")
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s=%s: %w (run `make versitygw`)", BinaryEnv, p, err)
	}
	return p, nil
}

// Options configure a server.
type Options struct {
	// Dir is the root of the buckets; empty makes a temporary one that Stop removes.
	Dir string
	// TLS serves HTTPS with a certificate from a CA of the server's own (CA).
	TLS bool
	// Region the server reports (default us-east-1).
	Region string
}

// Server is a running versitygw.
type Server struct {
	// Endpoint is the URL clients use, for example http://127.0.0.1:41235.
	Endpoint string
	// Host is Endpoint's host:port.
	Host string
	// AccessKey and SecretKey are the root user's credentials.
	AccessKey, SecretKey string
	Region               string
	// Dir holds the buckets, one directory each.
	Dir string
	// CA is the PEM of the CA that signed the server's certificate (TLS only).
	CA []byte

	opts    Options
	tempDir string
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	log     *os.File
}

// Start runs versitygw on a free loopback port and waits until it answers.
func Start(ctx context.Context, opts Options) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, AccessKey: "linstor-test-" + randomHex(4), SecretKey: randomHex(20), Region: or(opts.Region, "us-east-1")}
	if s.tempDir, err = os.MkdirTemp("", "s3server-"); err != nil {
		return nil, err
	}
	s.Dir = opts.Dir
	if s.Dir == "" {
		s.Dir = filepath.Join(s.tempDir, "buckets")
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s.Host = fmt.Sprintf("127.0.0.1:%d", port)
	scheme := "http"
	if opts.TLS {
		if s.CA, err = writeServingCertificate(s.tempDir); err != nil {
			return nil, err
		}
		scheme = "https"
	}
	s.Endpoint = scheme + "://" + s.Host
	if err := s.run(ctx, bin); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) run(ctx context.Context, bin string) error {
	args := []string{"--port", s.Host, "--access", s.AccessKey, "--secret", s.SecretKey, "--region", s.Region, "--quiet"}
	if s.opts.TLS {
		args = append(args, "--cert", filepath.Join(s.tempDir, "tls.crt"), "--key", filepath.Join(s.tempDir, "tls.key"))
	}
	// The sidecar keeps object metadata in files, so the root needs no extended
	// attributes (tmpfs and overlay filesystems of CI machines may lack them).
	sidecar := filepath.Join(s.tempDir, "meta")
	if err := os.MkdirAll(sidecar, 0o755); err != nil {
		return err
	}
	args = append(args, "posix", "--sidecar", sidecar, s.Dir)
	log, err := os.OpenFile(filepath.Join(s.tempDir, "versitygw.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited, s.log = cmd, exited, log
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		select {
		case <-exited:
			return fmt.Errorf("versitygw exited at start: %s", s.LogTail())
		case <-ctx.Done():
			return fmt.Errorf("versitygw did not answer on %s within 30s: %s", s.Endpoint, s.LogTail())
		case <-time.After(50 * time.Millisecond):
		}
		if _, err := s.Client().ListBuckets(ctx); err == nil {
			return nil
		}
	}
}

// Stop ends the server and removes its temporary files (not Options.Dir).
func (s *Server) Stop() error {
	s.Kill()
	if s.log != nil {
		s.log.Close()
	}
	return os.RemoveAll(s.tempDir)
}

// Kill ends the server process and keeps its data: Restart brings it back on the same
// address (the "endpoint down" fault).
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Restart runs a killed server again on the same address with the same data.
func (s *Server) Restart(ctx context.Context) error {
	s.Kill()
	bin, err := Binary()
	if err != nil {
		return err
	}
	return s.run(ctx, bin)
}

// LogTail is the end of the server's log.
func (s *Server) LogTail() string {
	raw, _ := os.ReadFile(filepath.Join(s.tempDir, "versitygw.log"))
	if len(raw) > 2000 {
		raw = raw[len(raw)-2000:]
	}
	return strings.TrimSpace(string(raw))
}

// Client is a root client of the server (for tests: creating buckets, reading raw
// objects).
func (s *Server) Client() *minio.Client {
	c, err := minio.New(s.Host, &minio.Options{
		Creds:     credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
		Secure:    s.opts.TLS,
		Region:    s.Region,
		Transport: s.Transport(),
	})
	if err != nil {
		panic(err) // only for a malformed host, which Start never makes
	}
	return c
}

// Transport trusts the server's CA (TLS) or is the default.
func (s *Server) Transport() http.RoundTripper {
	if !s.opts.TLS {
		return http.DefaultTransport
	}
	return transportTrusting(s.CA)
}

// CreateBucket makes a bucket.
func (s *Server) CreateBucket(ctx context.Context, name string) error {
	return s.Client().MakeBucket(ctx, name, minio.MakeBucketOptions{Region: s.Region})
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}
