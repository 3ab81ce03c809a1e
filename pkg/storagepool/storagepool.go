package storagepool

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/discovery"
)

// Wanted is a spec pool with what the controller derived from it in LINSTOR's terms.
type Wanted struct {
	Spec linstorv1.StoragePool
	// ProviderKind and DriverProps are LINSTOR's provider and its StorDriver/ properties
	// (satellite.Provider).
	ProviderKind string
	DriverProps  map[string]string
	// CreateProps are the spec's properties LINSTOR accepts, with the record of those
	// the operator applies: what a new pool gets besides its driver's.
	CreateProps map[string]string
	// Refused describes each spec property LINSTOR does not accept.
	Refused []string
	// Change brings an existing pool's properties to the spec; empty when they match.
	Change PropsChange
}

// PropsChange is a modification of a pool's properties.
type PropsChange struct {
	Override map[string]string
	Delete   []string
}

// Empty says whether the change changes nothing.
func (c PropsChange) Empty() bool { return len(c.Override) == 0 && len(c.Delete) == 0 }

// Pool is a storage pool as LINSTOR reports it on the node.
type Pool struct {
	Name         string
	ProviderKind string
	// FreeCapacity and TotalCapacity are in KiB, as LINSTOR counts.
	FreeCapacity, TotalCapacity int64
	// Errors are the messages of the pool's error reports (ApiCallRc entries with
	// MaskError in LINSTOR's storage-pool list), with their cause when there is one.
	Errors []string
}

// MaxErrors and MaxErrorLength bound a status pool's errors (the CRD's MaxItems and
// items MaxLength); longer messages are cut, further ones dropped and counted in a
// last entry.
const (
	MaxErrors      = 16
	MaxErrorLength = 1024
)

// statusErrors bounds the errors for the status.
func statusErrors(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := make([]string, 0, min(len(in), MaxErrors))
	for i, e := range in {
		if i == MaxErrors-1 && len(in) > MaxErrors {
			out = append(out, fmt.Sprintf("and %d more errors", len(in)-i))
			break
		}
		out = append(out, linstorv1.BoundMessage(e, MaxErrorLength))
	}
	return out
}

// Discovery is the discovery decided for the node in this pass (pkg/discovery).
type Discovery struct {
	Plan discovery.Plan
	// Previous is the discovery status the last pass saved.
	Previous *linstorv1.DiscoveryStatus
	// Listed: LINSTOR listed the node's unused disks in this pass, for Generation.
	Listed     bool
	Generation int64
	// ListError says why the listing failed (a fault), "" when it did not.
	ListError string
}

// Input is what the plan depends on.
type Input struct {
	Node string
	// Connection is the LINSTOR node's connection status.
	Connection string
	// Wanted are the spec's pools, in spec order.
	Wanted []Wanted
	// Observed are LINSTOR's pools on the node.
	Observed []Pool
	// Managed is the managed-pools record as LINSTOR holds it (a JSON list of names).
	Managed string
	// Discovery is nil when the node has no discovery pool and remembers none.
	Discovery *Discovery
	// Fenced: LINSTOR writes wait (lifecycle.LinstorWritesFenced); the plan names the
	// writes it holds back instead of handing them out.
	Fenced bool
	Now    time.Time
}

// Kind is what a write does.
type Kind string

const (
	// Create creates the pool on what already backs it (POST storage-pools).
	Create Kind = "create"
	// CreateFromDevices creates the pool from the spec's hostDevices, volume group or
	// zpool first (POST physical-storage).
	CreateFromDevices Kind = "create from devices"
	// Register creates a discovery pool on the volume group or zpool its claimed disks
	// hold (POST storage-pools), claiming nothing.
	Register Kind = "register"
	// RecordClaim saves the discovery status with the claim in Kubernetes, then reads
	// what the other nodes report; it always comes right before its Claim.
	RecordClaim Kind = "record claim"
	// Claim creates a discovery pool from the disks the plan picked (POST
	// physical-storage). It is dropped when its RecordClaim failed or found a disk shared.
	Claim Kind = "claim"
	// SetProperties brings an existing pool's properties to the spec.
	SetProperties Kind = "set properties"
	// Delete deletes a pool the operator created that is no longer wanted.
	Delete Kind = "delete"
	// RecordManaged saves the managed-pools record on the LINSTOR node.
	RecordManaged Kind = "record managed"
)

