// Package olm installs this repository's bundle through a real OLM and runs the real
// operator binary as the pod OLM deployed. The world is a kwok-simulated cluster (real
// etcd, kube-apiserver, controller manager and scheduler), OLM's olm and catalog
// operators built from source, the bundle's file-based catalog served by `opm serve`,
// and the LINSTOR emulator standing in for the LINSTOR controller pod. All of it runs
// inside a network and mount namespace the test creates: pod addresses are real
// addresses there, so the API server reaches the operator's webhooks through the
// endpoints of OLM's Service, and nothing leaves the namespace.
//
// The tests run in file order as one scenario.
package olm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/linstor-operator/linstor-operator/internal/kwokcluster"
	"github.com/linstor-operator/linstor-operator/internal/manager"
	"github.com/linstor-operator/linstor-operator/internal/runbundle"
	testenv "github.com/linstor-operator/linstor-operator/test/envtest"
)

const (
	// insideEnv marks the re-executed test binary running inside the namespaces.
	insideEnv   = "LINSTOR_OLM_E2E_NETNS"
	clusterName = "linstor-olm"
	olmVersion  = "v0.46.0"
	// namespace is the bundle's suggested namespace: OLM installs the operator there and
	// the LinstorCluster lives there.
	namespace    = "linstor"
	olmNamespace = "olm"
	// catalogAddress is where run-bundle's opm serves the catalog.
	catalogAddress = "127.0.0.1:50051"
	channel        = "stable"
	// apiserverAddress is outside the pod, node and service ranges of the cluster.
	apiserverAddress = "172.31.255.1"
)

// world is what TestMain started.
var world struct {
	root    string
	work    string // bin/olm-e2e: logs, catalog, certificates
	cluster *kwokcluster.Cluster
	client  client.Client
	hosts   string // the file bind-mounted on /etc/hosts
	// binaries maps each release's operator image to the binary built from its sources.
	binaries map[string]string
	opm      string
	procs    []*process
}

var ctx = context.Background()

func TestMain(m *testing.M) {
	if os.Getenv(insideEnv) == "" {
		os.Exit(outside())
	}
	os.Exit(inside(m))
}

// outside builds what the world needs (through the module proxy, before there is no
// network), then runs this binary again inside fresh network and mount namespaces.
func outside() int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "test/olm: FAIL: these tests run the cluster, OLM and the operator inside a network namespace "+
			"they create (unshare --net --mount), which needs root; CI runs as root. Not skipping: run them as root.")
		return 1
	}
	root := testenv.RepoRoot()
	work := filepath.Join(root, "bin", "olm-e2e")
	if err := os.MkdirAll(work, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "test/olm:", err)
		return 1
	}
	start := time.Now()
	if err := kwokcluster.BuildBinaries(ctx, root); err != nil {
		fmt.Fprintln(os.Stderr, "test/olm: building the cluster binaries:", err)
		return 1
	}
	for _, script := range []string{"build-olm.sh", "build-opm.sh"} {
		c := exec.Command(filepath.Join(root, "hack", script))
		c.Stderr = os.Stderr
		if err := c.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "test/olm: hack/%s: %v\n", script, err)
			return 1
		}
	}
	// The operator binaries OLM's pods would run (their images hold the same builds), the
	// test-only releases and their catalogs.
	if err := prepareReleases(root, work); err != nil {
		fmt.Fprintln(os.Stderr, "test/olm:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "test/olm: binaries ready in %.1fs\n", time.Since(start).Seconds())

	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "test/olm:", err)
		return 1
	}
	// A private mount namespace lets the world have its own /etc/hosts (the cluster DNS
	// names of Services the operator dials); private propagation keeps its mounts in.
	cmd := exec.Command("unshare", append([]string{"--net", "--mount", "--propagation", "private", "--", self}, os.Args[1:]...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), insideEnv+"=1")
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "test/olm: FAIL: cannot create the network namespace (unshare --net --mount):", err)
		return 1
	}
	return 0
}

