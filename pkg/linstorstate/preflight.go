package linstorstate

import (
	"fmt"
	"sort"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
)

// UpgradeProblems lists what makes LINSTOR unsafe to upgrade now: satellites that are not
// ONLINE at the running version, and replicas that are not healthy. Upgrading restarts
// every satellite; with a degraded resource that could take the last good copy away.
//
// Each resource is judged by what LINSTOR reports for its layers
// (Json.apiToResourceWithVolumes). A DRBD resource: every volume UpToDate (or Diskless,
// for a replica without a disk: Diskful), every DRBD connection up, no resync
// running. A resource without DRBD (STORAGE, or
// LUKS over STORAGE) never has a disk state or connections, as only DRBD's events fill
// them; it is unhealthy when its satellite reported no state for it at all. Any
// resource is unhealthy when a volume's reports carry an error (the satellite's answer
// when LINSTOR queried the volume, CtrlVlmListApiCallHandler).
func UpgradeProblems(nodes []lapi.Node, resources []lapi.ResourceWithVolumes, syncing map[string]bool) []string {
	var out []string
	for _, n := range nodes {
		if !RunsSatellite(n) {
			continue // no satellite process: its connection state says nothing
		}
		if n.ConnectionStatus != "ONLINE" {
			out = append(out, fmt.Sprintf("satellite %s is %s", n.Name, n.ConnectionStatus))
		}
	}
	for _, r := range resources {
		out = append(out, resourceProblems(r)...)
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

// resourceProblems judges one replica by its layers.
func resourceProblems(r lapi.ResourceWithVolumes) []string {
	var out []string
	where := fmt.Sprintf("resource %s on %s", r.Name, r.NodeName)
	drbd, diskful := HasDRBD(r), Diskful(r)
	if !drbd && r.State == nil {
		out = append(out, where+": its satellite reports no state for it")
	}
	for _, v := range r.Volumes {
		for _, rc := range v.Reports {
			if uint64(rc.RetCode)&lapiconst.MaskError == lapiconst.MaskError {
				out = append(out, fmt.Sprintf("%s: volume %d: %s", where, v.VolumeNumber, rc.Message))
			}
		}
		if !drbd {
			continue
		}
		switch s := v.State.DiskState; s {
		case "UpToDate":
		case "Diskless":
			// Healthy only for a replica made without a disk: DRBD says the same of a
			// diskful one whose disk detached (an I/O error, a failed attach).
			if diskful {
				out = append(out, fmt.Sprintf("%s: volume %d is Diskless, but it has a disk (detached)", where, v.VolumeNumber))
			}
		case "":
			out = append(out, fmt.Sprintf("%s: volume %d reports no disk state", where, v.VolumeNumber))
		default:
			out = append(out, fmt.Sprintf("%s: volume %d is %s", where, v.VolumeNumber, s))
		}
	}
	if drbd && r.LayerObject != nil && r.LayerObject.Drbd != nil {
		peers := make([]string, 0, len(r.LayerObject.Drbd.Connections))
		for peer, c := range r.LayerObject.Drbd.Connections {
			if !c.Connected {
				peers = append(peers, peer)
			}
		}
		sort.Strings(peers)
		for _, p := range peers {
			out = append(out, fmt.Sprintf("%s: not connected to %s", where, p))
		}
	}
	return out
}