// Write is one write of the pass.
type Write struct {
	Kind Kind
	Pool string
	// ProviderKind and Props: the pool to create (Create, CreateFromDevices, Register,
	// Claim); Props are all the new pool's properties.
	ProviderKind string
	Props        map[string]string
	// Devices and DevicePool: what a pool is made from (CreateFromDevices, Claim), and
	// the volume group or zpool LINSTOR makes of them; the devices claimed (RecordClaim).
	Devices    []string
	DevicePool string
	// Change is the properties' change (SetProperties).
	Change PropsChange
	// Record is the managed-pools record to save (RecordManaged).
	Record string
	// Discovery is the discovery status to save before the claim is sent (RecordClaim).
	Discovery *linstorv1.DiscoveryStatus
}

func (w Write) String() string { return string(w.Kind) + " " + w.Pool }

// Result is what became of a write.
type Result struct {
	// Err: the write failed, or its answer was lost (the write may have happened).
	Err error
	// Elsewhere (RecordClaim): the identity keys of the disks the other nodes report,
	// read after the claim was saved, mapped to one such node.
	Elsewhere map[string]string
}

// Event is a Kubernetes Event the controller records for a write's result.
type Event struct {
	Warning bool
	Reason  string
	Message string
}

// Outcome is what the pass found and did about the pools: all the status reports.
type Outcome struct {
	// Problems are faults (Degraded, LinstorError).
	Problems []string
	// ClaimFailed: discovery claims that failed or were not sent (Degraded, DiskClaimFailed).
	ClaimFailed []string
	// Waiting: a pool no longer wanted that LINSTOR does not delete yet (Degraded, PoolInUse).
	Waiting string
	// Pending: pools not created yet because the satellite is not ONLINE.
	Pending string
	// WaitingForDisks: discovery pools with no disk to claim (not a fault).
	WaitingForDisks []string
	// Creating: pools asked of LINSTOR in this pass.
	Creating []string
	// Fenced names the writes the fence held back, in order.
	Fenced []string
	// Discovery is the discovery status decided in this pass (when DiscoverySet); nil
	// clears it.
	Discovery    *linstorv1.DiscoveryStatus
	DiscoverySet bool
	// Observed are LINSTOR's pools on the node for the status, nil when not observed
	// (set by Observe).
	Observed []Pool
}

// Problem is the faults in one message, "" when there is none.
func (o Outcome) Problem() string { return strings.Join(o.Problems, "; ") }

// Observe records LINSTOR's pools on the node for the status.
func (o *Outcome) Observe(pools []Pool) {
	o.Observed = pools
	if o.Observed == nil {
		o.Observed = []Pool{}
	}
}

// Statuses are the observed pools as the status lists them (diskless ones left out),
// and how many of the wanted pools have capacity. ok is false when nothing was observed.
func (o Outcome) Statuses(wanted int) (pools []linstorv1.StoragePoolStatus, summary string, ok bool) {
	if o.Observed == nil {
		return nil, "", false
	}
	ready := 0
	for _, p := range o.Observed {
		if p.ProviderKind == "DISKLESS" {
			continue
		}
		pools = append(pools, linstorv1.StoragePoolStatus{
			Name: p.Name, ProviderKind: p.ProviderKind,
			FreeCapacity:  resource.NewQuantity(p.FreeCapacity*1024, resource.BinarySI),
			TotalCapacity: resource.NewQuantity(p.TotalCapacity*1024, resource.BinarySI),
			Errors:        statusErrors(p.Errors),
		})
		if p.TotalCapacity > 0 {
			ready++
		}
	}
	return pools, fmt.Sprintf("%d/%d", ready, wanted), true
}

