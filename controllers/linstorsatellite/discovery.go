package linstorsatellite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
	"github.com/linstor-operator/linstor-operator/pkg/discovery"
)

// planDiscovery lists the node's unused disks when due and decides what each discovery
// pool does in this pass (pkg/discovery holds every rule). It leaves the plan in s.
func (r *Reconciler) planDiscovery(ctx context.Context, s *scope, exists func(string) bool, online bool) error {
	var pools []discovery.Pool
	hostDevices := map[string]string{}
	for _, p := range s.sat.Spec.StoragePools {
		if p.Source == nil {
			continue
		}
		if p.Source.Discover != nil {
			pools = append(pools, discovery.Pool{Name: p.Name, Match: *p.Source.Discover, Exists: exists(p.Name)})
		}
		for _, dev := range p.Source.HostDevices {
			hostDevices[dev] = p.Name
		}
	}
	prev := s.sat.Status.Discovery
	if len(pools) == 0 && prev == nil {
		return nil
	}
	in := discovery.Input{Pools: pools, HostDevices: hostDevices, Previous: prev}
	now := time.Now()
	var listErr error
	if online && discovery.ListDue(pools, prev, s.sat.Generation, now, r.relist()) {
		disks, err := s.lc.Nodes.GetPhysicalStorage(ctx, s.sat.Name)
		if err != nil {
			listErr = fmt.Errorf("listing the node's unused disks: %w", err)
		} else {
			in.Listed = make([]discovery.Disk, 0, len(disks))
			for _, d := range disks {
				in.Listed = append(in.Listed, discovery.Disk{Device: d.Device, Size: d.Size, Rotational: d.Rotational, Model: d.Model, Serial: d.Serial, WWN: d.Wwn})
			}
			if in.Elsewhere, err = r.disksElsewhere(ctx, r.Client, s.sat); err != nil {
				listErr = err
				in.Listed = nil // no claim without knowing what the other nodes see
			}
		}
	}
	plan := discovery.Decide(in)
	st := &linstorv1.DiscoveryStatus{Disks: plan.Disks}
	if prev != nil {
		st.ListedAt, st.ObservedGeneration = prev.ListedAt, prev.ObservedGeneration
	}
	if in.Listed != nil {
		st.ListedAt, st.ObservedGeneration = &metav1.Time{Time: now.Truncate(time.Second)}, s.sat.Generation
	}
	for _, pp := range plan.Pools {
		st.Pools = append(st.Pools, pp.Status)
	}
	s.discovery, s.discoveryPlan = st, plan
	if len(st.Pools) == 0 && len(st.Disks) == 0 {
		s.discovery = nil // nothing to report nor remember
	}
	s.discoverySet = true
	return listErr
}

func (r *Reconciler) relist() time.Duration {
	return reconciler.Poll(r.DiskRelist, discovery.RelistEvery)
}

// discoveryPool returns the plan and status of pool name, when it is a discovery pool.
func (s *scope) discoveryPool(name string) (*discovery.PoolPlan, *linstorv1.DiscoveryPoolStatus) {
	if s.discovery == nil {
		return nil, nil
	}
	for i := range s.discoveryPlan.Pools {
		if s.discoveryPlan.Pools[i].Status.Name == name {
			return &s.discoveryPlan.Pools[i], &s.discovery.Pools[i]
		}
	}
	return nil, nil
}

