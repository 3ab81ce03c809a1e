package replicahealth

import (
	"slices"
	"strings"

	"github.com/linstor-operator/linstor-operator/pkg/linstor"
)

// maxPeersNamed bounds the peers kept per node: the decisions need "any", the messages
// a few names.
const maxPeersNamed = 3

// ConnectedPeers lists, for each node (lower-case), up to three nodes whose DRBD
// reports a Connected connection to it, in any resource. LINSTOR's own auto-evict
// does not evict a node while a neighbour's DRBD is still connected to it
// (ReconnectorTask.getFailedPeers / drbdConnectionsOk@v1.33.3): its satellite may be
// down while DRBD there still serves and replicates a workload.
func ConnectedPeers(replicas []linstor.ResourceView) map[string][]string {
	out := map[string][]string{}
	for i := range replicas {
		v := &replicas[i]
		if v.Drbd == nil {
			continue
		}
		for peer, c := range v.Drbd.Connections {
			if !c.Connected {
				continue
			}
			key := strings.ToLower(peer)
			if names := out[key]; len(names) < maxPeersNamed && !slices.Contains(names, v.NodeName) {
				out[key] = append(names, v.NodeName)
			}
		}
	}
	for _, names := range out {
		slices.Sort(names)
	}
	return out
}
