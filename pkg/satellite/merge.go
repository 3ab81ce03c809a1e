package satellite

import (
	"fmt"
	"regexp"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Selects reports whether a node selector (empty selects all) matches the node.
func Selects(selector map[string]string, node *corev1.Node) bool {
	return labels.SelectorFromSet(selector).Matches(labels.Set(node.Labels))
}

// Desired returns the satellite spec for node, and false when the node gets none.
func Desired(cluster *linstorv1.LinstorCluster, configs []linstorv1.LinstorSatelliteConfiguration, node *corev1.Node) (linstorv1.LinstorSatelliteSpec, []string, error) {
	if !Selects(cluster.Spec.NodeSelector, node) {
		return linstorv1.LinstorSatelliteSpec{}, nil, nil
	}
	sorted := append([]linstorv1.LinstorSatelliteConfiguration(nil), configs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })

	spec := linstorv1.LinstorSatelliteSpec{ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}, DeletionPolicy: linstorv1.DeletionRetain}
	if cluster.Spec.Satellite != nil {
		spec.DRBDModuleLoader = cluster.Spec.Satellite.DRBDModuleLoader
	}
	var pools []linstorv1.StoragePool
	var nics []linstorv1.NetInterface
	props := map[string]linstorv1.NodeProperty{}
	var patch []byte
	var applied []string
	for _, cfg := range sorted {
		if cfg.DeletionTimestamp != nil || !Selects(cfg.Spec.NodeSelector, node) {
			continue
		}
		applied = append(applied, cfg.Name)
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
			props[p.Name] = p
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
		if cfg.Spec.PodTemplate != nil && len(cfg.Spec.PodTemplate.Raw) > 0 {
			var err error
			if patch, err = mergePatches(patch, cfg.Spec.PodTemplate.Raw); err != nil {
				return spec, nil, fmt.Errorf("LinstorSatelliteConfiguration %s: spec.podTemplate: %w", cfg.Name, err)
			}
		}
	}
	spec.StoragePools, spec.NetInterfaces = pools, nics
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if v, ok := resolve(props[n], node); ok {
			spec.Properties = append(spec.Properties, linstorv1.Property{Name: n, Value: v})
		}
	}
	if patch != nil {
		spec.PodTemplate = &runtime.RawExtension{Raw: patch}
	}
	return spec, applied, nil
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
		if !Selects(cluster.Spec.NodeSelector, node) {
			continue
		}
		winner, winnerNIC := "", ""
		var losers []string
		for _, cfg := range sorted {
			if cfg.DeletionTimestamp != nil || !Selects(cfg.Spec.NodeSelector, node) {
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
