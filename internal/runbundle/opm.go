package runbundle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Files in the state directory.
const (
	catalogDirName = "catalog"
	pidFileName    = "opm.pid"
	logFileName    = "opm.log"
)

// render runs `opm render <bundle dir>`: one olm.bundle blob with the manifests inline
// (image ""), so the catalog needs no bundle image and OLM no unpack Job.
func render(ctx context.Context, opm, bundleDir string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, opm, "render", bundleDir, "-o", "json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s render %s: %w: %s", opm, bundleDir, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// writeCatalog replaces the state directory's catalog with blobs.
func writeCatalog(stateDir, pkg string, blobs []byte) (string, error) {
	dir := filepath.Join(stateDir, catalogDirName)
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(dir, pkg), 0o755); err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, pkg, "catalog.json"), blobs, 0o644)
}

// startServe starts `opm serve` on the catalog in its own session, so that it outlives
// make; its pid and log go to the state directory for cleanup-bundle. A server this state
// directory started before is stopped first: it serves the previous catalog.
func startServe(opm, stateDir, catalogDir, address string) (int, error) {
	_, port, err := net.SplitHostPort(address)
	if err != nil {
		return 0, fmt.Errorf("CATALOG_ADDRESS %q: %w", address, err)
	}
	if _, err := stopServe(stateDir); err != nil {
		return 0, err
	}
	log, err := os.OpenFile(filepath.Join(stateDir, logFileName), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, err
	}
	defer log.Close()
	// No pprof endpoint (its default port would collide between servers) and the
	// termination log in the state directory instead of /dev.
	cmd := exec.Command(opm, "serve", catalogDir, "-p", port, "--pprof-addr=",
		"-t", filepath.Join(stateDir, "termination.log"))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting %s serve: %w", opm, err)
	}
	pid := cmd.Process.Pid
	// Reap it if it exits while this process lives (a test), so that a dead server is not
	// taken for a live one.
	go func() { _ = cmd.Wait() }()
	if err := os.WriteFile(filepath.Join(stateDir, pidFileName), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		_ = cmd.Process.Kill()
		return 0, err
	}
	return pid, nil
}

// stopServe stops the opm server recorded in the state directory, if it still runs and is
// still that opm server (pids are reused), and removes the pid file. It reports the pid
// it stopped (0 for none).
func stopServe(stateDir string) (int, error) {
	pidFile := filepath.Join(stateDir, pidFileName)
	raw, err := os.ReadFile(pidFile)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", pidFile, err)
	}
	stopped := 0
	if isOpmServe(pid) {
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return 0, fmt.Errorf("stopping opm serve (pid %d): %w", pid, err)
		}
		for i := 0; i < 100 && isOpmServe(pid); i++ {
			time.Sleep(100 * time.Millisecond)
		}
		if isOpmServe(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		stopped = pid
	}
	if err := os.Remove(pidFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	return stopped, nil
}

// isOpmServe is true while pid is a live (not zombie) `opm serve` process.
func isOpmServe(pid int) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(string(cmdline), "\x00")
	if len(args) < 2 || !strings.HasPrefix(filepath.Base(args[0]), "opm") || args[1] != "serve" {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesized command name.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// waitServing waits until the gRPC health service at address reports SERVING, failing
// early with the server's log if the process pid exits.
func waitServing(ctx context.Context, address string, pid int, logFile string) error {
	conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("CATALOG_ADDRESS %q: %w", address, err)
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	var last error
	for {
		callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := health.Check(callCtx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		last = err
		if err == nil {
			last = fmt.Errorf("health %s", resp.GetStatus())
		}
		if !isOpmServe(pid) {
			tail, _ := os.ReadFile(logFile)
			return fmt.Errorf("opm serve exited before serving at %s; its log (%s):\n%s", address, logFile, lastLines(tail, 20))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("opm serve at %s did not become healthy: %v", address, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
