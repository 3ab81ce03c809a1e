package linstorsatellite

import (
	"context"
	"fmt"
	"strings"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/linstor-operator/linstor-operator/pkg/linstorstate"
	"github.com/linstor-operator/linstor-operator/pkg/satellite"
)

// reconcileNodeFailure applies spec.nodeFailure to a node LINSTOR cannot reach
// (satellite.DecideEviction decides): with policy Evict, a node failed long enough is
// evicted in LINSTOR, which places its replicas elsewhere; restoreEvicted brings it
// back. It runs on a fresh observation of the node only (reconcileNode).
func (r *Reconciler) reconcileNodeFailure(ctx context.Context, s *scope, lnode lapi.Node) (ctrl.Result, bool) {
	health := s.snap.Health()
	in := satellite.FailedNode{Spec: s.cluster.Spec.NodeFailure, Node: s.node, Connection: lnode.ConnectionStatus,
		Known: health != nil, ConnectedPeers: s.snap.PeersConnectedTo(lnode.Name)}
	for _, h := range health.Holding(lnode.Name) {
		in.Holds = append(in.Holds, satellite.DrainHold{Resource: h.Resource, Reason: h.Reason})
	}
	for _, n := range s.snap.Nodes() {
		if t := strings.ToUpper(n.Type); t != "SATELLITE" && t != "COMBINED" {
			continue
		}
		in.Satellites++
		if linstorstate.HasFlag(n.Flags, "EVICTED") {
			in.Evicted++
		} else if n.ConnectionStatus != "ONLINE" {
			in.Offline++
		}
	}
	// Evictions of one cluster are decided one at a time, each on a cycle that shows
	// the one before: maxEvicted counts what LINSTOR reports, and passes of several
	// satellites run at once.
	r.evictMu.Lock()
	defer r.evictMu.Unlock()
	if r.lastEviction == nil {
		r.lastEviction = map[types.UID]time.Time{}
	}
	d := satellite.DecideEviction(in, time.Now())
	s.evictWait = d.Wait
	if !d.Evict {
		if d.RecheckAfter > 0 {
			return ctrl.Result{RequeueAfter: d.RecheckAfter}, false
		}
		return ctrl.Result{}, false
	}
	if last := r.lastEviction[s.cluster.UID]; !s.snap.HealthAt().After(last) {
		s.evictWait = "the node is due for eviction; waiting for LINSTOR to show the eviction decided before it"
		return ctrl.Result{RequeueAfter: staleRetry}, false
	}
	if !s.writer.may("evicting node " + lnode.Name) {
		return ctrl.Result{}, true
	}
	// PUT /v1/nodes/{node}/evict: LINSTOR flags the node EVICTED and places its
	// replicas elsewhere (CtrlNodeApiCallHandler.evictNode, as its own auto-evict does).
	err := s.writer.send(func(lc *lapi.Client) error { return lc.Nodes.Evict(ctx, lnode.Name) })
	r.lastEviction[s.cluster.UID] = time.Now()
	r.Observer.RefreshHealth(s.key)
	if err != nil {
		s.nodeErr = fmt.Errorf("evicting LINSTOR node %s under spec.nodeFailure: %w", lnode.Name, err)
		return ctrl.Result{RequeueAfter: r.Backoff.Failed(s.sat.UID)}, true
	}
	r.Recorder.Eventf(s.sat, corev1.EventTypeWarning, "NodeEvicted",
		"LINSTOR node %s failed (Kubernetes NotReady, satellite %s, no DRBD peer connected to it) and no resource needs its replica: evicted under spec.nodeFailure.policy Evict; LINSTOR places its replicas on other nodes, and the node is restored when it is back",
		lnode.Name, lnode.ConnectionStatus)
	return ctrl.Result{}, true
}
