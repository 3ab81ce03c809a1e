package envtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	olmcrds "github.com/operator-framework/api/crds"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/linstor-operator/linstor-operator/internal/bundle"
	"github.com/linstor-operator/linstor-operator/internal/manager"
	"github.com/linstor-operator/linstor-operator/pkg/images"
)

// Env is a running test environment.
type Env struct {
	Config *rest.Config
	// Client talks to the API server directly (no cache), so assertions see the truth.
	Client  client.Client
	Manager ctrl.Manager
}

// Options adjust the environment.
type Options struct {
	// LinstorURL points the operator's controllers at a LINSTOR API (the emulator).
	LinstorURL string
	// LinstorPoll shortens how often the controllers re-read LINSTOR.
	LinstorPoll time.Duration
	// LinstorGrace shortens how long LINSTOR may fail before conditions report it.
	LinstorGrace time.Duration
	// DiskRelist shortens how often storage discovery lists a node's unused disks.
	DiskRelist time.Duration
	// RestoreSettle shortens how long an evicted node must be back before it is restored.
	RestoreSettle time.Duration
	// BackupTargetPoll shortens how often a LinstorBackupTarget's bucket is listed.
	BackupTargetPoll time.Duration
	// Now is the LinstorBackupSchedule controller's clock (nil: time.Now).
	Now func() time.Time
	// Setup registers extra controllers on the manager before it starts.
	Setup func(ctrl.Manager) error
	// ExtraCRDs are more CRD files or directories to install (third-party kinds).
	ExtraCRDs []string
}

// RepoRoot is the repository's top directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Run starts the environment, runs the tests and stops everything it started, also
// when a test panics. It returns the exit code for os.Exit.
func Run(m *testing.M, opts Options, out **Env) (code int) {
	env, stop, err := start(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "envtest: %v\n", err)
		return 1
	}
	defer func() {
		if err := stop(); err != nil {
			fmt.Fprintf(os.Stderr, "envtest: stopping: %v\n", err)
			code = 1
		}
	}()
	*out = env
	return m.Run()
}

func assets() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join(RepoRoot(), "bin", "k8s", "v1.34.2")
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("%s not found in %s: run `make envtest-assets` (or `make test`, which builds it from source)", bin, dir)
		}
	}
	return dir, nil
}

func start(opts Options) (*Env, func() error, error) {
	dir, err := assets()
	if err != nil {
		return nil, nil, err
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true), zap.Level(zapLevel())))
	scheme := manager.NewScheme()
	root := RepoRoot()
	te := &ctrlenvtest.Environment{
		BinaryAssetsDirectory: dir,
		CRDInstallOptions: ctrlenvtest.CRDInstallOptions{
			Paths: append([]string{filepath.Join(root, "config", "crd", "bases")}, opts.ExtraCRDs...),
			// OLM's OperatorCondition, which the operator keeps when OLM manages it.
			CRDs:               []*apiextensionsv1.CustomResourceDefinition{olmcrds.OperatorCondition()},
			Scheme:             scheme,
			ErrorIfPathMissing: true,
		},
		WebhookInstallOptions: ctrlenvtest.WebhookInstallOptions{
			Paths: []string{filepath.Join(root, "config", "webhook")},
		},
	}
	cfg, err := te.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("starting kube-apiserver and etcd: %w", err)
	}
	stopEnv := te.Stop

	wh := te.WebhookInstallOptions
	mgr, err := manager.New(cfg, manager.Options{
		Webhooks:         true,
		Images:           images.Default(),
		LinstorURL:       opts.LinstorURL,
		LinstorPoll:      opts.LinstorPoll,
		LinstorGrace:     opts.LinstorGrace,
		DiskRelist:       opts.DiskRelist,
		RestoreSettle:    opts.RestoreSettle,
		BackupTargetPoll: opts.BackupTargetPoll, Now: opts.Now,
		Manager: ctrl.Options{
			Scheme:                 scheme,
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
			WebhookServer: webhook.NewServer(webhook.Options{
				Host: wh.LocalServingHost, Port: wh.LocalServingPort, CertDir: wh.LocalServingCertDir,
			}),
		},
	})
	if err == nil && opts.Setup != nil {
		err = opts.Setup(mgr)
	}
	if err != nil {
		_ = stopEnv()
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stop := func() error {
		cancel()
		mgrErr := <-done
		if err := stopEnv(); err != nil {
			return err
		}
		return mgrErr
	}
	if err := waitForWebhooks(ctx, mgr, done); err != nil {
		_ = stop()
		return nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = stop()
		return nil, nil, err
	}
	return &Env{Config: cfg, Client: c, Manager: mgr}, stop, nil
}

func waitForWebhooks(ctx context.Context, mgr ctrl.Manager, done chan error) error {
	check := mgr.GetWebhookServer().StartedChecker()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("manager exited before its webhooks started: %v", err)
		default:
		}
		if check(nil) == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("webhook server did not start within 30s")
}

func zapLevel() zapcore.Level {
	if os.Getenv("ENVTEST_VERBOSE") != "" {
		return -1
	}
	return 2 // errors only: test output stays readable
}

// Namespace creates a namespace of its own for one test and deletes it afterwards.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-", ".", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: strings.Trim(name, "-") + "-"}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), ns) })
	// The operands' accounts, as the operator's installation puts them where LINSTOR runs.
	rbac, err := bundle.ReadRBAC(RepoRoot(), ns.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, sa := range rbac.ServiceAccounts {
		if err := e.Client.Create(context.Background(), sa); err != nil {
			t.Fatalf("creating ServiceAccount %s: %v", sa.Name, err)
		}
	}
	return ns.Name
}