// Pass is the plan of one pass: Next hands out the writes in order, Fold takes each
// one's result, Outcome says what came of it. Later writes depend on earlier results (a
// claim not recorded is not sent; the managed record lists what was created and
// deleted), so the writes are handed out one at a time.
type Pass struct {
	in       Input
	byName   map[string]Pool // LINSTOR's pool names ignore case
	managed  sets.Set[string]
	desired  sets.Set[string]
	next     int // the next spec pool to plan
	deletes  bool
	recorded bool
	queue    []Write
	notSent  sets.Set[string] // discovery pools whose claim is not sent
	plans    []discovery.PoolPlan
	out      Outcome
}

// Plan starts the plan of a pass.
func Plan(in Input) *Pass {
	p := &Pass{in: in, byName: map[string]Pool{}, desired: sets.New[string](), notSent: sets.New[string]()}
	for _, o := range in.Observed {
		p.byName[strings.ToLower(o.Name)] = o
	}
	var managed []string
	_ = json.Unmarshal([]byte(in.Managed), &managed)
	p.managed = sets.New(managed...)
	if d := in.Discovery; d != nil {
		if d.ListError != "" {
			p.out.Problems = append(p.out.Problems, d.ListError)
		}
		p.plans = d.Plan.Pools
		p.out.Discovery, p.out.DiscoverySet = discoveryStatus(d, in.Now), true
	}
	return p
}

// discoveryStatus is what the status says of discovery after the plan, before any write.
func discoveryStatus(d *Discovery, now time.Time) *linstorv1.DiscoveryStatus {
	st := &linstorv1.DiscoveryStatus{}
	if d.Plan.Disks != nil {
		st.Disks = make([]linstorv1.DiskStatus, len(d.Plan.Disks))
		for i := range d.Plan.Disks {
			d.Plan.Disks[i].DeepCopyInto(&st.Disks[i])
		}
	}
	if d.Previous != nil {
		st.ListedAt, st.ObservedGeneration = d.Previous.ListedAt, d.Previous.ObservedGeneration
	}
	if d.Listed {
		st.ListedAt, st.ObservedGeneration = &metav1.Time{Time: now.Truncate(time.Second)}, d.Generation
	}
	for _, pp := range d.Plan.Pools {
		st.Pools = append(st.Pools, *pp.Status.DeepCopy())
	}
	if len(st.Pools) == 0 && len(st.Disks) == 0 {
		return nil // nothing to report nor remember
	}
	return st
}

// Next is the next write, false when the pass is done. The order: each spec pool in
// turn (create it, or claim its disks, or set its properties), then deletions, then the
// managed-pools record.
func (p *Pass) Next() (Write, bool) {
	for {
		if len(p.queue) > 0 {
			w := p.queue[0]
			p.queue = p.queue[1:]
			if w.Kind == Claim && p.notSent.Has(w.Pool) {
				continue
			}
			return w, true
		}
		switch {
		case p.next < len(p.in.Wanted):
			p.queue = p.planPool(p.in.Wanted[p.next])
			p.next++
		case !p.deletes:
			p.queue, p.deletes = p.planDeletes(), true
		case !p.recorded:
			p.queue, p.recorded = p.planRecord(), true
		default:
			return Write{}, false
		}
	}
}

// Outcome is what the pass found and did; complete once Next returned false.
func (p *Pass) Outcome() Outcome { return p.out }

// allowed says whether a write may go out; while the fence stands it is named instead.
func (p *Pass) allowed(what string) bool {
	if !p.in.Fenced {
		return true
	}
	if !slices.Contains(p.out.Fenced, what) {
		p.out.Fenced = append(p.out.Fenced, what)
	}
	return false
}

