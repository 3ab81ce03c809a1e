package runbundle

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// SDKCommandsMarker precedes, in docs/olm.md, the fenced block of the operator-sdk
// commands a user runs with a registry. test/olm creates its namespace as that block does
// and cleans up as it does, so the documented commands are the tested ones.
const SDKCommandsMarker = "<!-- operator-sdk commands, read by internal/runbundle.ParseSDKCommands -->"

// SDKCommands is what the documented block does, in order: create the namespace, label
// it (Pod Security), run bundle into it, clean up.
type SDKCommands struct {
	Namespace       string
	NamespaceLabels map[string]string
	BundleImage     string
	// CleanupPackage is operator-sdk cleanup's argument; CleanupDeleteAll its
	// --delete-all, which defaults to true and deletes the CRDs (operator-sdk#4619), with
	// them every LinstorCluster and so LINSTOR's workloads.
	CleanupPackage   string
	CleanupDeleteAll bool
	// Lines are the block's command lines, as written.
	Lines []string
}

// ParseSDKCommands reads the block after SDKCommandsMarker. Every line must be one of the
// four commands, in order, all in one namespace; anything else is an error, so that the
// block cannot say more than the tests do.
func ParseSDKCommands(markdown []byte) (*SDKCommands, error) {
	_, after, ok := bytes.Cut(markdown, []byte(SDKCommandsMarker))
	if !ok {
		return nil, fmt.Errorf("no %q", SDKCommandsMarker)
	}
	s := bufio.NewScanner(bytes.NewReader(after))
	var lines []string
	inBlock := false
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if strings.HasPrefix(line, "```") {
			if inBlock {
				break
			}
			inBlock = true
			continue
		}
		if inBlock && line != "" && !strings.HasPrefix(line, "#") {
			lines = append(lines, line)
		} else if !inBlock && line != "" {
			return nil, fmt.Errorf("text %q between the marker and its block", line)
		}
	}
	c := &SDKCommands{Lines: lines, NamespaceLabels: map[string]string{}, CleanupDeleteAll: true}
	want := []string{"kubectl create namespace", "kubectl label namespace", "operator-sdk run bundle", "operator-sdk cleanup"}
	if len(lines) != len(want) {
		return nil, fmt.Errorf("%d command lines %q, want %q", len(lines), lines, want)
	}
	namespaces := map[string]bool{}
	for i, line := range lines {
		if !strings.HasPrefix(line, want[i]+" ") {
			return nil, fmt.Errorf("line %d %q: want %s", i+1, line, want[i])
		}
		args := strings.Fields(strings.TrimPrefix(line, want[i]))
		var positional []string
		for j := 0; j < len(args); j++ {
			a := args[j]
			switch {
			case a == "-n" || a == "--namespace":
				if j+1 == len(args) {
					return nil, fmt.Errorf("line %d: %s without a value", i+1, a)
				}
				j++
				namespaces[args[j]] = true
			case strings.HasPrefix(a, "--namespace="):
				namespaces[strings.TrimPrefix(a, "--namespace=")] = true
			case strings.HasPrefix(a, "--delete-all="):
				v, err := strconv.ParseBool(strings.TrimPrefix(a, "--delete-all="))
				if err != nil || i != 3 {
					return nil, fmt.Errorf("line %d: %s", i+1, a)
				}
				c.CleanupDeleteAll = v
			case strings.HasPrefix(a, "-"):
				return nil, fmt.Errorf("line %d: flag %s is not one the tests follow", i+1, a)
			default:
				positional = append(positional, a)
			}
		}
		switch i {
		case 0:
			if len(positional) != 1 {
				return nil, fmt.Errorf("line %d: want one namespace", i+1)
			}
			c.Namespace = positional[0]
		case 1:
			if len(positional) < 2 || positional[0] != c.Namespace {
				return nil, fmt.Errorf("line %d: want the namespace %s and its labels", i+1, c.Namespace)
			}
			for _, l := range positional[1:] {
				k, v, ok := strings.Cut(l, "=")
				if !ok {
					return nil, fmt.Errorf("line %d: label %q", i+1, l)
				}
				c.NamespaceLabels[k] = v
			}
		case 2:
			if len(positional) != 1 {
				return nil, fmt.Errorf("line %d: want one bundle image", i+1)
			}
			c.BundleImage = positional[0]
		case 3:
			if len(positional) != 1 {
				return nil, fmt.Errorf("line %d: want one package", i+1)
			}
			c.CleanupPackage = positional[0]
		}
		if i >= 2 && !namespaces[c.Namespace] {
			return nil, fmt.Errorf("line %d %q: no -n %s (operator-sdk would use the kubeconfig's namespace)", i+1, line, c.Namespace)
		}
	}
	if len(namespaces) != 1 {
		return nil, fmt.Errorf("namespaces %v, want one", namespaces)
	}
	return c, nil
}
