// Package sim runs the operator end to end on this machine: a kwok-simulated cluster
// with real control-plane processes, the operator's CRDs and webhooks installed in it,
// the LINSTOR emulator coupled to the cluster's pods, and the operator itself as a
// local process talking to both. `make demo` and the e2e tests are built on it.
package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	"github.com/linstor-operator/linstor-operator/internal/bundle"
	"github.com/linstor-operator/linstor-operator/internal/emulator"
	"github.com/linstor-operator/linstor-operator/internal/kwokcluster"
	"github.com/linstor-operator/linstor-operator/internal/manager"
	"github.com/linstor-operator/linstor-operator/pkg/images"
	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
)

// Options configure an environment.
type Options struct {
	// Root is the repository (config/ and bin/ are read from it).
	Root string
	// Name of the kwok cluster.
	Name string
	// Namespace the LinstorCluster lives in; created.
	Namespace string
	// LinstorPoll is how often the operator re-reads LINSTOR.
	LinstorPoll time.Duration
	// UpgradePhaseTimeout bounds upgrade phases before a rollback (zero: the default).
	UpgradePhaseTimeout time.Duration
}

// Env is a running simulated environment.
type Env struct {
	Cluster    *kwokcluster.Cluster
	Client     client.Client
	Emulator   *emulator.Emulator
	LinstorURL string

	opts      Options
	installer *envtest.Environment
	// operatorConfig authenticates as the operator's ServiceAccount: the operator has
	// exactly the permissions config/rbac grants it, as deployed.
	operatorConfig *rest.Config
	emuSrv         *http.Server
	stopSync       context.CancelFunc
	operator       *operator
}

type operator struct {
	cancel context.CancelFunc
	done   chan error
}

