package v1alpha1

import (
	"regexp"
	"strconv"
	"strings"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// The admission webhook checks a v1alpha1 write on the object converted to v1, so its
// errors name v1 fields. These functions name, for a v1 field path, the v1alpha1 field
// the user wrote the value in. ok is false for a field v1alpha1 cannot express: its
// value came from the conversion annotation.

// ClusterFieldPath maps a path of a converted LinstorCluster.
func ClusterFieldPath(hub *linstorv1.LinstorClusterSpec, path string) (string, bool) {
	t := tokens(path)
	if len(t) < 2 || t[0] != "spec" {
		return "", false
	}
	switch t[1] {
	case "nodeSelector":
		return path, true
	case "properties":
		if len(t) > 2 {
			if p, ok := at(hub.Properties, t[2]); ok {
				return mapKey("spec.controllerProperties", p.Name), true
			}
		}
		return "spec.controllerProperties", true
	case "passphraseSecretRef":
		return "spec.luksSecret", true
	}
	leaf := strings.Join(t[1:], ".")
	switch leaf {
	case "controller.image":
		return "spec.controllerImage", true
	case "controller.replicas":
		return "spec.controllerReplicas", true
	case "satellite.image":
		return "spec.satelliteImage", true
	case "csi.image":
		return "spec.csiImage", true
	case "csi.enabled":
		return "spec.disableCSI", true
	case "highAvailabilityController.image":
		return "spec.haControllerImage", true
	case "highAvailabilityController.enabled":
		return "spec.disableHAController", true
	case "database.type", "database.connectionURL":
		return "spec.dbConnectionURL", true
	case "database":
		// The database's object rules tie the URL to the certificate: name the
		// certificate when it is set where v1 does not allow it.
		if db := hub.Database; db != nil && db.ClientCertificateSecretRef != nil && db.Type != linstorv1.DatabaseExternal {
			return "spec.dbCertSecret", true
		}
		return "spec.dbConnectionURL", true
	}
	if strings.HasPrefix(leaf, "database.clientCertificateSecretRef") {
		return "spec.dbCertSecret", true
	}
	if tls := hub.TLS; tls != nil && tls.Internal != nil && tls.Internal.Mode == linstorv1.TLSSecret &&
		(leaf == "tls.internal.secretName" || leaf == "tls.internal" || leaf == "tls") {
		return "spec.sslSecret", true
	}
	return "", false
}

// SatelliteConfigurationFieldPath maps a path of a converted LinstorSatelliteConfiguration.
func SatelliteConfigurationFieldPath(hub *linstorv1.LinstorSatelliteConfigurationSpec, path string) (string, bool) {
	if strings.HasPrefix(path, "spec.nodeSelector") {
		return path, true
	}
	// Properties taken from the node (valueFrom, expandFrom) are v1 only.
	return nodeFieldPath(path, hub.StoragePools, func(token string) (string, bool) {
		p, ok := at(hub.Properties, token)
		return p.Name, ok && !hubOnly(&p)
	})
}

// SatelliteFieldPath maps a path of a converted LinstorSatellite.
func SatelliteFieldPath(hub *linstorv1.LinstorSatelliteSpec, path string) (string, bool) {
	if strings.HasPrefix(path, "spec.clusterRef") {
		return "spec.clusterName", true
	}
	return nodeFieldPath(path, hub.StoragePools, func(token string) (string, bool) {
		p, ok := at(hub.Properties, token)
		return p.Name, ok
	})
}

// nodeFieldPath maps what both satellite kinds share: pools and node properties.
// property names the property at an index token, when v1alpha1 has it.
func nodeFieldPath(path string, pools []linstorv1.StoragePool, property func(token string) (string, bool)) (string, bool) {
	t := tokens(path)
	if len(t) < 2 || t[0] != "spec" {
		return "", false
	}
	switch t[1] {
	case "storagePools":
		return poolFieldPath(pools, t[2:])
	case "properties":
		if len(t) == 2 {
			return "spec.nodeProperties", true
		}
		if name, ok := property(t[2]); ok {
			return mapKey("spec.nodeProperties", name), true
		}
	}
	return "", false
}

// poolFieldPath maps the rest of a path under spec.storagePools: v1alpha1 lists pools
// by type, in the hub's order within a type (poolsToSpoke).
func poolFieldPath(pools []linstorv1.StoragePool, rest []string) (string, bool) {
	if len(rest) == 0 {
		return "spec", true // the pools are fields of spec in v1alpha1
	}
	i, ok := index(rest[0])
	if !ok || i >= len(pools) || !spokeExpressible(&pools[i]) {
		return "", false
	}
	list := spokeList(&pools[i])
	j := 0
	for k := range i {
		if spokeExpressible(&pools[k]) && spokeList(&pools[k]) == list {
			j++
		}
	}
	base := "spec." + list + "[" + strconv.Itoa(j) + "]"
	switch leaf := strings.Join(rest[1:], "."); {
	case leaf == "" || leaf == "lvmPool" || leaf == "lvmThinPool" || leaf == "zfsPool":
		return base, true
	case leaf == "name":
		return base + ".name", true
	case leaf == "lvmPool.volumeGroup" || leaf == "lvmThinPool.volumeGroup":
		return base + ".volumeGroup", true
	case leaf == "lvmThinPool.thinPool":
		return base + ".thinPool", true
	case leaf == "zfsPool.zPool":
		return base + ".zPool", true
	case leaf == "source" || leaf == "source.hostDevices":
		return base + ".devicePaths", true
	case strings.HasPrefix(leaf, "source.hostDevices"):
		return base + ".devicePaths" + strings.Join(rest[3:], ""), true
	}
	return "", false // properties and other v1-only pool fields
}

func spokeList(p *linstorv1.StoragePool) string {
	switch {
	case p.LvmPool != nil:
		return "lvmPools"
	case p.LvmThinPool != nil:
		return "lvmThinPools"
	default:
		return "zfsPools"
	}
}

var pathToken = regexp.MustCompile(`[^.\[\]]+|\[[^\]]*\]`)

// tokens splits "spec.pools[2].name" into spec, pools, [2], name.
func tokens(path string) []string { return pathToken.FindAllString(path, -1) }

func index(token string) (int, bool) {
	if !strings.HasPrefix(token, "[") {
		return 0, false
	}
	i, err := strconv.Atoi(strings.Trim(token, "[]"))
	return i, err == nil && i >= 0
}

func at[T any](list []T, token string) (T, bool) {
	var zero T
	i, ok := index(token)
	if !ok || i >= len(list) {
		return zero, false
	}
	return list[i], true
}

// mapKey names a map entry the way the API server does: spec.nodeProperties[Aux/x].
func mapKey(path, key string) string { return path + "[" + key + "]" }