// inside sets the world up in the namespaces, runs the tests and tears it down.
func inside(m *testing.M) (code int) {
	world.root = testenv.RepoRoot()
	world.work = filepath.Join(world.root, "bin", "olm-e2e")
	world.opm = filepath.Join(world.root, "bin", "opm", "opm-v1.73.0")
	var err error
	if world.binaries, err = releaseBinaries(world.root, world.work); err != nil {
		fmt.Fprintln(os.Stderr, "test/olm:", err)
		return 1
	}
	// The test's clients log nothing worth showing; the processes log to files.
	ctrllog.SetLogger(logr.Discard())
	start := time.Now()
	err = setUp()
	defer func() {
		if err := tearDown(); err != nil {
			fmt.Fprintln(os.Stderr, "test/olm: tearing down:", err)
			code = 1
		}
		// Nothing of the cluster may outlive the run (a few seconds to finish stopping).
		if world.cluster != nil {
			if err := testenv.WaitFor(250*time.Millisecond, 15*time.Second, func() (bool, error) {
				left := kwokcluster.ProcessesUnder(world.cluster.Dir())
				return len(left) == 0, fmt.Errorf("processes %v", left)
			}); err != nil {
				fmt.Fprintln(os.Stderr, "test/olm: cluster processes left behind:", err)
				code = 1
			}
		}
		fmt.Fprintf(os.Stderr, "test/olm: the whole suite took %.1fs\n", time.Since(start).Seconds())
		showFailures()
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "test/olm: setting up the world:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "test/olm: cluster, OLM and catalog ready in %.1fs (logs in %s)\n", time.Since(start).Seconds(), world.work)
	code = m.Run()
	if code != 0 {
		for _, p := range world.procs {
			testenv.ShowTail("test/olm", p.log, 40)
		}
	}
	return code
}

func setUp() error {
	if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return fmt.Errorf("ip link set lo up: %v: %s", err, out)
	}
	// Cluster DNS for the names the operator dials: the LINSTOR controller's Service is
	// added once its pod has an address.
	world.hosts = filepath.Join(world.work, "hosts")
	if err := setHosts(nil); err != nil {
		return err
	}
	if err := syscall.Mount(world.hosts, "/etc/hosts", "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mounting %s on /etc/hosts: %w", world.hosts, err)
	}
	// A private /run, so the operator process finds its ServiceAccount's files where a
	// pod's kubelet mounts them (/var/run/secrets/kubernetes.io/serviceaccount).
	if err := syscall.Mount("tmpfs", "/run", "tmpfs", 0, "mode=755"); err != nil {
		return fmt.Errorf("mounting a private /run: %w", err)
	}

	// The API server advertises an address of its own (the kubernetes Service's endpoint);
	// with no default route it cannot pick one.
	if err := addAddress(apiserverAddress); err != nil {
		return err
	}
	var err error
	// Webhooks are called at the Service's endpoint addresses: there is no kube-proxy.
	if world.cluster, err = kwokcluster.Create(ctx, world.root, clusterName,
		"--extra-args", "kube-apiserver=advertise-address="+apiserverAddress,
		"--extra-args", "kube-apiserver=enable-aggregator-routing=true"); err != nil {
		return err
	}
	scheme := manager.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{operatorsv1alpha1.AddToScheme, operatorsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	if world.client, err = client.New(world.cluster.Config, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	crds := filepath.Join(world.root, "bin", "olm", olmVersion, "crds")
	if _, err := envtest.InstallCRDs(world.cluster.Config, envtest.CRDInstallOptions{Paths: []string{crds}, ErrorIfPathMissing: true}); err != nil {
		return fmt.Errorf("installing OLM's CRDs from %s: %w", crds, err)
	}
	// The namespace as docs/olm.md's operator-sdk commands make it (LINSTOR's satellites
	// need privileged); the cleanup step keeps the CRDs, as their --delete-all=false does.
	documented, err := documentedSDKCommands()
	if err != nil {
		return err
	}
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: olmNamespace}},
		{ObjectMeta: metav1.ObjectMeta{Name: "operators"}},
		{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: documented.NamespaceLabels}},
	} {
		if err := world.client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}

	kubeconfigEnv := "KUBECONFIG=" + world.cluster.Kubeconfig
	olmBin := filepath.Join(world.root, "bin", "olm", olmVersion)
	// Both serve their metrics on :8080 with no flag to move it: catalog's listener fails
	// (it only logs that) and everything else works.
	if err := startProcess("olm", []string{kubeconfigEnv}, filepath.Join(olmBin, "olm"),
		"--namespace", olmNamespace, "--writeStatusName", "", "--writePackageServerStatusName", ""); err != nil {
		return err
	}
	if err := startProcess("catalog", nil, filepath.Join(olmBin, "catalog"),
		"--kubeconfig", world.cluster.Kubeconfig, "--namespace", olmNamespace, "--writeStatusName", ""); err != nil {
		return err
	}
	return startLinstor()
}