// Start builds what is missing, creates the cluster and installs the operator's API.
// The operator itself is started with StartOperator. On error, everything started is
// stopped again.
func Start(ctx context.Context, opts Options) (env *Env, err error) {
	if err := kwokcluster.BuildBinaries(ctx, opts.Root); err != nil {
		return nil, err
	}
	e := &Env{opts: opts}
	defer func() {
		if err != nil {
			_ = e.Stop()
		}
	}()
	if e.Cluster, err = kwokcluster.Create(ctx, opts.Root, opts.Name); err != nil {
		return nil, err
	}
	scheme := manager.NewScheme()
	// envtest installs the CRDs (conversion webhook included) and the webhook
	// configurations into the existing cluster, pointing at the operator's local
	// webhook server with certificates it generates.
	e.installer = &envtest.Environment{
		UseExistingCluster: ptr.To(true),
		Config:             e.Cluster.Config,
		CRDInstallOptions: envtest.CRDInstallOptions{Paths: []string{filepath.Join(opts.Root, "config", "crd", "bases")},
			Scheme: scheme, ErrorIfPathMissing: true},
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: []string{filepath.Join(opts.Root, "config", "webhook")}},
	}
	if _, err = e.installer.Start(); err != nil {
		return nil, fmt.Errorf("installing the CRDs and webhooks: %w", err)
	}
	if e.Client, err = client.New(e.Cluster.Config, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	// Labelled as docs/security.md ("Pod Security") tells a storage admin: satellites, the
	// CSI node plugin and the HA controller need privileged (DRBD); whatever exceeds
	// restricted is audited and warned about (test/api/podsecurity_test.go pins which).
	if err = e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opts.Namespace, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "privileged",
		"pod-security.kubernetes.io/audit":   "restricted",
		"pod-security.kubernetes.io/warn":    "restricted",
	}}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	if e.operatorConfig, err = installRBAC(ctx, e.Client, e.Cluster.Config, opts.Root, opts.Namespace); err != nil {
		return nil, fmt.Errorf("installing the operator's RBAC: %w", err)
	}

	e.Emulator = emulator.New()
	// Every machine has the devices of a real node (emulator.HostDevices: a partitioned
	// system disk with LVM and ZFS, loop devices, a zvol, a CD; LINSTOR offers the zvol and
	// a loop device, both holding data) and three unused virtio disks of different sizes,
	// for device pools and discovery (the samples' pool is a file pool and needs none). A
	// Node annotated with emulator.DisksAnnotation gets the devices it lists instead.
	e.Emulator.SetNewNodeDisksFunc(func(node string) []emulator.Disk {
		return append(emulator.HostDevices(node),
			emulator.VirtioDisk(node, "/dev/vdb", 100<<30),
			emulator.VirtioDisk(node, "/dev/vdc", 200<<30),
			emulator.VirtioDisk(node, "/dev/vdd", 500<<30),
		)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	e.emuSrv = &http.Server{Handler: e.Emulator.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = e.emuSrv.Serve(ln) }()
	e.LinstorURL = "http://" + ln.Addr().String()
	syncCtx, stopSync := context.WithCancel(context.Background())
	e.stopSync = stopSync
	go e.Emulator.Couple(syncCtx, emulator.Cluster{Reader: e.Client, Namespace: opts.Namespace, Database: e.Client, DisksFromNodes: true})
	return e, nil
}

// OperatorImage is the operator image the simulated operator says it runs as (the Job
// of an upgrade rehearsal names it; no image is ever pulled in a simulated cluster).
const OperatorImage = "quay.io/linstor-operator/linstor-operator:local"

// StartOperator runs the operator (webhooks and controllers) until StopOperator.
func (e *Env) StartOperator() error { return e.StartOperatorRelease(nil) }

// StartOperatorRelease runs the operator as if it were a release running other LINSTOR
// versions (nil: this release), to play an operator upgrade through OLM.
func (e *Env) StartOperatorRelease(release *upgrade.Release) error {
	if e.operator != nil {
		return errors.New("the operator is already running")
	}
	wh := e.installer.WebhookInstallOptions
	// The operator knows its own image, as in the bundle (RELATED_IMAGE_OPERATOR): the
	// upgrade rehearsal's Job runs it, and the emulator plays that Job.
	imgs, err := images.FromEnv([]string{"RELATED_IMAGE_OPERATOR=" + OperatorImage})
	if err != nil {
		return err
	}
	mgr, err := manager.New(e.operatorConfig, manager.Options{
		Webhooks: true, Images: imgs, LinstorURL: e.LinstorURL, LinstorPoll: e.opts.LinstorPoll, Namespace: e.opts.Namespace,
		UpgradePhaseTimeout: e.opts.UpgradePhaseTimeout, Release: release,
		Manager: ctrl.Options{
			Scheme:  e.Client.Scheme(),
			Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
			WebhookServer: webhook.NewServer(webhook.Options{Host: wh.LocalServingHost, Port: wh.LocalServingPort, CertDir: wh.LocalServingCertDir}),
			// A restarted operator in the same process registers its controllers again.
			Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		},
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	op := &operator{cancel: cancel, done: make(chan error, 1)}
	go func() { op.done <- mgr.Start(ctx) }()
	check := mgr.GetWebhookServer().StartedChecker()
	deadline := time.Now().Add(30 * time.Second)
	for check(nil) != nil {
		select {
		case err := <-op.done:
			cancel()
			return fmt.Errorf("the operator stopped: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cancel()
			return errors.New("the operator's webhook server did not start")
		}
	}
	e.operator = op
	return nil
}

// OperatorConfig authenticates as the operator's ServiceAccount, as the operator does.
func (e *Env) OperatorConfig() *rest.Config { return rest.CopyConfig(e.operatorConfig) }

// OperatorDone reports the operator's exit.
func (e *Env) OperatorDone() <-chan error {
	if e.operator == nil {
		return nil
	}
	return e.operator.done
}

// StopOperator stops the operator and waits for it.
func (e *Env) StopOperator() error {
	if e.operator == nil {
		return nil
	}
	e.operator.cancel()
	err := <-e.operator.done
	e.operator = nil
	return err
}

// Stop stops the operator, the emulator and the cluster.
func (e *Env) Stop() error {
	var errs []error
	errs = append(errs, e.StopOperator())
	if e.stopSync != nil {
		e.stopSync()
	}
	if e.emuSrv != nil {
		errs = append(errs, e.emuSrv.Close())
	}
	if e.Cluster != nil {
		errs = append(errs, e.Cluster.Delete())
	}
	return errors.Join(errs...)
}

// ApplySamples creates the v1 samples of config/samples in namespace; edit changes
// each object before it is created. Objects that exist already are left as they are.
func ApplySamples(ctx context.Context, c client.Client, root, namespace string, edit ...func(*unstructured.Unstructured)) error {
	for _, f := range []string{"linstor_v1_linstorsatelliteconfiguration.yaml", "linstor_v1_linstornodeconnection.yaml", "linstor_v1_linstorcluster.yaml"} {
		raw, err := os.ReadFile(filepath.Join(root, "config", "samples", f))
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &u.Object); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		u.SetNamespace(namespace)
		for _, e := range edit {
			e(u)
		}
		if err := c.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	return nil
}

// Addresses are the host:port endpoints the environment listens on (the API server,
// the operator's webhook server, the emulator), for checking that Stop closed them.
func (e *Env) Addresses() []string {
	var out []string
	if e.Cluster != nil {
		if u, err := url.Parse(e.Cluster.Config.Host); err == nil {
			out = append(out, u.Host)
		}
	}
	if e.installer != nil {
		wh := e.installer.WebhookInstallOptions
		out = append(out, net.JoinHostPort(wh.LocalServingHost, strconv.Itoa(wh.LocalServingPort)))
	}
	if e.LinstorURL != "" {
		out = append(out, strings.TrimPrefix(e.LinstorURL, "http://"))
	}
	return out
}

// operatorAccount is the operator's ServiceAccount as config/default names it.
const operatorAccount = "linstor-operator-controller-manager"

// installRBAC creates config/rbac's accounts, roles and bindings in namespace and
// returns a configuration that authenticates as the operator's account with a token
// from the TokenRequest API, as a pod's projected token would.
func installRBAC(ctx context.Context, c client.Client, admin *rest.Config, root, namespace string) (*rest.Config, error) {
	rbac, err := bundle.ReadRBAC(root, namespace)
	if err != nil {
		return nil, err
	}
	for _, o := range rbac.Objects() {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: operatorAccount}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)}}
	if err := c.SubResource("token").Create(ctx, sa, tr); err != nil {
		return nil, fmt.Errorf("requesting a token for %s: %w", operatorAccount, err)
	}
	cfg := rest.AnonymousClientConfig(admin)
	cfg.BearerToken = tr.Status.Token
	return cfg, nil
}
