package satellite

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Decision is what a node gets.
type Decision struct {
	// Selected is false when the node gets no satellite (Spec is then empty).
	Selected bool
	Spec     linstorv1.LinstorSatelliteSpec
	// Applied names the configurations that select the node, in name order.
	Applied []string
	// Skipped says, per configuration, which properties its expandFrom generated that
	// were left out, and why.
	Skipped map[string][]string
}

// maxPatches is the API's limit on LinstorSatellite spec.patches.
const maxPatches = 256

// Desired decides whether node gets a satellite (Selected) and its spec.
func Desired(cluster *linstorv1.LinstorCluster, configs []linstorv1.LinstorSatelliteConfiguration, node *corev1.Node) (Decision, error) {
	if ok, err := Selected(cluster, node); !ok || err != nil {
		return Decision{}, err
	}
	sorted := append([]linstorv1.LinstorSatelliteConfiguration(nil), configs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })

	d := Decision{Selected: true}
	spec := linstorv1.LinstorSatelliteSpec{ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}, DeletionPolicy: linstorv1.DeletionRetain}
	if cluster.Spec.Satellite != nil {
		spec.DRBDModuleLoader = cluster.Spec.Satellite.DRBDModuleLoader
		spec.Patches = append(spec.Patches, cluster.Spec.Satellite.Patches...)
	}
	var pools []linstorv1.StoragePool
	var nics []linstorv1.NetInterface
	props := map[string]linstorv1.NodeProperty{}
	owner := map[string]string{} // property name -> configuration it comes from
	var patch []byte
	for i := range sorted {
		cfg := &sorted[i]
		if ok, err := Applies(cfg, node); err != nil {
			// Keep the node's satellite as it is rather than build it without this
			// configuration's pools and properties.
			return Decision{}, err
		} else if !ok {
			continue
		}
		d.Applied = append(d.Applied, cfg.Name)
		pools = mergeByName(pools, cfg.Spec.StoragePools, func(p linstorv1.StoragePool) string { return p.Name })
		if activeNIC(cfg.Spec.NetInterfaces) != "" {
			// One interface carries the satellite connection. When configurations
			// disagree, the last one by name wins, as for every other field; two active
			// interfaces would make LINSTOR switch between them on every pass.
			for i := range nics {
				nics[i].Active = false
			}
		}
		nics = mergeByName(nics, cfg.Spec.NetInterfaces, func(n linstorv1.NetInterface) string { return n.Name })
		for _, p := range cfg.Spec.Properties {
			props[p.Name], owner[p.Name] = p, cfg.Name
		}
		if cfg.Spec.DeletionPolicy != "" {
			spec.DeletionPolicy = cfg.Spec.DeletionPolicy
		}
		if cfg.Spec.MaxConcurrentEvacuations != nil {
			spec.MaxConcurrentEvacuations = cfg.Spec.MaxConcurrentEvacuations
		}
		if cfg.Spec.DRBDModuleLoader != "" {
			spec.DRBDModuleLoader = cfg.Spec.DRBDModuleLoader
		}
		if len(cfg.Spec.IPFamilies) > 0 {
			spec.IPFamilies = append([]linstorv1.IPFamily(nil), cfg.Spec.IPFamilies...)
		}
		spec.Patches = append(spec.Patches, cfg.Spec.Patches...)
		if cfg.Spec.PodTemplate != nil && len(cfg.Spec.PodTemplate.Raw) > 0 {
			var err error
			if patch, err = mergePatches(patch, cfg.Spec.PodTemplate.Raw); err != nil {
				return Decision{Selected: true, Applied: d.Applied}, fmt.Errorf("LinstorSatelliteConfiguration %s: spec.podTemplate: %w", cfg.Name, err)
			}
		}
	}
	if len(spec.Patches) > maxPatches {
		// The LinstorSatellite would be refused; say which objects add up to it.
		return Decision{Selected: true, Applied: d.Applied}, fmt.Errorf("spec.satellite.patches of the LinstorCluster and spec.patches of LinstorSatelliteConfigurations %s add up to %d patches, more than the %d a LinstorSatellite holds",
			strings.Join(d.Applied, ", "), len(spec.Patches), maxPatches)
	}
	spec.StoragePools, spec.NetInterfaces = pools, nics
	spec.Properties, d.Skipped = resolveAll(props, owner, node)
	if patch != nil {
		spec.PodTemplate = &runtime.RawExtension{Raw: patch}
	}
	d.Spec = spec
	return d, nil
}