func (p *Pass) planPool(w Wanted) []Write {
	name := w.Spec.Name
	p.desired.Insert(name)
	if len(w.Refused) > 0 {
		p.out.Problems = append(p.out.Problems, fmt.Sprintf("pool %s: LINSTOR does not accept properties: %s", name, strings.Join(w.Refused, "; ")))
	}
	cur, exists := p.byName[strings.ToLower(name)]
	switch {
	case !exists && p.in.Connection != "ONLINE":
		// LINSTOR learns which storage providers a satellite supports when it connects
		// and refuses pools on a satellite that is not ONLINE: creating waits for it.
		p.out.Pending = fmt.Sprintf("waiting for the satellite to be ONLINE (it is %s) to create pool %s", p.in.Connection, name)
		return nil
	case !exists && w.Spec.Source != nil && w.Spec.Source.Discover != nil:
		return p.planDiscoveryPool(w)
	case !exists:
		if !p.allowed("pool " + name + ": creating it") {
			return nil
		}
		p.out.Creating = append(p.out.Creating, name)
		var devices []string
		if w.Spec.Source != nil {
			devices = w.Spec.Source.HostDevices
		}
		return []Write{create(w, devices)}
	case cur.ProviderKind != w.ProviderKind:
		// Never change the type of a pool that may hold data: report it instead.
		p.out.Problems = append(p.out.Problems, fmt.Sprintf("pool %s exists as %s, the spec asks for %s", name, cur.ProviderKind, w.ProviderKind))
		return nil
	case !w.Change.Empty() && p.allowed("pool "+name+": properties"):
		return []Write{{Kind: SetProperties, Pool: name, Change: w.Change}}
	}
	return nil
}

// create is the write that creates pool w: from devices through the device-pool call
// (which makes the volume group or zpool first), or on what already backs it.
func create(w Wanted, devices []string) Write {
	props := map[string]string{}
	for k, v := range w.CreateProps {
		props[k] = v
	}
	out := Write{Kind: Create, Pool: w.Spec.Name, ProviderKind: w.ProviderKind, Props: props}
	if len(devices) > 0 {
		out.Kind, out.Devices, out.DevicePool = CreateFromDevices, devices, w.DriverProps["StorDriver/LvmVg"]
		switch w.ProviderKind {
		case "LVM_THIN":
			out.DevicePool += "/" + w.DriverProps["StorDriver/ThinPool"]
		case "ZFS", "ZFS_THIN":
			out.DevicePool = w.DriverProps["StorDriver/ZPool"] + w.DriverProps["StorDriver/ZPoolThin"]
		}
		return out
	}
	for k, v := range w.DriverProps {
		props[k] = v
	}
	return out
}

// discoveryPool is the plan and status of discovery pool name, nil when it has none.
func (p *Pass) discoveryPool(name string) (*discovery.PoolPlan, *linstorv1.DiscoveryPoolStatus) {
	if p.out.Discovery == nil {
		return nil, nil
	}
	for i := range p.plans {
		if p.plans[i].Status.Name == name {
			return &p.plans[i], &p.out.Discovery.Pools[i]
		}
	}
	return nil, nil
}

// planDiscoveryPool acts on the discovery plan of a missing pool. A claim is saved in
// the status before LINSTOR is asked, so that whatever happens to the answer (or to the
// operator), the next pass knows which disks it sent and never picks others.
func (p *Pass) planDiscoveryPool(w Wanted) []Write {
	name := w.Spec.Name
	plan, st := p.discoveryPool(name)
	if plan == nil {
		return nil
	}
	if (plan.Action == discovery.Register || plan.Action == discovery.Claim) && !p.allowed("pool "+name+": creating it") {
		return nil // before the claim is recorded: a claim on record counts as sent
	}
	switch plan.Action {
	case discovery.Register:
		out := create(w, nil)
		out.Kind = Register
		return []Write{out}
	case discovery.Claim:
		st.ClaimTime = &metav1.Time{Time: p.in.Now.Truncate(time.Second)}
		claim := create(w, plan.Devices)
		claim.Kind = Claim
		return []Write{{Kind: RecordClaim, Pool: name, Devices: plan.Devices, Discovery: p.out.Discovery.DeepCopy()}, claim}
	}
	switch st.State {
	case linstorv1.PoolWaitingForDisks:
		p.out.WaitingForDisks = append(p.out.WaitingForDisks, fmt.Sprintf("pool %s: %s", name, st.Message))
	case linstorv1.PoolClaimFailed:
		p.out.ClaimFailed = append(p.out.ClaimFailed, fmt.Sprintf("pool %s: %s", name, st.Message))
	}
	return nil
}

