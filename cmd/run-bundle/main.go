// Command run-bundle installs a bundle directory through OLM in the cluster in KUBECONFIG,
// as `operator-sdk run bundle` does with a bundle image, and removes that install again
// (make run-bundle, make cleanup-bundle; see docs/olm.md):
//
//	run-bundle install -bundle bundle -namespace linstor [-catalog catalog] [-channel C] [-approval Manual] ...
//	run-bundle cleanup -namespace linstor
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

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/linstor-operator/linstor-operator/internal/runbundle"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "run-bundle:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 || (args[0] != "install" && args[0] != "cleanup") {
		return fmt.Errorf("usage: run-bundle install|cleanup [flags]")
	}
	fs := flag.NewFlagSet("run-bundle "+args[0], flag.ExitOnError)
	opts := runbundle.Options{Out: os.Stdout}
	fs.StringVar(&opts.Namespace, "namespace", "linstor", "Install namespace (created if missing).")
	if args[0] == "install" {
		fs.StringVar(&opts.BundleDir, "bundle", "bundle", "The registry+v1 bundle directory.")
		fs.StringVar(&opts.CatalogDir, "catalog", "", "A file-based catalog to serve instead of one of the bundle alone (catalog/: install an earlier release and upgrade along its channels).")
		fs.StringVar(&opts.Channel, "channel", "", "Channel to subscribe to (default: the bundle's default channel).")
		fs.StringVar(&opts.Approval, "approval", "Automatic", "InstallPlan approval: Automatic or Manual (run-bundle approves the bundle's InstallPlan).")
		fs.StringVar(&opts.CatalogAddress, "catalog-address", "127.0.0.1:50051", "host:port where OLM reaches the catalog; opm serves on its port.")
		fs.StringVar(&opts.Opm, "opm", "", "The opm binary (make opm).")
		fs.DurationVar(&opts.Timeout, "timeout", 5*time.Minute, "How long to wait for the CSV to succeed.")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	// The catalog, opm's pid and log live beside the other local state, per namespace.
	opts.StateDir = filepath.Join("bin", "run-bundle", opts.Namespace)
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("the cluster in KUBECONFIG: %w", err)
	}
	opts.Config = cfg

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if args[0] == "cleanup" {
		return runbundle.Cleanup(ctx, opts)
	}
	_, err = runbundle.Install(ctx, opts)
	return err
}
