package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"sigs.k8s.io/yaml"
)

// bundleCSV is the ClusterServiceVersion OLM installs the operator from.
const bundleCSV = "bundle/manifests/linstor-operator.clusterserviceversion.yaml"

// podMemoryLimit is the memory limit of the manager container in the bundle's
// Deployment: the operator under OLM runs in a cgroup of that size, and sets its Go
// memory limit from it (main.go).
func podMemoryLimit(root string) (int64, error) {
	raw, err := os.ReadFile(filepath.Join(root, bundleCSV))
	if err != nil {
		return 0, err
	}
	var csv operatorsv1alpha1.ClusterServiceVersion
	if err := yaml.Unmarshal(raw, &csv); err != nil {
		return 0, fmt.Errorf("%s: %w", bundleCSV, err)
	}
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name != "manager" {
				continue
			}
			if q, ok := c.Resources.Limits["memory"]; ok {
				return q.Value(), nil
			}
			return 0, fmt.Errorf("%s: the manager container has no memory limit", bundleCSV)
		}
	}
	return 0, fmt.Errorf("%s: no manager container", bundleCSV)
}

// memoryCgroup is a memory cgroup of the bench's own, limited as the operator's pod
// is: the kernel enforces the limit (an operator over it is OOM-killed, and the bench
// says so), and the operator finds it where a container finds its own.
type memoryCgroup struct {
	dir string
	// v1: cgroup v1's memory controller (memory.limit_in_bytes, memory.oom_control).
	v1 bool
}

// newMemoryCgroup creates a child of the bench's memory cgroup limited to limit bytes.
func newMemoryCgroup(name string, limit int64) (*memoryCgroup, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var v1Path, v2Path string
	hasV2 := false
	for s := bufio.NewScanner(f); s.Scan(); {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(s.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2Path, hasV2 = parts[2], true
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" {
				v1Path = parts[2]
			}
		}
	}
	var cg *memoryCgroup
	switch {
	case v1Path != "":
		cg = &memoryCgroup{dir: filepath.Join("/sys/fs/cgroup/memory", v1Path, name), v1: true}
	case hasV2:
		cg = &memoryCgroup{dir: filepath.Join("/sys/fs/cgroup", v2Path, name)}
	default:
		return nil, errors.New("no memory cgroup in /proc/self/cgroup")
	}
	if err := os.Mkdir(cg.dir, 0o755); err != nil && !os.IsExist(err) {
		return nil, err
	}
	file, value := "memory.max", fmt.Sprint(limit)
	if cg.v1 {
		file = "memory.limit_in_bytes"
	}
	if err := os.WriteFile(filepath.Join(cg.dir, file), []byte(value), 0o644); err != nil {
		_ = cg.remove()
		return nil, fmt.Errorf("limiting %s: %w", cg.dir, err)
	}
	return cg, nil
}

// wrap runs binary inside the cgroup from its first instruction: a shell moves itself
// in, then becomes the binary (exec keeps the pid), so the operator reads its limit at
// start as in a container.
func (cg *memoryCgroup) wrap(binary string, args []string) (string, []string) {
	script := fmt.Sprintf(`echo $$ > %q && exec "$0" "$@"`, filepath.Join(cg.dir, "cgroup.procs"))
	return "/bin/sh", append([]string{"-c", script, binary}, args...)
}

// oomKills is how often the kernel killed a process of the cgroup for memory.
func (cg *memoryCgroup) oomKills() (int, error) {
	file, key := "memory.events", "oom_kill"
	if cg.v1 {
		file = "memory.oom_control"
	}
	raw, err := os.ReadFile(filepath.Join(cg.dir, file))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		var n int
		if _, err := fmt.Sscanf(line, key+" %d", &n); err == nil {
			return n, nil
		}
	}
	return 0, nil // older kernels do not count them
}

func (cg *memoryCgroup) remove() error { return os.Remove(cg.dir) }
