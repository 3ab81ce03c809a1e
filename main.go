// Command manager runs the linstor-operator.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	"github.com/operator-framework/operator-lib/conditions"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/linstor-operator/linstor-operator/internal/manager"
	"github.com/linstor-operator/linstor-operator/pkg/images"
	"github.com/linstor-operator/linstor-operator/pkg/rehearsal"
)

var setupLog logr.Logger

// defaultWebhookCertDir is where OLM (and config/default's cert-manager patch) mount the
// serving cert.
const defaultWebhookCertDir = "/tmp/k8s-webhook-server/serving-certs"

// goMemLimitRatio is the share of the container's memory limit the Go runtime aims to
// stay under: the rest holds the binary's pages and a margin (docs/performance.md,
// "Replica health at scale").
const goMemLimitRatio = 0.55

func main() {
	// The migration rehearsal's Job runs steps of this binary (pkg/rehearsal).
	if len(os.Args) > 1 && os.Args[1] == "rehearsal" {
		os.Exit(rehearsal.Main(os.Args[2:], os.Stderr))
	}
	var (
		metricsAddr, probeAddr, pprofAddr, logLevel, logFormat, linstorURL string
		namespace, webhookCertDir                                          string
		leaderElect, secureMetrics, enableHTTP2                            bool
		webhooksEnabled                                                    bool
		apiQPS                                                             float64
		apiBurst                                                           int
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8443", "Metrics endpoint address; 0 disables it.")
	flag.BoolVar(&secureMetrics, "metrics-secure", true, "Serve metrics over HTTPS with Kubernetes authentication and authorization.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Health and readiness probe address.")
	flag.StringVar(&pprofAddr, "pprof-bind-address", "0", "Go's profiling endpoints (/debug/pprof/) at this address, unauthenticated: bind it to loopback; 0 disables them.")
	flag.BoolVar(&leaderElect, "leader-elect", true, "Use a Lease so only one operator replica acts.")
	flag.BoolVar(&enableHTTP2, "enable-http2", false, "Serve HTTP/2 on the metrics and webhook servers (off: CVE-2023-44487).")
	flag.BoolVar(&webhooksEnabled, "webhooks", true, "Serve the conversion and validating webhooks.")
	flag.StringVar(&namespace, "namespace", os.Getenv("OPERATOR_NAMESPACE"), "Namespace the operator runs LINSTOR in, where the operands' ServiceAccounts and RBAC are installed (default $OPERATOR_NAMESPACE, which the Deployment sets to its own).")
	flag.StringVar(&webhookCertDir, "webhook-cert-dir", defaultWebhookCertDir, "Folder holding the webhook serving certificate (tls.crt, tls.key); the default is where OLM mounts it.")
	flag.StringVar(&linstorURL, "linstor-url", "", "Development aid: reach LINSTOR at this URL instead of the in-cluster Service (out-of-cluster runs).")
	flag.StringVar(&logLevel, "log-level", "info", "Log level: debug, info, warn or error.")
	flag.StringVar(&logFormat, "log-format", "json", "Log encoding: json or console.")
	// A thousand satellites converging need a few thousand writes (each created once,
	// each status change recorded); the client-go default of 20/s would pace them for
	// minutes. The API server's priority and fairness still protects it.
	flag.Float64Var(&apiQPS, "kube-api-qps", 50, "Requests per second to the Kubernetes API (client-side limit).")
	flag.IntVar(&apiBurst, "kube-api-burst", 100, "Burst of requests to the Kubernetes API above kube-api-qps.")
	flag.Parse()

	log, err := newLogger(logLevel, logFormat)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctrl.SetLogger(zapr.NewLogger(log))
	setupLog = ctrl.Log.WithName("setup")

	// The informers' caches and each cycle's decoding of LINSTOR's resource view grow
	// with the cluster; with the Go default (GOGC alone) a large one overshoots the
	// container's limit between collections and is OOM-killed (at 1,000 nodes and 30,000
	// replicas: 299 MiB against 256 Mi). A soft limit below it makes the collector work
	// harder instead. What the Go limit does not count stays outside it: the binary's
	// pages (about 48 MiB resident, charged to the container too). GOMEMLIMIT in the
	// environment wins.
	if _, err := memlimit.Set(
		memlimit.WithRatio(goMemLimitRatio),
		memlimit.WithProvider(memlimit.FromCgroup),
		memlimit.WithLogger(slog.New(logr.ToSlogHandler(setupLog))),
	); err != nil {
		setupLog.Error(err, "could not set the Go memory limit from the container's; running without")
	}

	if namespace == "" {
		setupLog.Error(nil, "no namespace to run LINSTOR in: set --namespace or OPERATOR_NAMESPACE")
		os.Exit(2)
	}
	// A typo in a mirror's RELATED_IMAGE_* must stop the operator, not pull the default.
	imageSet, err := images.FromEnv(os.Environ())
	if err != nil {
		setupLog.Error(err, "invalid operand image configuration")
		os.Exit(1)
	}

	var tlsOpts []func(*tls.Config)
	if !enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metricsOpts := metricsserver.Options{BindAddress: metricsAddr, SecureServing: secureMetrics, TLSOpts: tlsOpts}
	if secureMetrics {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}

	cfg := ctrl.GetConfigOrDie()
	cfg.QPS, cfg.Burst = float32(apiQPS), apiBurst
	mgr, err := manager.New(cfg, manager.Options{
		Webhooks:   webhooksEnabled,
		Images:     imageSet,
		LinstorURL: linstorURL,
		// LINSTOR's page only behind the endpoint's authentication.
		LinstorMetrics:    secureMetrics,
		Namespace:         namespace,
		OperatorCondition: olmUpgradeable(cfg),
		Manager: ctrl.Options{
			Metrics:                       metricsOpts,
			WebhookServer:                 webhook.NewServer(webhook.Options{CertDir: webhookCertDir, TLSOpts: tlsOpts}),
			HealthProbeBindAddress:        probeAddr,
			PprofBindAddress:              pprofAddr,
			LeaderElection:                leaderElect,
			LeaderElectionID:              "linstor-operator.linstor.io",
			LeaderElectionReleaseOnCancel: true,
		},
	})
	if err != nil {
		setupLog.Error(err, "unable to set up the operator")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setupLog.Error(err, "unable to set up health check")
		os.Exit(1)
	}
	readyCheck := healthz.Ping
	if webhooksEnabled {
		readyCheck = mgr.GetWebhookServer().StartedChecker()
	}
	if err := mgr.AddReadyzCheck("readyz", readyCheck); err != nil {
		setupLog.Error(err, "unable to set up ready check")
		os.Exit(1)
	}

	setupLog.Info("starting manager")
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	if err := mgr.Start(manager.ContextUntilDrained(sig, manager.DrainDelay)); err != nil {
		setupLog.Error(err, "manager stopped with an error")
		os.Exit(1)
	}
}

// newLogger builds the zap logger behind logr.
func newLogger(level, format string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	cfg := zap.NewProductionConfig()
	switch format {
	case "json":
	case "console":
		cfg = zap.NewDevelopmentConfig()
	default:
		return nil, fmt.Errorf("--log-format must be json or console, not %q", format)
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	return cfg.Build()
}

// olmUpgradeable is the Upgradeable condition of the OperatorCondition OLM created for
// this operator, or nil outside OLM (no OPERATOR_CONDITION_NAME), which skips it quietly.
func olmUpgradeable(cfg *rest.Config) conditions.Condition {
	if os.Getenv("OPERATOR_CONDITION_NAME") == "" {
		setupLog.Info("not managed by OLM: no OperatorCondition to keep")
		return nil
	}
	c, err := client.New(cfg, client.Options{Scheme: manager.NewScheme()})
	if err != nil {
		setupLog.Error(err, "OperatorCondition client")
		os.Exit(1)
	}
	cond, err := conditions.InClusterFactory{Client: c}.NewCondition(operatorsv2.ConditionType(operatorsv2.Upgradeable))
	if err != nil {
		setupLog.Error(err, "OperatorCondition")
		os.Exit(1)
	}
	return cond
}
