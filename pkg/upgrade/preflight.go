package upgrade

import (
	"fmt"
	"sort"

	lapi "github.com/LINBIT/golinstor/client"

	"github.com/linstor-operator/linstor-operator/pkg/linstor"
)

// Problems lists what makes LINSTOR unsafe to upgrade now: satellites that are not
// ONLINE at the running version, and replicas that are not healthy (a disk neither
// UpToDate nor Diskless, a DRBD connection down, a resync running). Upgrading restarts
// every satellite; with a degraded resource that could take the last good copy away.
func Problems(nodes []lapi.Node, resources []lapi.ResourceWithVolumes, syncing map[string]bool) []string {
	var out []string
	for _, n := range nodes {
		if !linstor.RunsSatellite(n) {
			continue // no satellite process: its connection state says nothing
		}
		if n.ConnectionStatus != "ONLINE" {
			out = append(out, fmt.Sprintf("satellite %s is %s", n.Name, n.ConnectionStatus))
		}
	}
	for _, r := range resources {
		for _, v := range r.Volumes {
			if s := v.State.DiskState; s != "UpToDate" && s != "Diskless" {
				out = append(out, fmt.Sprintf("resource %s on %s: volume %d is %s", r.Name, r.NodeName, v.VolumeNumber, s))
			}
		}
		if r.LayerObject != nil && r.LayerObject.Drbd != nil {
			peers := make([]string, 0, len(r.LayerObject.Drbd.Connections))
			for peer, c := range r.LayerObject.Drbd.Connections {
				if !c.Connected {
					peers = append(peers, peer)
				}
			}
			sort.Strings(peers)
			for _, p := range peers {
				out = append(out, fmt.Sprintf("resource %s on %s: not connected to %s", r.Name, r.NodeName, p))
			}
		}
	}
	var names []string
	for rd, s := range syncing {
		if s {
			names = append(names, rd)
		}
	}
	sort.Strings(names)
	for _, rd := range names {
		out = append(out, fmt.Sprintf("resource %s is resynchronizing", rd))
	}
	return out
}
