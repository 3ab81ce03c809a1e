package v1alpha1

import (
	"sort"

	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// propertiesFromMap sorts by name so the hub list is deterministic.
func propertiesFromMap(m map[string]string) []linstorv1.Property {
	if m == nil {
		return nil
	}
	out := make([]linstorv1.Property, 0, len(m))
	for k, v := range m {
		out = append(out, linstorv1.Property{Name: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func propertiesToMap(props []linstorv1.Property) map[string]string {
	if props == nil {
		return nil
	}
	out := make(map[string]string, len(props))
	for _, p := range props {
		out[p.Name] = p.Value
	}
	return out
}

func nodePropertiesFromMap(m map[string]string) []linstorv1.NodeProperty {
	props := propertiesFromMap(m)
	if props == nil {
		return nil
	}
	out := make([]linstorv1.NodeProperty, len(props))
	for i, p := range props {
		out[i] = linstorv1.NodeProperty{Name: p.Name, Value: p.Value}
	}
	return out
}

// hubOnly: v1alpha1 has literal node properties only; a value taken from the node
// (valueFrom, expandFrom) cannot be expressed there.
func hubOnly(p *linstorv1.NodeProperty) bool { return p.ValueFrom != nil || p.ExpandFrom != nil }

// nodePropertiesToMap keeps literal values; hub-only properties are left out rather
// than shown as literals with an empty value.
func nodePropertiesToMap(props []linstorv1.NodeProperty) map[string]string {
	if props == nil {
		return nil
	}
	out := make(map[string]string, len(props))
	for _, p := range props {
		if !hubOnly(&p) {
			out[p.Name] = p.Value
		}
	}
	return out
}

// overlayNodeProperties takes the literal properties from the spoke and keeps the
// hub-only properties of base, except where the spoke now sets a literal of the same
// name (the list is keyed by name: the edit wins).
func overlayNodeProperties(base, from []linstorv1.NodeProperty) []linstorv1.NodeProperty {
	out := append([]linstorv1.NodeProperty(nil), from...)
	literal := map[string]bool{}
	for _, p := range from {
		literal[p.Name] = true
	}
	for _, p := range base {
		if hubOnly(&p) && !literal[p.Name] {
			out = append(out, p)
		}
	}
	return out
}

func hostDevices(paths []string) *linstorv1.StoragePoolSource {
	if len(paths) == 0 {
		return nil
	}
	return &linstorv1.StoragePoolSource{HostDevices: append([]string(nil), paths...)}
}

func devicePaths(src *linstorv1.StoragePoolSource) []string {
	if src == nil {
		return nil
	}
	return append([]string(nil), src.HostDevices...)
}

// poolsToHub lists pools in the order lvm, lvm-thin, zfs.
func poolsToHub(in *StoragePools) []linstorv1.StoragePool {
	var out []linstorv1.StoragePool
	for _, p := range in.LvmPools {
		out = append(out, linstorv1.StoragePool{Name: p.Name, LvmPool: &linstorv1.LvmPool{VolumeGroup: p.VolumeGroup}, Source: hostDevices(p.DevicePaths)})
	}
	for _, p := range in.LvmThinPools {
		out = append(out, linstorv1.StoragePool{Name: p.Name, LvmThinPool: &linstorv1.LvmThinPool{VolumeGroup: p.VolumeGroup, ThinPool: p.ThinPool}, Source: hostDevices(p.DevicePaths)})
	}
	for _, p := range in.ZfsPools {
		out = append(out, linstorv1.StoragePool{Name: p.Name, ZfsPool: &linstorv1.ZfsPool{ZPool: p.ZPool}, Source: hostDevices(p.DevicePaths)})
	}
	return out
}

// poolsToSpoke groups the pool types v1alpha1 knows; others need the conversion annotation.
func poolsToSpoke(in []linstorv1.StoragePool) StoragePools {
	var out StoragePools
	for _, p := range in {
		if !spokeExpressible(&p) {
			continue
		}
		switch {
		case p.LvmPool != nil:
			out.LvmPools = append(out.LvmPools, LvmPool{Name: p.Name, VolumeGroup: p.LvmPool.VolumeGroup, DevicePaths: devicePaths(p.Source)})
		case p.LvmThinPool != nil:
			out.LvmThinPools = append(out.LvmThinPools, LvmThinPool{Name: p.Name, VolumeGroup: p.LvmThinPool.VolumeGroup, ThinPool: p.LvmThinPool.ThinPool, DevicePaths: devicePaths(p.Source)})
		case p.ZfsPool != nil:
			out.ZfsPools = append(out.ZfsPools, ZfsPool{Name: p.Name, ZPool: p.ZfsPool.ZPool, DevicePaths: devicePaths(p.Source)})
		}
	}
	return out
}

// spokeExpressible: exactly one of the v1alpha1 pool types is set, made from listed
// devices if any (v1alpha1 has no disk discovery).
func spokeExpressible(p *linstorv1.StoragePool) bool {
	if p.Source != nil && p.Source.Discover != nil {
		return false
	}
	n := 0
	for _, set := range []bool{p.LvmPool != nil, p.LvmThinPool != nil, p.ZfsPool != nil, p.ZfsThinPool != nil, p.FilePool != nil, p.FileThinPool != nil} {
		if set {
			n++
		}
	}
	return n == 1 && (p.LvmPool != nil || p.LvmThinPool != nil || p.ZfsPool != nil)
}

// overlayPools takes the pools v1alpha1 expresses from the spoke, keeps hub-only
// details (properties) of pools with the same name and type, and keeps the pools
// v1alpha1 cannot express.
func overlayPools(base, from []linstorv1.StoragePool) []linstorv1.StoragePool {
	byName := map[string]linstorv1.StoragePool{}
	for _, p := range base {
		byName[p.Name] = p
	}
	var out []linstorv1.StoragePool
	for _, p := range from {
		if old, ok := byName[p.Name]; ok && sameType(&old, &p) {
			p.Properties = old.Properties
		}
		out = append(out, p)
	}
	for _, p := range base {
		if !spokeExpressible(&p) {
			out = append(out, p)
		}
	}
	return out
}

func sameType(a, b *linstorv1.StoragePool) bool {
	return (a.LvmPool != nil) == (b.LvmPool != nil) && (a.LvmThinPool != nil) == (b.LvmThinPool != nil) &&
		(a.ZfsPool != nil) == (b.ZfsPool != nil)
}

func disabled(enabled *bool) bool { return enabled != nil && !*enabled }

// enabledFrom maps a v1alpha1 "disable" flag: false leaves the hub default.
func enabledFrom(disable bool) *bool {
	if disable {
		return ptr.To(false)
	}
	return nil
}

// overlayEnabled applies the spoke's disable flag without touching an explicit hub "true".
func overlayEnabled(base *bool, disable bool) *bool {
	if disable {
		return ptr.To(false)
	}
	if disabled(base) {
		return nil
	}
	return base
}
