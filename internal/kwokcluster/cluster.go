// Package kwokcluster runs a simulated Kubernetes cluster on this machine with kwokctl's
// binary runtime: a real etcd, kube-apiserver, kube-controller-manager (garbage
// collection, Deployments, DaemonSets) and kube-scheduler, plus the kwok controller,
// which plays the kubelets: nodes are Ready and scheduled pods become Running, though
// nothing runs inside them. Every binary is built from source into bin/ by the hack/
// scripts, since nothing can be downloaded at run time.
package kwokcluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Versions of the simulated cluster.
const (
	KubernetesVersion = "v1.34.2"
	KwokVersion       = "v0.8.0"
)

// Cluster is a running kwokctl cluster.
type Cluster struct {
	Name string
	// Kubeconfig is the path of an admin kubeconfig for the cluster.
	Kubeconfig string
	Config     *rest.Config
	workdir    string
	kwokctl    string
}

// BuildBinaries builds whatever is missing of the control plane and kwok (cached).
func BuildBinaries(ctx context.Context, root string) error {
	for _, cmd := range [][]string{
		{filepath.Join(root, "hack", "build-k8s-binaries.sh"), "kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler"},
		{filepath.Join(root, "hack", "build-kwok.sh")},
	} {
		c := exec.CommandContext(ctx, cmd[0], cmd[1:]...)
		c.Env = append(os.Environ(), "K8S_VERSION="+KubernetesVersion, "KWOK_VERSION="+KwokVersion)
		c.Stdout, c.Stderr = io.Discard, os.Stderr // stdout only repeats the output directory
		if err := c.Run(); err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(cmd[0]), err)
		}
	}
	return nil
}

// Workdir is where kwokctl keeps the clusters of this repository.
func Workdir(root string) string { return filepath.Join(root, "bin", "kwok-clusters") }

// Create starts a cluster named name; extra are more kwokctl create flags. The binaries
// must have been built.
func Create(ctx context.Context, root, name string, extra ...string) (*Cluster, error) {
	k8s := filepath.Join(root, "bin", "k8s", KubernetesVersion)
	kwok := filepath.Join(root, "bin", "kwok", KwokVersion)
	c := &Cluster{Name: name, workdir: Workdir(root), kwokctl: filepath.Join(kwok, "kwokctl")}
	c.Kubeconfig = filepath.Join(c.workdir, name+".kubeconfig")
	if err := os.MkdirAll(c.workdir, 0o755); err != nil {
		return nil, err
	}
	// A cluster of that name left by a killed run would make create fail.
	_ = c.run(ctx, "delete", "cluster", "--name", name)
	args := append([]string{"create", "cluster", "--name", name, "--runtime", "binary",
		"--kubeconfig", c.Kubeconfig, "--wait", "2m",
		"--kube-apiserver-binary", filepath.Join(k8s, "kube-apiserver"),
		"--kube-controller-manager-binary", filepath.Join(k8s, "kube-controller-manager"),
		"--kube-scheduler-binary", filepath.Join(k8s, "kube-scheduler"),
		"--etcd-binary", filepath.Join(k8s, "etcd"),
		"--kwok-controller-binary", filepath.Join(kwok, "kwok"),
		// No job controller: the LINSTOR emulator plays the Jobs (the upgrade rehearsal
		// runs LINSTOR's migration tool), which kwok would otherwise complete on its own
		// whatever LINSTOR would have answered.
		"--extra-args", "kube-controller-manager=controllers=*,-job-controller"}, extra...)
	err := c.run(ctx, args...)
	if err != nil {
		_ = c.Delete()
		return nil, err
	}
	// `make demo-down` deletes clusters whose owner is gone.
	if err := os.WriteFile(c.ownerFile(), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		_ = c.Delete()
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		_ = c.Delete()
		return nil, err
	}
	// Many nodes and satellites at once: do not throttle the client side.
	cfg.QPS, cfg.Burst = 200, 400
	c.Config = cfg
	return c, nil
}

// Dir is where kwokctl keeps the cluster's files (logs/ holds the components' logs and,
// with --kube-audit-policy, the apiserver's audit.log).
func (c *Cluster) Dir() string { return filepath.Join(c.workdir, "clusters", c.Name) }

// Delete stops every process of the cluster and removes its files.
func (c *Cluster) Delete() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := c.run(ctx, "delete", "cluster", "--name", c.Name)
	_ = os.Remove(c.Kubeconfig)
	_ = os.Remove(c.ownerFile())
	return err
}

func (c *Cluster) ownerFile() string { return filepath.Join(c.workdir, c.Name+".owner") }

// Processes lists the pids of processes still running from this cluster's directory.
func (c *Cluster) Processes() []string {
	return ProcessesUnder(c.Dir())
}

// ProcessesUnder lists pids whose command line mentions dir.
func ProcessesUnder(dir string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(dir)) {
			out = append(out, e.Name())
		}
	}
	return out
}

func (c *Cluster) run(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, c.kwokctl, args...)
	cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+c.workdir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kwokctl %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return nil
}

// osImages make the simulated fleet look like a real, mixed one (and exercise the
// DRBD loader selection).
var osImages = []string{"Ubuntu 24.04.1 LTS", "Red Hat Enterprise Linux 9.4 (Plow)", "Debian GNU/Linux 12 (bookworm)", "Ubuntu 22.04.5 LTS"}

// Node returns the i-th simulated node: labels and status as a kubelet would report
// them, and a unique InternalIP. kwok keeps these and marks the node Ready.
func Node(name string, i int) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"kubernetes.io/hostname":           name,
		"kubernetes.io/os":                 "linux",
		"kubernetes.io/arch":               "amd64",
		"node.kubernetes.io/instance-type": "kwok.storage",
		"topology.kubernetes.io/zone":      fmt.Sprintf("zone-%c", 'a'+i%3),
		"type":                             "kwok",
		"node-role.kubernetes.io/storage":  "",
	}}}
	n.Status.NodeInfo = corev1.NodeSystemInfo{OSImage: osImages[i%len(osImages)], KernelVersion: "6.8.0-48-generic", Architecture: "amd64", OperatingSystem: "linux"}
	n.Status.Addresses = []corev1.NodeAddress{
		// Inside the samples' data network 10.0.0.0/16.
		{Type: corev1.NodeInternalIP, Address: NodeIP(i)},
		{Type: corev1.NodeHostName, Address: name},
	}
	return n
}

// nodeIPsPerSubnet: node i gets host .10 to .249 of the i/nodeIPsPerSubnet-th /24,
// leaving the low and high ends of each /24 (gateways, broadcast) alone.
const nodeIPsPerSubnet = 240

// NodeIP is the InternalIP of the i-th simulated node, unique for i from 0 to
// 256*nodeIPsPerSubnet-1 (61,439), all inside 10.0.0.0/16.
func NodeIP(i int) string {
	return fmt.Sprintf("10.0.%d.%d", i/nodeIPsPerSubnet, i%nodeIPsPerSubnet+10)
}

// AddNodes creates the simulated nodes name-<from> … name-<to-1>.
func AddNodes(ctx context.Context, c client.Client, prefix string, from, to int) error {
	for i := from; i < to; i++ {
		// A Node's status is kept on create, as a kubelet registering itself would send it.
		if err := c.Create(ctx, Node(fmt.Sprintf("%s-%d", prefix, i), i)); err != nil {
			return err
		}
	}
	return nil
}
