// Command demo runs the operator end to end on this machine: a real kube-apiserver and
// etcd on loopback, simulated storage nodes, the LINSTOR REST emulator, the operator
// (webhooks and controllers), and the samples. It prints progress until the
// LinstorCluster is Available and keeps running until Ctrl-C.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	ctrl "sigs.k8s.io/controller-runtime"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/emulator"
	"github.com/linstor-operator/linstor-operator/pkg/manager"
)

const namespace = "linstor"

func main() {
	nodes := flag.Int("nodes", envInt("NODES", 3), "Simulated storage nodes (env NODES).")
	flag.Parse()
	if err := run(*nodes); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(nodeCount int) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Output piped into a program that exits (head) must not kill the demo before it
	// stops the API server and etcd.
	signal.Ignore(syscall.SIGPIPE)
	start := time.Now()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapErrorsOnly)))

	root, err := os.Getwd()
	if err != nil {
		return err
	}
	scheme := manager.NewScheme()
	te := &envtest.Environment{
		BinaryAssetsDirectory: os.Getenv("KUBEBUILDER_ASSETS"),
		CRDInstallOptions:     envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, "config", "crd", "bases")}, Scheme: scheme, ErrorIfPathMissing: true},
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: []string{filepath.Join(root, "config", "webhook")}},
	}
	step("starting kube-apiserver and etcd", start)
	cfg, err := te.Start()
	if err != nil {
		return fmt.Errorf("starting the API server (run `make demo`, which builds it): %w", err)
	}
	defer func() {
		step("stopping kube-apiserver and etcd", start)
		_ = te.Stop()
	}()
	user, err := te.AddUser(envtest.User{Name: "demo", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return err
	}
	kcPath := filepath.Join(root, "bin", "demo.kubeconfig")
	if err := os.WriteFile(kcPath, kubeconfig, 0o600); err != nil {
		return err
	}

	step("starting the LINSTOR emulator", start)
	emu := emulator.New()
	emu.SetNewNodeDisks(lapi.PhysicalStorageNode{PhysicalStorageDevice: lapi.PhysicalStorageDevice{Device: "/dev/vdb", Model: "emulated"}, Size: 100 << 30})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	emuSrv := &http.Server{Handler: emu.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = emuSrv.Serve(ln) }()
	defer func() { _ = emuSrv.Close() }()
	linstorURL := "http://" + ln.Addr().String()

	step("starting the operator", start)
	wh := te.WebhookInstallOptions
	mgr, err := manager.New(cfg, manager.Options{
		Webhooks: true, Images: images.Default(), LinstorURL: linstorURL, LinstorPoll: 5 * time.Second,
		Manager: ctrl.Options{
			Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
			WebhookServer: webhook.NewServer(webhook.Options{Host: wh.LocalServingHost, Port: wh.LocalServingPort, CertDir: wh.LocalServingCertDir}),
		},
	})
	if err != nil {
		return err
	}
	mgrDone := make(chan error, 1)
	mgrCtx, stopMgr := context.WithCancel(ctx)
	go func() { mgrDone <- mgr.Start(mgrCtx) }()
	defer func() {
		stopMgr()
		<-mgrDone
	}()
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	if err := waitForWebhooks(ctx, mgr); err != nil {
		return err
	}

	step(fmt.Sprintf("creating %d simulated nodes", nodeCount), start)
	if err := createNodes(ctx, c, nodeCount); err != nil {
		return err
	}
	step("applying config/samples", start)
	if err := applySamples(ctx, c, root); err != nil {
		return err
	}
	fmt.Printf("\n  kubectl --kubeconfig %s get linstorclusters,linstorsatellites -A\n  LINSTOR API (emulated): %s\n\n", kcPath, linstorURL)

	announced, last, lastAt := false, "", time.Time{}
	ticker := time.NewTicker(2 * time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Println()
			return nil
		case err := <-mgrDone:
			mgrDone <- err
			return fmt.Errorf("the operator stopped: %v", err)
		case <-ticker.C:
			line, available := progress(ctx, c)
			// Print changes, and a heartbeat every 30 s.
			if line != last || time.Since(lastAt) > 30*time.Second {
				fmt.Printf("[%5.1fs] %s\n", time.Since(start).Seconds(), line)
				last, lastAt = line, time.Now()
			}
			if available && !announced {
				announced = true
				fmt.Printf("[%5.1fs] LinstorCluster is Available. Press Ctrl-C to stop.\n", time.Since(start).Seconds())
			}
		}
	}
}

