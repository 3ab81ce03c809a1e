package rehearsal

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Main runs `manager rehearsal prepare|load …` with args after "rehearsal" and returns
// the exit code. Errors go to stderr, which the Job's termination message quotes
// (FallbackToLogsOnError).
func Main(args []string, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: manager rehearsal prepare|load [flags]")
		return 2
	}
	fs := flag.NewFlagSet("rehearsal "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	var err error
	switch args[0] {
	case "prepare":
		dir := fs.String("dir", "/scratch", "the scratch volume")
		server := fs.String("server", "https://127.0.0.1:6443", "the scratch API server's URL")
		if fs.Parse(args[1:]) != nil {
			return 2
		}
		err = Prepare(*dir, *server)
	case "load":
		backup := fs.String("backup", "", "the LinstorBackup to copy")
		namespace := fs.String("namespace", "", "its namespace")
		kubeconfig := fs.String("kubeconfig", "/scratch/kubeconfig", "the scratch API's kubeconfig")
		if fs.Parse(args[1:]) != nil || *backup == "" || *namespace == "" {
			fmt.Fprintln(stderr, "load needs --backup and --namespace")
			return 2
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		err = load(ctx, *backup, *namespace, *kubeconfig)
	default:
		fmt.Fprintf(stderr, "unknown rehearsal step %q\n", args[0])
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

func load(ctx context.Context, backup, namespace, kubeconfig string) error {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, linstorv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	// The cluster's API with the pod's projected token: it may only read LinstorBackups
	// and Secrets of this namespace (config/rbac rehearsal).
	clusterCfg, err := rest.InClusterConfig()
	if err != nil {
		return fmt.Errorf("the cluster's API: %w", err)
	}
	source, err := client.New(clusterCfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	// An empty path would fall back to the in-cluster configuration: the live API.
	if kubeconfig == "" {
		return fmt.Errorf("--kubeconfig names no scratch API: refusing to restore anywhere else")
	}
	scratchCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("the scratch API: %w", err)
	}
	if scratchCfg.Host == clusterCfg.Host {
		return fmt.Errorf("the scratch API %s is the cluster's API: refusing to restore the copy over the live database", scratchCfg.Host)
	}
	target, err := client.New(scratchCfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	return Load(ctx, source, target, namespace, backup)
}