// planDeletes deletes the pools the operator created that the spec no longer has.
func (p *Pass) planDeletes() []Write {
	var out []Write
	for _, name := range sets.List(p.managed.Difference(p.desired)) {
		if _, ok := p.byName[strings.ToLower(name)]; !ok {
			p.managed.Delete(name) // gone already
			continue
		}
		if !p.allowed("pool " + name + ": deleting it") {
			continue
		}
		out = append(out, Write{Kind: Delete, Pool: name})
	}
	return out
}

// planRecord saves the managed-pools record when it changed.
func (p *Pass) planRecord() []Write {
	raw, _ := json.Marshal(sets.List(p.managed))
	record := string(raw)
	changed := p.in.Managed != record && (p.managed.Len() > 0 || p.in.Managed != "")
	if !changed || !p.allowed("recording the managed pools") {
		return nil
	}
	return []Write{{Kind: RecordManaged, Record: record}}
}

// Fold takes a write's result and returns the Events to record for it.
func (p *Pass) Fold(w Write, r Result) []Event {
	switch w.Kind {
	case Create, CreateFromDevices:
		if r.Err != nil {
			p.out.Problems = append(p.out.Problems, fmt.Sprintf("creating pool %s: %v", w.Pool, r.Err))
			return nil
		}
		p.managed.Insert(w.Pool)
		return []Event{{Reason: "PoolCreated", Message: fmt.Sprintf("Created %s storage pool %s", w.ProviderKind, w.Pool)}}
	case Register:
		_, st := p.discoveryPool(w.Pool)
		if r.Err != nil {
			st.Message = "Registering the pool on the volume group or zpool its disks hold failed: " + r.Err.Error()
			p.out.Problems = append(p.out.Problems, fmt.Sprintf("creating pool %s: %v", w.Pool, r.Err))
			return nil
		}
		p.out.Creating = append(p.out.Creating, w.Pool)
		p.managed.Insert(w.Pool)
		return []Event{{Reason: "PoolRegistered", Message: fmt.Sprintf("Registered %s storage pool %s on node %s on the disks it claimed before (%s)",
			w.ProviderKind, w.Pool, p.in.Node, strings.Join(p.claimedDisks(w.Pool), ", "))}}
	case RecordClaim:
		return p.foldRecordClaim(w, r)
	case Claim:
		return p.foldClaim(w, r)
	case SetProperties:
		if r.Err != nil {
			p.out.Problems = append(p.out.Problems, fmt.Sprintf("pool %s properties: %v", w.Pool, r.Err))
		}
	case Delete:
		if r.Err != nil {
			// LINSTOR refuses to delete a pool that holds volumes: wait, and say so.
			p.out.Waiting = fmt.Sprintf("pool %s is no longer wanted but cannot be deleted yet: %v", w.Pool, r.Err)
			return nil
		}
		p.managed.Delete(w.Pool)
		return []Event{{Reason: "PoolDeleted", Message: "Deleted storage pool " + w.Pool}}
	case RecordManaged:
		if r.Err != nil {
			p.out.Problems = append(p.out.Problems, fmt.Sprintf("recording managed pools: %v", r.Err))
		}
	}
	return nil
}

