package emulator

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	lapiconst "github.com/LINBIT/golinstor"
)

const (
	autoEvictAllowKey           = "DrbdOptions/AutoEvictAllowEviction"
	autoEvictAfterTimeKey       = "DrbdOptions/AutoEvictAfterTime"
	autoEvictMaxDisconnectedKey = "DrbdOptions/AutoEvictMaxDisconnectedNodes"
)

// autoEvict is the controller's ReconnectorTask.getFailedPeers, run lazily from the
// emulator's clock: a satellite that is not connected, whose DRBD no neighbour
// reports Connected (drbdConnectionsOk), for AutoEvictAfterTime minutes (default 60)
// is declared EVICTED (CtrlNodeApiCallHandler.declareEvicted, as PUT …/evict: its
// replicas go INACTIVE/EVICTED and get replacements) when AutoEvictAllowEviction is
// true (code default false; the k8s database's first migration sets True on the
// controller) and no more than AutoEvictMaxDisconnectedNodes percent (default 34,
// Math.round of percent × nodes / 100) of all nodes are disconnected. Each property
// is the node's, else the controller's (PriorityProps(node, ctrl)). The time counts
// from when the satellite went away or DRBD's last connection to it dropped; a node
// not connected since the controller started is not tracked (the emulator does not
// know since when it is away).
func (e *Emulator) autoEvict() {
	now := e.now()
	disconnected, total := 0, len(e.nodes)
	for _, n := range e.nodes {
		if holdsPools(n.Type) && !n.online && !hasFlag(n.Flags, lapiconst.FlagEvicted) {
			disconnected++
		}
	}
	for _, n := range e.sortedNodes() {
		if !holdsPools(n.Type) || n.online || n.offlineSince.IsZero() || hasFlag(n.Flags, lapiconst.FlagEvicted) {
			continue
		}
		prop := func(key, dflt string) string {
			if v, ok := n.Props[key]; ok {
				return v
			}
			if v, ok := e.controllerProps[key]; ok {
				return v
			}
			return dflt
		}
		if e.neighbourSeesDrbd(n.Name) {
			n.offlineSince = now // drbdOk: the clock restarts when DRBD drops
			continue
		}
		minutes, err := strconv.ParseInt(prop(autoEvictAfterTimeKey, "60"), 10, 64)
		allow, _ := strconv.ParseBool(strings.ToLower(prop(autoEvictAllowKey, "false")))
		if err != nil || !allow || now.Before(n.offlineSince.Add(time.Duration(minutes)*time.Minute)) {
			continue
		}
		percent, err := strconv.Atoi(prop(autoEvictMaxDisconnectedKey, "34"))
		if err != nil || disconnected > int(math.Floor(float64(percent)*float64(total)/100+0.5)) {
			continue // the controller suspects its own connections
		}
		e.evictNode(discardAnswer{}, nil, n)
		disconnected--
	}
}

// neighbourSeesDrbd: an ONLINE satellite sharing a resource with node reports its
// DRBD connection to node Connected (ReconnectorTask.drbdConnectionsOk).
func (e *Emulator) neighbourSeesDrbd(nodeName string) bool {
	for _, rd := range e.rds {
		if rd.resources[nodeName] == nil {
			continue
		}
		for peer, p := range rd.resources {
			if peer != nodeName && p.drbd() && e.online(peer) && e.drbdConnection(rd, peer, nodeName).Connected {
				return true
			}
		}
	}
	return false
}

// discardAnswer takes the answer of a call the controller makes itself.
type discardAnswer struct{}

func (discardAnswer) Header() http.Header         { return http.Header{} }
func (discardAnswer) Write(p []byte) (int, error) { return len(p), nil }
func (discardAnswer) WriteHeader(int)             {}