// createNodes registers simulated nodes that look like real ones: labels, zone,
// osImage and an InternalIP.
func createNodes(ctx context.Context, c client.Client, n int) error {
	zones := []string{"zone-a", "zone-b", "zone-c"}
	for i := 0; i < n; i++ {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("storage-%02d", i+1),
			Labels: map[string]string{
				"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": fmt.Sprintf("storage-%02d", i+1),
				"node-role.kubernetes.io/storage": "", "topology.kubernetes.io/zone": zones[i%len(zones)],
			},
		}}
		if err := c.Create(ctx, node); err != nil {
			return err
		}
		node.Status = corev1.NodeStatus{
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.%d.%d", i/250, i%250+10)}, {Type: corev1.NodeHostName, Address: node.Name}},
			NodeInfo:  corev1.NodeSystemInfo{OSImage: "Ubuntu 24.04.1 LTS", KernelVersion: "6.8.0-45-generic", ContainerRuntimeVersion: "containerd://1.7.22", KubeletVersion: "v1.34.2"},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		}
		if err := c.Status().Update(ctx, node); err != nil {
			return err
		}
	}
	return nil
}

func applySamples(ctx context.Context, c client.Client, root string) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return err
	}
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
		if err := c.Create(ctx, u); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	return nil
}

func progress(ctx context.Context, c client.Client) (string, bool) {
	var clusters linstorv1.LinstorClusterList
	if err := c.List(ctx, &clusters, client.InNamespace(namespace)); err != nil || len(clusters.Items) == 0 {
		return "waiting for the LinstorCluster", false
	}
	cl := clusters.Items[0]
	var sats linstorv1.LinstorSatelliteList
	_ = c.List(ctx, &sats, client.InNamespace(namespace))
	online, poolsReady, poolsWanted := 0, 0, 0
	for _, s := range sats.Items {
		if s.Status.ConnectionStatus == "ONLINE" {
			online++
		}
		poolsWanted += len(s.Spec.StoragePools)
		for _, p := range s.Status.StoragePools {
			if p.TotalCapacity != nil && !p.TotalCapacity.IsZero() {
				poolsReady++
			}
		}
	}
	avail := meta.FindStatusCondition(cl.Status.Conditions, linstorv1.ConditionAvailable)
	status, reason := "Unknown", ""
	if avail != nil {
		status, reason = string(avail.Status), avail.Reason
	}
	capacity := "-"
	if cl.Status.Capacity != nil && cl.Status.Capacity.Total != nil {
		capacity = cl.Status.Capacity.Total.String()
	}
	return fmt.Sprintf("LinstorCluster Available=%s (%s) LINSTOR %s, satellites %d/%d ONLINE, pools %d/%d, capacity %s",
		status, reason, cl.Status.Version, online, len(sats.Items), poolsReady, poolsWanted, capacity), status == "True"
}

func waitForWebhooks(ctx context.Context, mgr ctrl.Manager) error {
	check := mgr.GetWebhookServer().StartedChecker()
	for i := 0; i < 300; i++ {
		if check(nil) == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("webhook server did not start")
}

func step(msg string, start time.Time) {
	fmt.Printf("[%5.1fs] %s\n", time.Since(start).Seconds(), msg)
}

func envInt(name string, def int) int {
	var v int
	if _, err := fmt.Sscan(os.Getenv(name), &v); err == nil && v > 0 {
		return v
	}
	return def
}

const zapErrorsOnly = zapcore.Level(2)
