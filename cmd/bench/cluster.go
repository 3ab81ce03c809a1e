package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/linstor-operator/linstor-operator/internal/kwokcluster"
)

// benchCluster is a kwokctl cluster like kwokcluster.Create makes (same binaries, same
// workdir, same owner file, so `make demo-down` removes one a killed bench left), with
// the kube-apiserver's audit log on: kwokcluster.Create takes no extra kwokctl flags.
type benchCluster struct {
	Name       string
	Kubeconfig string
	// AuditLog is where kwokctl's binary runtime has the apiserver write it:
	// <workdir>/clusters/<name>/logs/audit.log (kwokctl logs audit --name <name> prints it).
	AuditLog string
	Config   *rest.Config
	workdir  string
	kwokctl  string
}

func createCluster(ctx context.Context, root, name, policyFile string) (*benchCluster, error) {
	k8s := filepath.Join(root, "bin", "k8s", kwokcluster.KubernetesVersion)
	kwok := filepath.Join(root, "bin", "kwok", kwokcluster.KwokVersion)
	c := &benchCluster{Name: name, workdir: kwokcluster.Workdir(root), kwokctl: filepath.Join(kwok, "kwokctl")}
	c.Kubeconfig = filepath.Join(c.workdir, name+".kubeconfig")
	c.AuditLog = filepath.Join(c.workdir, "clusters", name, "logs", "audit.log")
	if err := os.MkdirAll(c.workdir, 0o755); err != nil {
		return nil, err
	}
	// A cluster of that name left by a killed run would make create fail.
	_ = c.run(ctx, "delete", "cluster", "--name", name)
	err := c.run(ctx, "create", "cluster", "--name", name, "--runtime", "binary",
		"--kubeconfig", c.Kubeconfig, "--wait", "2m",
		"--kube-audit-policy", policyFile,
		"--kube-apiserver-binary", filepath.Join(k8s, "kube-apiserver"),
		"--kube-controller-manager-binary", filepath.Join(k8s, "kube-controller-manager"),
		"--kube-scheduler-binary", filepath.Join(k8s, "kube-scheduler"),
		"--etcd-binary", filepath.Join(k8s, "etcd"),
		"--kwok-controller-binary", filepath.Join(kwok, "kwok"))
	if err != nil {
		_ = c.Delete()
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(c.workdir, name+".owner"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		_ = c.Delete()
		return nil, err
	}
	if _, err := os.Stat(c.AuditLog); err != nil {
		_ = c.Delete()
		return nil, fmt.Errorf("kwokctl did not create the audit log: %w", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		_ = c.Delete()
		return nil, err
	}
	cfg.QPS, cfg.Burst = 200, 400
	// The bench's own requests must not pass for the operator's in the audit log.
	cfg.UserAgent = "linstor-bench/" + kwokcluster.KubernetesVersion
	c.Config = cfg
	return c, nil
}

// Delete stops every process of the cluster and removes its files (the audit log too).
func (c *benchCluster) Delete() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := c.run(ctx, "delete", "cluster", "--name", c.Name)
	_ = os.Remove(c.Kubeconfig)
	_ = os.Remove(filepath.Join(c.workdir, c.Name+".owner"))
	return err
}

// Processes lists the pids of processes still running from this cluster's directory.
func (c *benchCluster) Processes() []string {
	return kwokcluster.ProcessesUnder(filepath.Join(c.workdir, "clusters", c.Name))
}

func (c *benchCluster) run(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, c.kwokctl, args...)
	cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+c.workdir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kwokctl %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return nil
}
