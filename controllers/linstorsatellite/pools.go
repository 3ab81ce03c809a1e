package linstorsatellite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
	"github.com/linstor-operator/linstor-operator/pkg/discovery"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/props"
	"github.com/linstor-operator/linstor-operator/pkg/names"
	"github.com/linstor-operator/linstor-operator/pkg/satellite"
	"github.com/linstor-operator/linstor-operator/pkg/storagepool"
)

// reconcileStoragePools brings the node's pools to the spec (pkg/storagepool holds every
// rule): observe, plan, send each write the plan hands out (a discovery claim is saved
// in the status first), fold each result back, and leave the outcome for the status.
func (r *Reconciler) reconcileStoragePools(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.lnode == nil {
		return ctrl.Result{}, nil // not registered yet, or its state predates our write
	}
	existing, now := s.snap.Pools(s.sat.Name), time.Now()
	in := storagepool.Input{
		Node:       s.sat.Name,
		Connection: s.lnode.ConnectionStatus,
		Wanted:     wantedPools(s.sat.Spec.StoragePools, existing),
		Observed:   observedPools(existing),
		Managed:    s.lnode.Props[names.AuxManagedPools],
		Fenced:     s.writer.fence != "",
		Now:        now,
	}
	in.Discovery = r.discover(ctx, s, in, now)
	plan := storagepool.Plan(in)
	for w, ok := plan.Next(); ok; w, ok = plan.Next() {
		for _, e := range plan.Fold(w, r.sendPoolWrite(ctx, s, w)) {
			kind := corev1.EventTypeNormal
			if e.Warning {
				kind = corev1.EventTypeWarning
			}
			r.Recorder.Event(s.sat, kind, e.Reason, e.Message)
		}
	}
	s.pools = plan.Outcome()
	for _, what := range s.pools.Fenced {
		s.writer.may(what) // the pool writes the fence holds back, named after the node's
	}
	if len(s.pools.Problems) > 0 || s.pools.Waiting != "" {
		return ctrl.Result{RequeueAfter: r.Backoff.Failed(s.sat.UID)}, nil // asked again, less and less often
	}
	if d := s.pools.Discovery; d != nil && d.ListedAt != nil && slices.ContainsFunc(d.Pools, func(p linstorv1.DiscoveryPoolStatus) bool { return p.State != linstorv1.PoolCreated }) {
		// A discovery pool waits for disks (or runs dry, or waits to retry): look again
		// when the next listing is due; disks added later are found then.
		return ctrl.Result{RequeueAfter: max(time.Until(d.ListedAt.Add(r.relist())), time.Second)}, nil
	}
	return ctrl.Result{}, nil
}

// wantedPools puts the spec's pools in LINSTOR's terms: provider, driver properties,
// the properties LINSTOR accepts (with their last-applied record) and those it refuses,
// and what brings an existing pool's properties to the spec.
func wantedPools(spec []linstorv1.StoragePool, existing []lapi.StoragePool) []storagepool.Wanted {
	byName := map[string]lapi.StoragePool{} // LINSTOR's pool names ignore case
	for _, p := range existing {
		byName[strings.ToLower(p.StoragePoolName)] = p
	}
	var out []storagepool.Wanted
	for _, p := range spec {
		kind, driverProps := satellite.Provider(&p)
		userProps := map[string]string{}
		for _, prop := range p.Properties {
			userProps[prop.Name] = prop.Value
		}
		userProps, refused := linstor.ValidProperties(props.StoragePool, userProps)
		createProps := map[string]string{}
		for k, v := range userProps {
			createProps[k] = v
		}
		if mod := linstor.PropertyDiff(nil, userProps); len(mod.OverrideProps) > 0 {
			createProps[names.AuxLastApplied] = mod.OverrideProps[names.AuxLastApplied]
		}
		w := storagepool.Wanted{Spec: p, ProviderKind: string(kind), DriverProps: driverProps, CreateProps: createProps, Refused: refused}
		if cur, ok := byName[strings.ToLower(p.Name)]; ok {
			mod := linstor.WithoutUndeletable(props.StoragePool, linstor.PropertyDiff(cur.Props, userProps))
			w.Change = storagepool.PropsChange{Override: mod.OverrideProps, Delete: mod.DeleteProps}
		}
		out = append(out, w)
	}
	return out
}

func observedPools(pools []lapi.StoragePool) []storagepool.Pool {
	if pools == nil {
		return nil
	}
	out := make([]storagepool.Pool, 0, len(pools))
	for _, p := range pools {
		out = append(out, storagepool.Pool{Name: p.StoragePoolName, ProviderKind: string(p.ProviderKind), FreeCapacity: p.FreeCapacity, TotalCapacity: p.TotalCapacity,
			Errors: poolErrors(p.Reports)})
	}
	return out
}

// poolErrors are the messages of a pool's error reports. Every PoolQueryInterval the
// observer lists pools with GET /v1/view/storage-pools without cached=true (the
// cycles between keep that list's errors), so LINSTOR asks the satellites and
// reports what failed: LINSTOR 1.33.3's CtrlStorPoolListApiCallHandler.assembleList
// clears each pool's reports and adds the errors of the satellite's free-space answer
// (FreeCapacityFetcherProto.parseFreeSpacesInTransaction; for a thin pool whose volume
// group or thin volume is gone, StltApiCallHandlerUtils.getStoragePoolSpaceInfoOrError's
// FAIL_UNKNOWN_ERROR "Failed to query free space from storage pool" with the
// StorageException as cause). The not-connected report is a warning and not counted
// (the connection status tells of it).
func poolErrors(reports []lapi.ApiCallRc) []string {
	var out []string
	for _, rc := range reports {
		if uint64(rc.RetCode)&lapiconst.MaskError != lapiconst.MaskError {
			continue
		}
		msg := rc.Message
		if rc.Cause != "" {
			msg += ": " + rc.Cause
		}
		out = append(out, msg)
	}
	return out
}

