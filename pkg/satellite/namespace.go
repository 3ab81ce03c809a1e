package satellite

import (
	"fmt"
	"slices"
	"strings"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Misplaced says why a LinstorSatelliteConfiguration or LinstorNodeConnection (kind) in
// namespace ns is ignored, or "" when it is not. Both configure the LinstorCluster of
// their own namespace, and the operator runs its one LinstorCluster in operatorNS.
// With operatorNS empty (every namespace may hold the LinstorCluster, as in the API
// tests) an object is misplaced when a LinstorCluster exists but not in its namespace;
// clusters are the existing LinstorClusters.
func Misplaced(kind, ns, operatorNS string, clusters []linstorv1.LinstorCluster) string {
	var clusterNamespaces []string
	for _, c := range clusters {
		if !slices.Contains(clusterNamespaces, c.Namespace) {
			clusterNamespaces = append(clusterNamespaces, c.Namespace)
		}
	}
	slices.Sort(clusterNamespaces)
	switch {
	case operatorNS != "" && ns != operatorNS:
		return fmt.Sprintf("This %s is ignored: it is in namespace %q, but the operator runs LINSTOR only in its own namespace %q and reads configuration from there alone. Create it in namespace %q.",
			kind, ns, operatorNS, operatorNS)
	case operatorNS == "" && len(clusterNamespaces) > 0 && !slices.Contains(clusterNamespaces, ns):
		return fmt.Sprintf("This %s is ignored: namespace %q holds no LinstorCluster. Create it in the namespace of the LinstorCluster (%s).",
			kind, ns, strings.Join(clusterNamespaces, ", "))
	}
	return ""
}
