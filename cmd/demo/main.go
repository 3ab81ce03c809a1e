// Command demo runs the operator end to end on this machine: a kwok-simulated cluster
// (real etcd, kube-apiserver, kube-controller-manager and kube-scheduler; kwok plays the
// kubelets) with N storage nodes, the LINSTOR REST emulator following the cluster's pods,
// the operator (webhooks and controllers), and the samples. It prints progress until the
// LinstorCluster is Available and keeps running until Ctrl-C, which stops everything.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	ctrl "sigs.k8s.io/controller-runtime"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/kwokcluster"
	"github.com/linstor-operator/linstor-operator/internal/sim"
)

const (
	namespace = "linstor"
	// clusterName is the kwok cluster; `make demo-down` removes it after a killed run.
	clusterName = "linstor-demo"
)

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
	// stops the cluster.
	signal.Ignore(syscall.SIGPIPE)
	start := time.Now()
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	// The operator's log goes to a file: the terminal shows the progress.
	logPath := filepath.Join(root, "bin", "demo-operator.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	ctrl.SetLogger(zap.New(zap.WriteTo(logFile), zap.Level(zapcore.InfoLevel)))
	step("building what is missing and starting the kwok cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)", start)
	env, err := sim.Start(ctx, sim.Options{Root: root, Name: clusterName, Namespace: namespace, LinstorPoll: 5 * time.Second})
	if err != nil {
		return err
	}
	defer func() {
		step("stopping the operator and the cluster", start)
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "demo:", err)
		}
	}()
	step("starting the operator (LINSTOR emulator at "+env.LinstorURL+", coupled to the cluster's pods)", start)
	if err := env.StartOperator(); err != nil {
		return err
	}
	c := env.Client
	step(fmt.Sprintf("creating %d kwok nodes", nodeCount), start)
	if err := kwokcluster.AddNodes(ctx, c, "storage", 0, nodeCount); err != nil {
		return err
	}
	step("applying config/samples", start)
	if err := sim.ApplySamples(ctx, c, root, namespace); err != nil {
		return err
	}
	fmt.Printf("\n  %s --kubeconfig %s get linstorclusters,linstorsatellites,pods -A\n  operator log: %s\n\n", kubectl(root), env.Cluster.Kubeconfig, logPath)

	announced, last, lastAt := false, "", time.Time{}
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Println()
			return nil
		case err := <-env.OperatorDone():
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
				fmt.Printf("[%5.1fs] LinstorCluster is Available with %d nodes. Press Ctrl-C to stop.\n", time.Since(start).Seconds(), nodeCount)
				if os.Getenv("DEMO_EXIT_WHEN_AVAILABLE") != "" {
					return nil
				}
			}
		}
	}
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

// kubectl is the kubectl `make demo` built from the cluster's Kubernetes source, by
// absolute path, so that the printed command works verbatim from any directory on a
// machine without one.
func kubectl(root string) string {
	path := filepath.Join(root, "bin", "k8s", kwokcluster.KubernetesVersion, "kubectl")
	if _, err := os.Stat(path); err != nil {
		return "kubectl" // run without make: `make kubectl` builds it
	}
	return path
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