// discover lists the node's unused disks when due and decides what each discovery pool
// does in this pass (pkg/discovery holds every rule); nil when there is nothing to
// discover nor remember.
func (r *Reconciler) discover(ctx context.Context, s *scope, pass storagepool.Input, now time.Time) *storagepool.Discovery {
	exists := map[string]bool{}
	for _, p := range pass.Observed {
		exists[strings.ToLower(p.Name)] = true
	}
	var pools []discovery.Pool
	hostDevices := map[string]string{}
	for _, p := range s.sat.Spec.StoragePools {
		if p.Source == nil {
			continue
		}
		if p.Source.Discover != nil {
			pools = append(pools, discovery.Pool{Name: p.Name, Match: *p.Source.Discover, Exists: exists[strings.ToLower(p.Name)]})
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
	var listErr string
	// LINSTOR lists the disks of a satellite that is ONLINE only.
	if pass.Connection == "ONLINE" && discovery.ListDue(pools, prev, s.sat.Generation, now, r.relist()) {
		disks, err := s.writer.read().Nodes.GetPhysicalStorage(ctx, s.sat.Name)
		if err != nil {
			listErr = fmt.Sprintf("listing the node's unused disks: %v", err)
		} else {
			in.Listed = make([]discovery.Disk, 0, len(disks))
			for _, d := range disks {
				in.Listed = append(in.Listed, discovery.Disk{Device: d.Device, Size: d.Size, Rotational: d.Rotational, Model: d.Model, Serial: d.Serial, WWN: d.Wwn})
			}
			if in.Elsewhere, err = r.disksElsewhere(ctx, r.Client, s.sat); err != nil {
				listErr = err.Error()
				in.Listed = nil // no claim without knowing what the other nodes see
			}
		}
	}
	return &storagepool.Discovery{Plan: discovery.Decide(in), Previous: prev, Listed: in.Listed != nil, Generation: s.sat.Generation, ListError: listErr}
}

func (r *Reconciler) relist() time.Duration {
	return reconciler.Poll(r.DiskRelist, discovery.RelistEvery)
}

// sendPoolWrite sends one write of the pool plan and says what became of it.
func (r *Reconciler) sendPoolWrite(ctx context.Context, s *scope, w storagepool.Write) storagepool.Result {
	node := s.sat.Name
	var err error
	switch w.Kind {
	case storagepool.Create, storagepool.Register:
		err = s.writer.send(func(lc *lapi.Client) error {
			return lc.Nodes.CreateStoragePool(ctx, node, lapi.StoragePool{StoragePoolName: w.Pool, ProviderKind: lapi.ProviderKind(w.ProviderKind), Props: w.Props})
		})
	case storagepool.CreateFromDevices, storagepool.Claim:
		// The device-pool call makes the volume group or zpool first.
		err = s.writer.send(func(lc *lapi.Client) error {
			return lc.Nodes.CreateDevicePool(ctx, node, lapi.PhysicalStorageCreate{
				ProviderKind: lapi.ProviderKind(w.ProviderKind), DevicePaths: w.Devices, PoolName: w.DevicePool,
				WithStoragePool: lapi.PhysicalStorageStoragePoolCreate{Name: w.Pool, Props: w.Props},
			})
		})
	case storagepool.RecordClaim:
		return r.recordClaim(ctx, s, w)
	case storagepool.SetProperties:
		mod := lapi.GenericPropsModify{OverrideProps: w.Change.Override, DeleteProps: w.Change.Delete}
		err = s.writer.send(func(lc *lapi.Client) error {
			return linstor.ModifyProperties(mod, func(m lapi.GenericPropsModify) error {
				return lc.Nodes.ModifyStoragePool(ctx, node, w.Pool, m)
			})
		})
	case storagepool.Delete:
		err = s.writer.send(func(lc *lapi.Client) error { return lc.Nodes.DeleteStoragePool(ctx, node, w.Pool) })
	case storagepool.RecordManaged:
		mod := lapi.GenericPropsModify{OverrideProps: lapi.OverrideProps{names.AuxManagedPools: w.Record}}
		err = s.writer.send(func(lc *lapi.Client) error {
			return lc.Nodes.Modify(ctx, node, lapi.NodeModify{GenericPropsModify: mod})
		})
	default:
		err = fmt.Errorf("unknown pool write %q", w.Kind)
	}
	return storagepool.Result{Err: err}
}

// recordClaim saves the discovery status with the claim, ahead of the pass's status
// update, then reads what the other nodes report from the API server (not the cache).
// The patch is conditional on the object this pass read: a pass on a stale cached copy
// does not see the claim an earlier pass recorded, and would pick other disks; its
// record conflicts instead, and nothing is sent.
func (r *Reconciler) recordClaim(ctx context.Context, s *scope, w storagepool.Write) storagepool.Result {
	devices := strings.Join(w.Devices, ", ")
	before := s.sat.DeepCopy()
	s.sat.Status.Discovery = w.Discovery.DeepCopy()
	if err := r.Client.Status().Patch(ctx, s.sat, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return storagepool.Result{Err: fmt.Errorf("recording the claim of %s before sending it: %w", devices, err)}
	}
	elsewhere, err := r.disksElsewhere(ctx, r.apiReader(), s.sat)
	if err != nil {
		return storagepool.Result{Err: fmt.Errorf("reading what other nodes report before claiming %s: %w", devices, err)}
	}
	return storagepool.Result{Elsewhere: elsewhere}
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

func (r *Reconciler) apiReader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}