// resolveAll resolves the merged properties against the node, sorted by name. A name
// set by a property itself (a literal or valueFrom) wins over the same name generated
// by an expandFrom: the explicit one is what the admin wrote for that name.
func resolveAll(merged map[string]linstorv1.NodeProperty, owner map[string]string, node *corev1.Node) ([]linstorv1.Property, map[string][]string) {
	out := map[string]string{}
	var skipped map[string][]string
	for name, p := range merged {
		if p.ExpandFrom != nil {
			continue
		}
		if v, ok := resolve(p, node); ok {
			out[name] = v
		}
	}
	explicit := func(name string) bool {
		p, ok := merged[name]
		return ok && p.ExpandFrom == nil // named even when its valueFrom is missing on this node
	}
	// Expansions in name order, so two expansions generating the same name resolve the
	// same way on every pass: the first by property name keeps it.
	names := make([]string, 0, len(merged))
	for n := range merged {
		names = append(names, n)
	}
	sort.Strings(names)
	generatedBy := map[string]string{}
	for _, n := range names {
		p := merged[n]
		if p.ExpandFrom == nil {
			continue
		}
		generated, why := expand(p, node)
		for _, g := range generated {
			if _, taken := out[g.Name]; taken || explicit(g.Name) {
				if other, byExpansion := generatedBy[g.Name]; byExpansion {
					why = append(why, fmt.Sprintf("property %q is also generated by the expandFrom of property %s, which comes first by name and is kept", g.Name, other))
				}
				continue
			}
			out[g.Name], generatedBy[g.Name] = g.Value, n
		}
		if len(why) > 0 {
			if skipped == nil {
				skipped = map[string][]string{}
			}
			skipped[owner[n]] = append(skipped[owner[n]], why...)
		}
	}
	if len(out) == 0 {
		return nil, skipped
	}
	result := make([]linstorv1.Property, 0, len(out))
	for n, v := range out {
		result = append(result, linstorv1.Property{Name: n, Value: v})
	}
	sort.Slice(result, func(i, j int) bool { return result[i].Name < result[j].Name })
	return result, skipped
}

func mergeByName[T any](base, more []T, name func(T) string) []T {
	for _, item := range more {
		replaced := false
		for i := range base {
			if name(base[i]) == name(item) {
				base[i], replaced = item, true
			}
		}
		if !replaced {
			base = append(base, item)
		}
	}
	return base
}

func mergePatches(prev, next []byte) ([]byte, error) {
	if prev == nil {
		prev = []byte("{}")
	}
	return strategicpatch.StrategicMergePatch(prev, next, corev1.PodTemplateSpec{})
}

var fieldRef = regexp.MustCompile(`^metadata\.(name|uid|labels\['([^']+)'\]|annotations\['([^']+)'\])$`)

func resolve(p linstorv1.NodeProperty, node *corev1.Node) (string, bool) {
	if p.ValueFrom == nil {
		return p.Value, true
	}
	m := fieldRef.FindStringSubmatch(p.ValueFrom.NodeFieldRef)
	switch {
	case m == nil:
		return "", false
	case m[1] == "name":
		return node.Name, true
	case m[1] == "uid":
		return string(node.UID), true
	case m[2] != "":
		v, ok := node.Labels[m[2]]
		return v, ok
	default:
		v, ok := node.Annotations[m[3]]
		return v, ok
	}
}

func activeNIC(nics []linstorv1.NetInterface) string {
	for _, n := range nics {
		if n.Active {
			return n.Name
		}
	}
	return ""
}

// ActiveConflicts says, per configuration, when its active net interface is overridden
// on some of the nodes it applies to by a configuration later in name order.
func ActiveConflicts(cluster *linstorv1.LinstorCluster, configs []linstorv1.LinstorSatelliteConfiguration, nodes []corev1.Node) map[string]string {
	sorted := append([]linstorv1.LinstorSatelliteConfiguration(nil), configs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	out := map[string]string{}
	for i := range nodes {
		node := &nodes[i]
		if ok, err := Selected(cluster, node); !ok || err != nil {
			continue
		}
		winner, winnerNIC := "", ""
		var losers []string
		for i := range sorted {
			cfg := &sorted[i]
			if ok, _ := Applies(cfg, node); !ok {
				continue
			}
			if nic := activeNIC(cfg.Spec.NetInterfaces); nic != "" {
				if winner != "" {
					losers = append(losers, winner)
				}
				winner, winnerNIC = cfg.Name, nic
			}
		}
		for _, l := range losers {
			if _, seen := out[l]; !seen {
				out[l] = fmt.Sprintf("its active net interface is overridden on node %s (and maybe others) by %s of LinstorSatelliteConfiguration %s, which comes later by name", node.Name, winnerNIC, winner)
			}
		}
	}
	return out
}