// createDiscoveryPool acts on the plan for a missing discovery pool. A claim is recorded
// in the status before LINSTOR is asked, so that whatever happens to the answer (or to
// the operator), the next pass knows which disks it sent and never picks others.
func (r *Reconciler) createDiscoveryPool(ctx context.Context, s *scope, want *linstorv1.StoragePool, kind lapi.ProviderKind, driverProps, userProps map[string]string) (created bool, err error) {
	plan, st := s.discoveryPool(want.Name)
	if plan == nil {
		return false, nil
	}
	if (plan.Action == discovery.Register || plan.Action == discovery.Claim) && !s.mayWrite("pool "+want.Name+": creating it") {
		// Before the claim is recorded: a claim on record counts as sent.
		return false, nil
	}
	switch plan.Action {
	case discovery.Register:
		r.wrote(s)
		if err := createPool(ctx, s.lc, s.sat.Name, want, kind, driverProps, userProps, nil); err != nil {
			st.Message = "Registering the pool on the volume group or zpool its disks hold failed: " + err.Error()
			return false, err
		}
		r.Recorder.Eventf(s.sat, corev1.EventTypeNormal, "PoolRegistered", "Registered %s storage pool %s on node %s on the disks it claimed before (%s)", kind, want.Name, s.sat.Name, strings.Join(claimedDisks(s, want.Name), ", "))
		return true, nil
	case discovery.Claim:
	default:
		switch st.State {
		case linstorv1.PoolWaitingForDisks:
			s.poolWaitingForDisks = append(s.poolWaitingForDisks, fmt.Sprintf("pool %s: %s", want.Name, st.Message))
		case linstorv1.PoolClaimFailed:
			s.claimFailed = append(s.claimFailed, fmt.Sprintf("pool %s: %s", want.Name, st.Message))
		}
		return false, nil
	}
	st.ClaimTime = &metav1.Time{Time: time.Now().Truncate(time.Second)}
	if err := r.recordDiscovery(ctx, s); err != nil {
		return false, fmt.Errorf("recording the claim of %s before sending it: %w", strings.Join(plan.Devices, ", "), err)
	}
	// Every node records the disks it lists before it claims, then reads the others'
	// records from the API server (not the cache): of two nodes that see one LUN and
	// claim at once, at least the second sees the first and stops.
	elsewhere, err := r.disksElsewhere(ctx, r.apiReader(), s.sat)
	if err != nil {
		return false, fmt.Errorf("reading what other nodes report before claiming %s: %w", strings.Join(plan.Devices, ", "), err)
	}
	if shared := sharedDisks(plan.Disks, elsewhere); len(shared) > 0 {
		// Nothing was sent, so nothing is remembered as claimed (a disk left Claimed
		// would have the pool registered on it), and the node is listed again at once:
		// the next pass decides afresh, with the other node's record in its cache.
		st.State = linstorv1.PoolClaimFailed
		st.Message = fmt.Sprintf("The claim of %s was not sent: %s", strings.Join(plan.Devices, ", "), strings.Join(shared, "; "))
		for i := range s.discovery.Disks {
			if d := &s.discovery.Disks[i]; d.State == linstorv1.DiskClaimed && d.Pool == want.Name && slices.Contains(st.Claimed, d.Device) {
				d.State, d.Reason, d.Message = linstorv1.DiskSkipped, "PoolFailed", "Not claimed: the claim was not sent, see the pool's message"
			}
		}
		st.Claimed, st.Attempts, st.ClaimTime = nil, 0, nil
		s.discovery.ListedAt = nil
		r.Recorder.Eventf(s.sat, corev1.EventTypeWarning, "DiskShared", "Not claiming %s on node %s for storage pool %s: %s", strings.Join(plan.Devices, ", "), s.sat.Name, want.Name, strings.Join(shared, "; "))
		s.claimFailed = append(s.claimFailed, fmt.Sprintf("pool %s: %s", want.Name, st.Message))
		return false, nil
	}
	r.wrote(s)
	if err := createPool(ctx, s.lc, s.sat.Name, want, kind, driverProps, userProps, plan.Devices); err != nil {
		st.State = linstorv1.PoolClaimFailed
		st.Message = fmt.Sprintf("LINSTOR did not create the pool from %s: %v", strings.Join(plan.Devices, ", "), err)
		for i := range s.discovery.Disks {
			if d := &s.discovery.Disks[i]; d.State == linstorv1.DiskClaimed && d.Pool == want.Name && slices.Contains(st.Claimed, d.Device) {
				d.Message = "Sent to LINSTOR for storage pool " + want.Name + ", which failed: see the pool's message"
			}
		}
		r.Recorder.Eventf(s.sat, corev1.EventTypeWarning, "DiskClaimFailed", "Claiming %s on node %s for storage pool %s failed: %v", strings.Join(plan.Devices, ", "), s.sat.Name, want.Name, err)
		s.claimFailed = append(s.claimFailed, fmt.Sprintf("pool %s: %s", want.Name, st.Message))
		return false, nil
	}
	for i, d := range plan.Disks {
		r.Recorder.Eventf(s.sat, corev1.EventTypeNormal, "DiskClaimed", "Claimed disk %s (%s, %s, model %q, serial %q) on node %s for storage pool %s",
			plan.Devices[i], d.Device, resource.NewQuantity(d.Size, resource.BinarySI), d.Model, d.Serial, s.sat.Name, want.Name)
	}
	return true, nil
}

// disksElsewhere maps the identity keys of every disk the other LinstorSatellites of
// the namespace report (listed, skipped or claimed) to one of their nodes.
func (r *Reconciler) disksElsewhere(ctx context.Context, reader client.Reader, sat *linstorv1.LinstorSatellite) (map[string]string, error) {
	var list linstorv1.LinstorSatelliteList
	if err := reader.List(ctx, &list, client.InNamespace(sat.Namespace)); err != nil {
		return nil, fmt.Errorf("listing LinstorSatellites for disks shared between nodes: %w", err)
	}
	out := map[string]string{}
	for _, other := range list.Items {
		if other.Name == sat.Name || other.Status.Discovery == nil {
			continue
		}
		for _, d := range other.Status.Discovery.Disks {
			for _, k := range discovery.IdentityKeys(d) {
				if _, seen := out[k]; !seen {
					out[k] = other.Name
				}
			}
		}
	}
	return out, nil
}

// sharedDisks says, for each disk another node reports, which node.
func sharedDisks(disks []discovery.Disk, elsewhere map[string]string) []string {
	var out []string
	for _, d := range disks {
		for _, k := range discovery.IdentityKeys(linstorv1.DiskStatus{WWN: d.WWN, Serial: d.Serial}) {
			if node, ok := elsewhere[k]; ok {
				out = append(out, fmt.Sprintf("%s (%s) is also reported by node %s, a LUN shared by several nodes", d.Device, k, node))
				break
			}
		}
	}
	return out
}

func (r *Reconciler) apiReader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// recordDiscovery saves the discovery status now, ahead of the pass's status update.
// The patch is conditional on the object this pass read: a pass on a stale cached copy
// does not see the claim an earlier pass recorded, and would pick other disks; its
// record conflicts instead, and nothing is sent.
func (r *Reconciler) recordDiscovery(ctx context.Context, s *scope) error {
	before := s.sat.DeepCopy()
	s.sat.Status.Discovery = s.discovery.DeepCopy()
	return r.Client.Status().Patch(ctx, s.sat, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

func claimedDisks(s *scope, pool string) []string {
	var out []string
	for _, d := range s.discovery.Disks {
		if d.State == linstorv1.DiskClaimed && d.Pool == pool {
			out = append(out, d.Device)
		}
	}
	return out
}