// foldRecordClaim: a claim not saved is not sent. Every node saves the disks it lists
// before it claims, then reads the others' records: of two nodes that see one LUN and
// claim at once, at least the second sees the first and stops.
func (p *Pass) foldRecordClaim(w Write, r Result) []Event {
	if r.Err != nil {
		p.notSent.Insert(w.Pool)
		p.out.Problems = append(p.out.Problems, fmt.Sprintf("creating pool %s: %v", w.Pool, r.Err))
		return nil
	}
	plan, st := p.discoveryPool(w.Pool)
	shared := sharedDisks(plan.Disks, r.Elsewhere)
	if len(shared) == 0 {
		return nil
	}
	// Nothing was sent, so nothing is remembered as claimed (a disk left Claimed would
	// have the pool registered on it), and the node is listed again at once: the next
	// pass decides afresh, with the other node's record in its cache.
	p.notSent.Insert(w.Pool)
	st.State = linstorv1.PoolClaimFailed
	st.Message = fmt.Sprintf("The claim of %s was not sent: %s", strings.Join(w.Devices, ", "), strings.Join(shared, "; "))
	for i := range p.out.Discovery.Disks {
		if d := &p.out.Discovery.Disks[i]; d.State == linstorv1.DiskClaimed && d.Pool == w.Pool && slices.Contains(st.Claimed, d.Device) {
			d.State, d.Reason, d.Message = linstorv1.DiskSkipped, "PoolFailed", "Not claimed: the claim was not sent, see the pool's message"
		}
	}
	st.Claimed, st.Attempts, st.ClaimTime = nil, 0, nil
	p.out.Discovery.ListedAt = nil
	p.out.ClaimFailed = append(p.out.ClaimFailed, fmt.Sprintf("pool %s: %s", w.Pool, st.Message))
	return []Event{{Warning: true, Reason: "DiskShared", Message: fmt.Sprintf("Not claiming %s on node %s for storage pool %s: %s",
		strings.Join(w.Devices, ", "), p.in.Node, w.Pool, strings.Join(shared, "; "))}}
}

func (p *Pass) foldClaim(w Write, r Result) []Event {
	plan, st := p.discoveryPool(w.Pool)
	if r.Err != nil {
		st.State = linstorv1.PoolClaimFailed
		st.Message = fmt.Sprintf("LINSTOR did not create the pool from %s: %v", strings.Join(w.Devices, ", "), r.Err)
		for i := range p.out.Discovery.Disks {
			if d := &p.out.Discovery.Disks[i]; d.State == linstorv1.DiskClaimed && d.Pool == w.Pool && slices.Contains(st.Claimed, d.Device) {
				d.Message = "Sent to LINSTOR for storage pool " + w.Pool + ", which failed: see the pool's message"
			}
		}
		p.out.ClaimFailed = append(p.out.ClaimFailed, fmt.Sprintf("pool %s: %s", w.Pool, st.Message))
		return []Event{{Warning: true, Reason: "DiskClaimFailed", Message: fmt.Sprintf("Claiming %s on node %s for storage pool %s failed: %v",
			strings.Join(w.Devices, ", "), p.in.Node, w.Pool, r.Err)}}
	}
	var events []Event
	for i, d := range plan.Disks {
		events = append(events, Event{Reason: "DiskClaimed", Message: fmt.Sprintf("Claimed disk %s (%s, %s, model %q, serial %q) on node %s for storage pool %s",
			w.Devices[i], d.Device, resource.NewQuantity(d.Size, resource.BinarySI), d.Model, d.Serial, p.in.Node, w.Pool)})
	}
	p.out.Creating = append(p.out.Creating, w.Pool)
	p.managed.Insert(w.Pool)
	return events
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

func (p *Pass) claimedDisks(pool string) []string {
	var out []string
	for _, d := range p.out.Discovery.Disks {
		if d.State == linstorv1.DiskClaimed && d.Pool == pool {
			out = append(out, d.Device)
		}
	}
	return out
}