func tearDown() error {
	var errs []error
	stopLinstor()
	// The catalog server run-bundle started runs in its own session.
	if world.cluster != nil {
		c, cancel := context.WithTimeout(ctx, time.Minute)
		errs = append(errs, runbundle.Cleanup(c, runBundleOptions(nil)))
		cancel()
	}
	// In reverse: the operator before OLM, OLM before the catalog server.
	for i := len(world.procs) - 1; i >= 0; i-- {
		errs = append(errs, world.procs[i].stop())
	}
	if world.cluster != nil {
		errs = append(errs, world.cluster.Delete())
	}
	return errors.Join(errs...)
}

// process is a child the world started, its output in a log file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan error
}

// startProcess runs bin with args and env (added to a minimal environment) until the
// world is torn down.
func startProcess(name string, env []string, bin string, args ...string) error {
	p := &process{name: name, log: filepath.Join(world.work, name+".log"), done: make(chan error, 1)}
	f, err := os.Create(p.log)
	if err != nil {
		return err
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		_ = f.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	go func() { p.done <- p.cmd.Wait(); _ = f.Close() }()
	world.procs = append(world.procs, p)
	return nil
}

// stop asks the process to end and kills it after 15 seconds.
// It may be called again: the outcome stays in done.
func (p *process) stop() error {
	select {
	case err := <-p.done:
		p.done <- err
		return nil // ended already; its log tells why
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		p.done <- <-p.done
		return fmt.Errorf("%s did not stop on SIGTERM", p.name)
	}
	return nil
}

// exited reports whether the process ended, and how.
func (p *process) exited() (bool, error) {
	select {
	case err := <-p.done:
		p.done <- err
		return true, err
	default:
		return false, nil
	}
}

// addAddress puts a pod's address on the namespace's loopback, where its process listens.
func addAddress(ip string) error {
	out, err := exec.Command("ip", "addr", "add", ip+"/32", "dev", "lo").CombinedOutput()
	if err != nil && !strings.Contains(string(out), "File exists") && !strings.Contains(string(out), "already assigned") {
		return fmt.Errorf("ip addr add %s/32 dev lo: %v: %s", ip, err, out)
	}
	return nil
}

// setHosts resolves each name to its address for every process of the world (Go's
// resolver rereads the file when it changes).
func setHosts(names map[string]string) error {
	var b strings.Builder
	b.WriteString("127.0.0.1 localhost\n::1 localhost\n")
	for name, ip := range names {
		fmt.Fprintf(&b, "%s %s\n", ip, name)
	}
	// In place: the file is bind-mounted on /etc/hosts.
	return os.WriteFile(world.hosts, []byte(b.String()), 0o644)
}

// runBundleOptions are make run-bundle's options for this world: the catalog in
// catalogDir (the project's catalog/ or a test catalog), served at catalogAddress.
// documentedSDKCommands are docs/olm.md's operator-sdk commands: the ones this test runs
// the equivalent of, in its namespace and without deleting CRDs on cleanup.
func documentedSDKCommands() (*runbundle.SDKCommands, error) {
	doc, err := os.ReadFile(filepath.Join(world.root, "docs", "olm.md"))
	if err != nil {
		return nil, err
	}
	c, err := runbundle.ParseSDKCommands(doc)
	if err != nil {
		return nil, fmt.Errorf("docs/olm.md: %w", err)
	}
	if c.Namespace != namespace || c.CleanupDeleteAll {
		return nil, fmt.Errorf("docs/olm.md installs into %q and cleans up with --delete-all=%v; this test installs into %q and keeps the CRDs", c.Namespace, c.CleanupDeleteAll, namespace)
	}
	return c, nil
}

func runBundleOptions(out io.Writer) runbundle.Options {
	return runbundle.Options{
		Config: world.cluster.Config, Namespace: namespace, Channel: channel, Approval: "Manual",
		CatalogDir: filepath.Join(world.root, "catalog"), CatalogAddress: catalogAddress, Opm: world.opm,
		Timeout: 3 * time.Minute, Out: out, StateDir: filepath.Join(world.work, "run-bundle"),
	}
}
