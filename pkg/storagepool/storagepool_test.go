package storagepool

// Table tests for a pass over a node's storage pools. Every row is one pass: an Input
// (the spec's pools, LINSTOR's pools, the managed-pools record, the discovery plan) and
// the results LINSTOR gives the writes (success unless the row says), and the row states
// the writes in order and the outcome. Every row also checks, for free:
//   - Plan does not modify its input,
//   - Plan is deterministic (a restarted operator deciding again decides the same).

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/discovery"
)

// ---------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------

const (
	fxNode = "node-a"
	gib    = int64(1) << 30
)

var (
	fxNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	// Disks as lsblk reports them on real machines.
	nvme0 = discovery.Disk{Device: "/dev/nvme0n1", Size: 1788 * gib, Model: "SAMSUNG MZQL21T9HCJR-00A07", Serial: "S64GNE0R100001", WWN: "eui.36344730523000010025384500000001"}
	nvme1 = discovery.Disk{Device: "/dev/nvme1n1", Size: 1788 * gib, Model: "SAMSUNG MZQL21T9HCJR-00A07", Serial: "S64GNE0R100002", WWN: "eui.36344730523000020025384500000001"}
	small = discovery.Disk{Device: "/dev/nvme2n1", Size: 960 * gib, Model: "INTEL SSDPE2KX010T8", Serial: "PHLJ0000000A1P0FGN", WWN: "eui.01000000010000005cd2e4a1b2c3d4e5"}
	// Their stable names, the devices a first claim sends.
	byID0 = "/dev/disk/by-id/nvme-" + nvme0.WWN
	byID1 = "/dev/disk/by-id/nvme-" + nvme1.WWN

	errBoom     = errors.New("boom")
	errInUse    = errors.New("storage pool thin holds volumes")
	errLost     = errors.New("Post \"http://linstor:3370/v1/physical-storage/node-a\": EOF")
	errConflict = errors.New("the object has been modified")
)

// thin is an LVM thin pool with the driver properties satellite.Provider gives it.
func thin(name string) Wanted {
	return Wanted{Spec: linstorv1.StoragePool{Name: name, LvmThinPool: &linstorv1.LvmThinPool{}},
		ProviderKind: "LVM_THIN", DriverProps: map[string]string{"StorDriver/LvmVg": "linstor_" + name, "StorDriver/ThinPool": name},
		CreateProps: map[string]string{}}
}

func withDevices(w Wanted, devices ...string) Wanted {
	w.Spec.Source = &linstorv1.StoragePoolSource{HostDevices: devices}
	return w
}

func zfs(name, zpool string) Wanted {
	return Wanted{Spec: linstorv1.StoragePool{Name: name, ZfsPool: &linstorv1.ZfsPool{ZPool: zpool}},
		ProviderKind: "ZFS", DriverProps: map[string]string{"StorDriver/ZPool": zpool}, CreateProps: map[string]string{}}
}

// nvmePool takes the large non-rotational disks.
func nvmePool() Wanted {
	w := thin("nvme")
	w.Spec.Source = &linstorv1.StoragePoolSource{Discover: &linstorv1.DiskDiscovery{Rotational: ptr.To(false), MinSize: resource.NewQuantity(1<<40, resource.BinarySI), AllowAnyDisk: true}}
	return w
}

func pool(name, kind string) Pool { return Pool{Name: name, ProviderKind: kind} }

func claimed(d discovery.Disk, pool string) linstorv1.DiskStatus {
	return linstorv1.DiskStatus{Device: d.Device, Size: resource.NewQuantity(d.Size, resource.BinarySI), Model: d.Model, Serial: d.Serial, WWN: d.WWN,
		State: linstorv1.DiskClaimed, Pool: pool}
}

// claiming is the status a pass saved before it sent the claim of disks for pool nvme.
func claiming(state linstorv1.DiscoveryPoolState, disks ...discovery.Disk) *linstorv1.DiscoveryStatus {
	st := &linstorv1.DiscoveryStatus{ListedAt: &metav1.Time{Time: fxNow.Add(-time.Minute)}, ObservedGeneration: 1,
		Pools: []linstorv1.DiscoveryPoolStatus{{Name: "nvme", State: state, Attempts: 1, ClaimTime: &metav1.Time{Time: fxNow.Add(-time.Minute)}}}}
	for _, d := range disks {
		st.Pools[0].Claimed = append(st.Pools[0].Claimed, d.Device)
		st.Disks = append(st.Disks, claimed(d, "nvme"))
	}
	return st
}

// discovered is the discovery of this pass, decided by pkg/discovery as the controller
// does: listed is nil when the disks were not listed.
type discovered struct {
	listed   []discovery.Disk
	previous *linstorv1.DiscoveryStatus
	listErr  string
}

// opt changes one thing of an Input.
type opt func(*Input)

func wants(w ...Wanted) opt        { return func(in *Input) { in.Wanted = w } }
func observed(p ...Pool) opt       { return func(in *Input) { in.Observed = p } }
func managed(record string) opt    { return func(in *Input) { in.Managed = record } }
func connection(status string) opt { return func(in *Input) { in.Connection = status } }
func fenced() opt                  { return func(in *Input) { in.Fenced = true } }

// input is an ONLINE node with no pools; opts change it.
func input(opts ...opt) Input {
	in := Input{Node: fxNode, Connection: "ONLINE", Now: fxNow}
	for _, o := range opts {
		o(&in)
	}
	return in
}

// discover decides discovery for in as the controller does.
func discover(in Input, d *discovered) *Discovery {
	exists := map[string]bool{}
	for _, p := range in.Observed {
		exists[strings.ToLower(p.Name)] = true
	}
	var pools []discovery.Pool
	for _, w := range in.Wanted {
		if w.Spec.Source != nil && w.Spec.Source.Discover != nil {
			pools = append(pools, discovery.Pool{Name: w.Spec.Name, Match: *w.Spec.Source.Discover, Exists: exists[strings.ToLower(w.Spec.Name)]})
		}
	}
	return &Discovery{Plan: discovery.Decide(discovery.Input{Pools: pools, Listed: d.listed, Previous: d.previous}),
		Previous: d.previous, Listed: d.listed != nil, Generation: 2, ListError: d.listErr}
}

// describe names a write as the rows list them.
func describe(w Write) string {
	switch w.Kind {
	case CreateFromDevices, Claim:
		return string(w.Kind) + " " + w.Pool + " from " + strings.Join(w.Devices, ",") + " (" + w.DevicePool + ")"
	case RecordClaim:
		return "record claim " + w.Pool + ": " + strings.Join(w.Devices, ",")
	case RecordManaged:
		return "record managed " + w.Record
	}
	return w.String()
}

// pass is what a row's pass did.
type pass struct {
	writes []Write
	out    Outcome
	events []Event
}

func (p pass) pool(t *testing.T, name string) linstorv1.DiscoveryPoolStatus {
	t.Helper()
	if p.out.Discovery != nil {
		for _, s := range p.out.Discovery.Pools {
			if s.Name == name {
				return s
			}
		}
	}
	t.Fatalf("no discovery status for pool %s: %+v", name, p.out.Discovery)
	return linstorv1.DiscoveryPoolStatus{}
}

func (p pass) disk(t *testing.T, device string) linstorv1.DiskStatus {
	t.Helper()
	if p.out.Discovery != nil {
		for _, d := range p.out.Discovery.Disks {
			if d.Device == device {
				return d
			}
		}
	}
	t.Fatalf("no discovery status for disk %s: %+v", device, p.out.Discovery)
	return linstorv1.DiskStatus{}
}

func (p pass) write(t *testing.T, kind Kind) Write {
	t.Helper()
	for _, w := range p.writes {
		if w.Kind == kind {
			return w
		}
	}
	t.Fatalf("no %s write in %v", kind, p.writes)
	return Write{}
}

// run drives the plan as the controller does, LINSTOR answering with results (by the
// write's String, success otherwise).
func run(in Input, results map[string]Result) pass {
	var out pass
	p := Plan(in)
	for w, ok := p.Next(); ok; w, ok = p.Next() {
		out.writes = append(out.writes, w)
		out.events = append(out.events, p.Fold(w, results[w.String()])...)
	}
	out.out = p.Outcome()
	return out
}

type row struct {
	name     string
	in       Input
	discover *discovered
	// results LINSTOR gives, by Write.String(); success otherwise.
	results map[string]Result

	writes          []string // describe of each write, in order
	problem         string   // Outcome.Problem()
	claimFailed     []string // substrings, one per entry
	waiting         string
	pending         string
	waitingForDisks []string // substrings, one per entry
	creating        []string
	fenced          []string
	events          []string // "Reason: message", or the reason alone
	check           func(t *testing.T, p pass)
}

func runRows(t *testing.T, rows []row) {
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			if tc.discover != nil {
				in.Discovery = discover(in, tc.discover)
			}
			before := deepCopyInput(in)
			got := run(in, tc.results)
			if !reflect.DeepEqual(in, before) {
				t.Errorf("the plan modified its input")
			}
			if again := run(deepCopyInput(before), tc.results); !reflect.DeepEqual(again, got) {
				t.Errorf("deciding again decides otherwise:\n%+v\n%+v", again, got)
			}
			var writes []string
			for _, w := range got.writes {
				writes = append(writes, describe(w))
			}
			if !reflect.DeepEqual(writes, tc.writes) {
				t.Errorf("writes:\n got %q\nwant %q", writes, tc.writes)
			}
			o := got.out
			if o.Problem() != tc.problem {
				t.Errorf("problem:\n got %q\nwant %q", o.Problem(), tc.problem)
			}
			containsEach(t, "claim failed", o.ClaimFailed, tc.claimFailed)
			containsEach(t, "waiting for disks", o.WaitingForDisks, tc.waitingForDisks)
			if o.Waiting != tc.waiting {
				t.Errorf("waiting: got %q, want %q", o.Waiting, tc.waiting)
			}
			if o.Pending != tc.pending {
				t.Errorf("pending: got %q, want %q", o.Pending, tc.pending)
			}
			if !reflect.DeepEqual(o.Creating, tc.creating) {
				t.Errorf("creating: got %q, want %q", o.Creating, tc.creating)
			}
			if !reflect.DeepEqual(o.Fenced, tc.fenced) {
				t.Errorf("fenced: got %q, want %q", o.Fenced, tc.fenced)
			}
			if len(got.events) != len(tc.events) {
				t.Errorf("events: got %+v, want %q", got.events, tc.events)
			} else {
				for i, e := range got.events {
					if want := tc.events[i]; want != e.Reason && want != e.Reason+": "+e.Message {
						t.Errorf("event %d: got %s: %s, want %s", i, e.Reason, e.Message, want)
					}
				}
			}
			if o.DiscoverySet != (in.Discovery != nil) {
				t.Errorf("discovery set: %t", o.DiscoverySet)
			}
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
}

func containsEach(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %q, want entries containing %q", what, got, want)
		return
	}
	for i := range got {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("%s %d: got %q, want it to contain %q", what, i, got[i], want[i])
		}
	}
}

func deepCopyInput(in Input) Input {
	out := in
	out.Wanted = nil
	for _, w := range in.Wanted {
		c := w
		c.Spec = *w.Spec.DeepCopy()
		c.DriverProps, c.CreateProps = maps.Clone(w.DriverProps), maps.Clone(w.CreateProps)
		c.Refused = append([]string(nil), w.Refused...)
		c.Change = PropsChange{Override: maps.Clone(w.Change.Override), Delete: append([]string(nil), w.Change.Delete...)}
		out.Wanted = append(out.Wanted, c)
	}
	out.Observed = append([]Pool(nil), in.Observed...)
	if d := in.Discovery; d != nil {
		c := *d
		c.Previous = d.Previous.DeepCopy()
		c.Plan = discovery.Plan{}
		for _, pp := range d.Plan.Pools {
			cp := pp
			cp.Devices = append([]string(nil), pp.Devices...)
			cp.Disks = append([]discovery.Disk(nil), pp.Disks...)
			cp.Status = *pp.Status.DeepCopy()
			c.Plan.Pools = append(c.Plan.Pools, cp)
		}
		for _, ds := range d.Plan.Disks {
			c.Plan.Disks = append(c.Plan.Disks, *ds.DeepCopy())
		}
		out.Discovery = &c
	}
	return out
}

// ---------------------------------------------------------------------------------
// Rows
// ---------------------------------------------------------------------------------

var poolRows = []row{
	{
		name:     "a missing pool is created, then recorded as the operator's",
		in:       input(wants(thin("thin"))),
		writes:   []string{"create thin", `record managed ["thin"]`},
		creating: []string{"thin"},
		events:   []string{"PoolCreated: Created LVM_THIN storage pool thin"},
		check: func(t *testing.T, p pass) {
			w := p.write(t, Create)
			want := map[string]string{"StorDriver/LvmVg": "linstor_thin", "StorDriver/ThinPool": "thin"}
			if w.ProviderKind != "LVM_THIN" || !reflect.DeepEqual(w.Props, want) {
				t.Errorf("create: %+v", w)
			}
		},
	},
	{
		name: "a new pool gets the spec's properties and their record besides its driver's",
		in: input(wants(func() Wanted {
			w := thin("thin")
			w.CreateProps = map[string]string{"Aux/team": "db", "Aux/linstor-operator/last-applied": `["Aux/team"]`}
			return w
		}())),
		writes:   []string{"create thin", `record managed ["thin"]`},
		creating: []string{"thin"},
		events:   []string{"PoolCreated"},
		check: func(t *testing.T, p pass) {
			want := map[string]string{"StorDriver/LvmVg": "linstor_thin", "StorDriver/ThinPool": "thin", "Aux/team": "db", "Aux/linstor-operator/last-applied": `["Aux/team"]`}
			if w := p.write(t, Create); !reflect.DeepEqual(w.Props, want) {
				t.Errorf("props: %v", w.Props)
			}
		},
	},
	{
		// cluster_test: a thin pool on /dev/vdb.
		name:     "hostDevices: LINSTOR makes the volume group and thin pool, the driver's properties stay out",
		in:       input(wants(withDevices(thin("thin"), "/dev/vdb"))),
		writes:   []string{"create from devices thin from /dev/vdb (linstor_thin/thin)", `record managed ["thin"]`},
		creating: []string{"thin"},
		events:   []string{"PoolCreated: Created LVM_THIN storage pool thin"},
		check: func(t *testing.T, p pass) {
			if w := p.write(t, CreateFromDevices); len(w.Props) != 0 {
				t.Errorf("props: %v", w.Props)
			}
		},
	},
	{
		name:     "hostDevices of a ZFS pool make the zpool",
		in:       input(wants(withDevices(zfs("z", "tank"), "/dev/vdb", "/dev/vdc"))),
		writes:   []string{"create from devices z from /dev/vdb,/dev/vdc (tank)", `record managed ["z"]`},
		creating: []string{"z"},
		events:   []string{"PoolCreated: Created ZFS storage pool z"},
	},
	{
		name:    "offline node: creating waits, nothing is written",
		in:      input(wants(thin("thin")), connection("OFFLINE")),
		pending: "waiting for the satellite to be ONLINE (it is OFFLINE) to create pool thin",
	},
	{
		name:    "offline node: the last pool waiting is reported, existing pools still get their properties",
		in:      input(wants(thin("a"), changed(thin("b")), thin("c")), observed(pool("b", "LVM_THIN")), connection("OFFLINE")),
		writes:  []string{"set properties b"},
		pending: "waiting for the satellite to be ONLINE (it is OFFLINE) to create pool c",
	},
	{
		name:    "type mismatch: reported, never changed",
		in:      input(wants(changed(thin("thin"))), observed(pool("thin", "LVM")), managed(`["thin"]`)),
		problem: "pool thin exists as LVM, the spec asks for LVM_THIN",
	},
	{
		name: "LINSTOR's pool names ignore case",
		in:   input(wants(thin("thin")), observed(pool("THIN", "LVM_THIN")), managed(`["thin"]`)),
	},
	{
		// behaviour_test TestForeignPoolIsNeverDeleted.
		name: "a foreign pool (not in the record) is never deleted",
		in:   input(observed(pool("manual", "LVM"), pool("DfltDisklessStorPool", "DISKLESS"))),
	},
	{
		name:   "a pool the operator created that the spec drops is deleted and unrecorded",
		in:     input(wants(thin("thin")), observed(pool("thin", "LVM_THIN"), pool("old", "LVM_THIN")), managed(`["old","thin"]`)),
		writes: []string{"delete old", `record managed ["thin"]`},
		events: []string{"PoolDeleted: Deleted storage pool old"},
	},
	{
		// behaviour_test TestPoolHoldingDataIsNotDeleted: LINSTOR refuses; the pass
		// waits, keeps it in the record, and asks again later.
		name:    "a pool holding volumes is never deleted: LINSTOR refuses, the pass waits and keeps it recorded",
		in:      input(observed(pool("thin", "LVM_THIN")), managed(`["thin"]`)),
		results: map[string]Result{"delete thin": {Err: errInUse}},
		writes:  []string{"delete thin"},
		waiting: "pool thin is no longer wanted but cannot be deleted yet: storage pool thin holds volumes",
	},
	{
		name:   "a recorded pool LINSTOR no longer has is dropped from the record, nothing deleted",
		in:     input(managed(`["gone"]`)),
		writes: []string{`record managed []`},
	},
	{
		name: "no record and nothing managed: nothing recorded",
		in:   input(observed(pool("manual", "LVM"))),
	},
	{
		name:    "a failed create is a problem, and not recorded",
		in:      input(wants(thin("thin"))),
		results: map[string]Result{"create thin": {Err: errBoom}},
		writes:  []string{"create thin"},
		problem: "creating pool thin: boom",
		// Asked of LINSTOR, so Progressing says so until the problem shows.
		creating: []string{"thin"},
	},
	{
		// The pass after a create whose answer was lost.
		name: "a lost answer to a create: the next pass sees the pool, creates nothing",
		in:   input(wants(thin("thin")), observed(pool("thin", "LVM_THIN"))),
	},
	{
		name:   "changed properties are set",
		in:     input(wants(changed(thin("thin"))), observed(pool("thin", "LVM_THIN")), managed(`["thin"]`)),
		writes: []string{"set properties thin"},
		check: func(t *testing.T, p pass) {
			if w := p.write(t, SetProperties); w.Change.Override["Aux/team"] != "db" || !reflect.DeepEqual(w.Change.Delete, []string{"Aux/old"}) {
				t.Errorf("change: %+v", w.Change)
			}
		},
	},
	{
		name:     "properties LINSTOR refuses are reported in spec order with the pool's errors; the rest goes on",
		in:       input(wants(refused(thin("a"), "Foo: unknown"), refused(thin("b"), "Bar: unknown"))),
		results:  map[string]Result{"create a": {Err: errBoom}},
		writes:   []string{"create a", "create b", `record managed ["b"]`},
		problem:  "pool a: LINSTOR does not accept properties: Foo: unknown; creating pool a: boom; pool b: LINSTOR does not accept properties: Bar: unknown",
		creating: []string{"a", "b"},
		events:   []string{"PoolCreated: Created LVM_THIN storage pool b"},
	},
	{
		name:    "a failed property update and a failed record are problems",
		in:      input(wants(changed(thin("thin"))), observed(pool("thin", "LVM_THIN"), pool("old", "LVM_THIN")), managed(`["old","thin"]`)),
		results: map[string]Result{"set properties thin": {Err: errBoom}, "record managed ": {Err: errBoom}},
		writes:  []string{"set properties thin", "delete old", `record managed ["thin"]`},
		problem: "pool thin properties: boom; recording managed pools: boom",
		events:  []string{"PoolDeleted"},
	},
	{
		// upgrade_fence_test: the fence names every write that waits.
		name: "fenced: nothing is written, every write that waits is named in order",
		in: input(wants(thin("new"), changed(thin("thin"))), observed(pool("thin", "LVM_THIN"), pool("old", "LVM_THIN")),
			managed(`["gone","old","thin"]`), fenced()),
		fenced: []string{"pool new: creating it", "pool thin: properties", "pool old: deleting it", "recording the managed pools"},
	},
}

// changed gives an existing pool properties to set.
func changed(w Wanted) Wanted {
	w.Change = PropsChange{Override: map[string]string{"Aux/team": "db"}, Delete: []string{"Aux/old"}}
	return w
}

func refused(w Wanted, why ...string) Wanted {
	w.Refused = why
	return w
}

var discoveryRows = []row{
	{
		name:     "a claim is recorded before the device-pool write, and the pool recorded after",
		in:       input(wants(nvmePool())),
		discover: &discovered{listed: []discovery.Disk{nvme0, nvme1, small}},
		writes: []string{"record claim nvme: " + byID0 + "," + byID1, "claim nvme from " + byID0 + "," + byID1 + " (linstor_nvme/nvme)",
			`record managed ["nvme"]`},
		creating: []string{"nvme"},
		events:   []string{"DiskClaimed", "DiskClaimed"},
		check: func(t *testing.T, p pass) {
			// What is saved before LINSTOR is asked: the claim, its disks, when.
			rec := p.write(t, RecordClaim).Discovery
			if rec == nil || len(rec.Pools) != 1 || rec.Pools[0].State != linstorv1.PoolClaiming || rec.Pools[0].ClaimTime == nil ||
				!rec.Pools[0].ClaimTime.Time.Equal(fxNow) || strings.Join(rec.Pools[0].Claimed, ",") != "/dev/nvme0n1,/dev/nvme1n1" {
				t.Errorf("recorded before the claim: %+v", rec)
			}
			if !rec.ListedAt.Time.Equal(fxNow) || rec.ObservedGeneration != 2 {
				t.Errorf("listing: %v %d", rec.ListedAt, rec.ObservedGeneration)
			}
			if d := p.disk(t, small.Device); d.State == linstorv1.DiskClaimed {
				t.Errorf("the small disk was claimed: %+v", d)
			}
		},
	},
	{
		name:     "a claim that could not be recorded is not sent",
		in:       input(wants(nvmePool())),
		discover: &discovered{listed: []discovery.Disk{nvme0}},
		results:  map[string]Result{"record claim nvme": {Err: errConflict}},
		writes:   []string{"record claim nvme: " + byID0},
		problem:  "creating pool nvme: the object has been modified",
	},
	{
		// Two nodes see one LUN: the second to record its claim sees the first's.
		name:     "a disk another node reports is not claimed: nothing is sent, the node is listed again",
		in:       input(wants(nvmePool())),
		discover: &discovered{listed: []discovery.Disk{nvme0}},
		results:  map[string]Result{"record claim nvme": {Elsewhere: map[string]string{"wwn:" + nvme0.WWN: "node-b"}}},
		writes:   []string{"record claim nvme: " + byID0},
		claimFailed: []string{"pool nvme: The claim of " + byID0 + " was not sent: /dev/nvme0n1 (wwn:" + nvme0.WWN +
			") is also reported by node node-b, a LUN shared by several nodes"},
		events: []string{"DiskShared"},
		check: func(t *testing.T, p pass) {
			if st := p.pool(t, "nvme"); st.State != linstorv1.PoolClaimFailed || st.Claimed != nil || st.ClaimTime != nil || st.Attempts != 0 {
				t.Errorf("pool: %+v", st)
			}
			if d := p.disk(t, nvme0.Device); d.State != linstorv1.DiskSkipped || d.Reason != "PoolFailed" {
				t.Errorf("disk: %+v", d)
			}
			if p.out.Discovery.ListedAt != nil {
				t.Errorf("listed at %v: the node is not listed again at once", p.out.Discovery.ListedAt)
			}
		},
	},
	{
		// discovery_test TestDiscoveryLostAnswerIsNotClaimedAgain, first pass.
		name:        "LINSTOR fails the claim (or its answer is lost): the claim stays on record",
		in:          input(wants(nvmePool())),
		discover:    &discovered{listed: []discovery.Disk{nvme0}},
		results:     map[string]Result{"claim nvme": {Err: errLost}},
		writes:      []string{"record claim nvme: " + byID0, "claim nvme from " + byID0 + " (linstor_nvme/nvme)"},
		claimFailed: []string{"pool nvme: LINSTOR did not create the pool from " + byID0 + ": Post"},
		events:      []string{"DiskClaimFailed"},
		check: func(t *testing.T, p pass) {
			if st := p.pool(t, "nvme"); st.State != linstorv1.PoolClaimFailed || strings.Join(st.Claimed, ",") != nvme0.Device || st.ClaimTime == nil {
				t.Errorf("pool: %+v", st)
			}
			if d := p.disk(t, nvme0.Device); d.State != linstorv1.DiskClaimed || !strings.Contains(d.Message, "which failed") {
				t.Errorf("disk: %+v", d)
			}
		},
	},
	{
		// discovery_test TestDiscoveryLostAnswerIsNotClaimedAgain, next pass.
		name:     "after a lost answer the next pass sees the pool: created, nothing claimed again",
		in:       input(wants(nvmePool()), observed(pool("nvme", "LVM_THIN"))),
		discover: &discovered{previous: claiming(linstorv1.PoolClaimFailed, nvme0)},
		check: func(t *testing.T, p pass) {
			if st := p.pool(t, "nvme"); st.State != linstorv1.PoolCreated {
				t.Errorf("pool: %+v", st)
			}
		},
	},
	{
		name:     "a crash between claim and write, the disks still unused: the same disks, and only them, are claimed again",
		in:       input(wants(nvmePool())),
		discover: &discovered{listed: []discovery.Disk{nvme1, nvme0, {Device: "/dev/nvme4n1", Size: 3 << 40, WWN: "eui.99"}}, previous: claiming(linstorv1.PoolClaiming, nvme0, nvme1)},
		writes: []string{"record claim nvme: /dev/nvme0n1,/dev/nvme1n1", "claim nvme from /dev/nvme0n1,/dev/nvme1n1 (linstor_nvme/nvme)",
			`record managed ["nvme"]`},
		creating: []string{"nvme"},
		events:   []string{"DiskClaimed", "DiskClaimed"},
		check: func(t *testing.T, p pass) {
			if rec := p.write(t, RecordClaim).Discovery; rec.Pools[0].Attempts != 2 {
				t.Errorf("attempts: %+v", rec.Pools[0])
			}
		},
	},
	{
		// discovery_test TestDiscoveryAfterACrashClaimsOnlyTheSameDisks.
		name:        "a crash between claim and write, a claimed disk now in use: nothing is claimed, the pool says why",
		in:          input(wants(nvmePool())),
		discover:    &discovered{listed: []discovery.Disk{nvme1}, previous: claiming(linstorv1.PoolClaiming, nvme0)},
		claimFailed: []string{"/dev/nvme0n1 is no longer listed as unused"},
		check: func(t *testing.T, p pass) {
			if d := p.disk(t, nvme1.Device); d.Reason != "PoolFailed" {
				t.Errorf("nvme1: %+v", d)
			}
		},
	},
	{
		name:     "a crash between claim and write, not listed in this pass: nothing is claimed, nothing reported",
		in:       input(wants(nvmePool())),
		discover: &discovered{previous: claiming(linstorv1.PoolClaiming, nvme0)},
	},
	{
		// discovery_test TestDiscoveryHeterogeneousNodes…: the pool added back.
		name:     "a pool added back is registered on the disks it claimed before, claiming none",
		in:       input(wants(nvmePool())),
		discover: &discovered{listed: []discovery.Disk{nvme1}, previous: &linstorv1.DiscoveryStatus{Disks: []linstorv1.DiskStatus{claimed(nvme0, "nvme")}}},
		writes:   []string{"register nvme", `record managed ["nvme"]`},
		creating: []string{"nvme"},
		events:   []string{"PoolRegistered: Registered LVM_THIN storage pool nvme on node node-a on the disks it claimed before (/dev/nvme0n1)"},
		check: func(t *testing.T, p pass) {
			w := p.write(t, Register)
			if len(w.Devices) != 0 || w.Props["StorDriver/LvmVg"] != "linstor_nvme" {
				t.Errorf("register: %+v", w)
			}
		},
	},
	{
		name:     "a register whose answer is lost is a problem, and says so on the pool",
		in:       input(wants(nvmePool())),
		discover: &discovered{previous: &linstorv1.DiscoveryStatus{Pools: []linstorv1.DiscoveryPoolStatus{{Name: "nvme", State: linstorv1.PoolCreated, Claimed: []string{byID0}}}, Disks: []linstorv1.DiskStatus{claimed(nvme0, "nvme")}}},
		results:  map[string]Result{"register nvme": {Err: errLost}},
		writes:   []string{"register nvme"},
		problem:  "creating pool nvme: " + errLost.Error(),
		check: func(t *testing.T, p pass) {
			if st := p.pool(t, "nvme"); !strings.HasPrefix(st.Message, "Registering the pool on the volume group or zpool its disks hold failed: ") {
				t.Errorf("pool: %+v", st)
			}
		},
	},
	{
		name:     "register after a lost answer: the pool exists though the register failed; the next pass settles",
		in:       input(wants(nvmePool()), observed(pool("nvme", "LVM_THIN"))),
		discover: &discovered{previous: &linstorv1.DiscoveryStatus{Pools: []linstorv1.DiscoveryPoolStatus{{Name: "nvme", State: linstorv1.PoolRegistering}}, Disks: []linstorv1.DiskStatus{claimed(nvme0, "nvme")}}},
		check: func(t *testing.T, p pass) {
			if st := p.pool(t, "nvme"); st.State != linstorv1.PoolCreated {
				t.Errorf("pool: %+v", st)
			}
		},
	},
	{
		// discovery_test: a node with no matching disk.
		name:            "no matching disk: the pool waits for disks (not a fault)",
		in:              input(wants(nvmePool())),
		discover:        &discovered{listed: []discovery.Disk{small}},
		waitingForDisks: []string{"pool nvme: "},
	},
	{
		// discovery_test TestDiscoveryDryRunClaimsNothing.
		name: "a dry run claims nothing",
		in: input(wants(func() Wanted {
			w := nvmePool()
			w.Spec.Source.Discover.DryRun = true
			return w
		}())),
		discover: &discovered{listed: []discovery.Disk{nvme0, nvme1}},
		check: func(t *testing.T, p pass) {
			if st := p.pool(t, "nvme"); st.State != linstorv1.PoolDryRun {
				t.Errorf("pool: %+v", st)
			}
			if d := p.disk(t, nvme0.Device); d.State != linstorv1.DiskWouldClaim {
				t.Errorf("disk: %+v", d)
			}
		},
	},
	{
		// discovery_test TestDiscoveryDiskMatchedByTwoPoolsIsClaimedByNone.
		name: "a disk two pools match is claimed by neither, and both say why",
		in: input(wants(nvmePool(), func() Wanted {
			w := thin("samsung")
			w.Spec.Source = &linstorv1.StoragePoolSource{Discover: &linstorv1.DiskDiscovery{Models: []string{"SAMSUNG*"}}}
			return w
		}())),
		discover:        &discovered{listed: []discovery.Disk{nvme0, small}},
		waitingForDisks: []string{"pool nvme: No disk to claim: /dev/nvme0n1 is also matched by another pool", "pool samsung: No disk to claim: /dev/nvme0n1 is also matched by another pool"},
		check: func(t *testing.T, p pass) {
			if d := p.disk(t, nvme0.Device); d.Reason != "MatchedTwice" {
				t.Errorf("nvme0: %+v", d)
			}
		},
	},
	{
		name:            "listing failed: a problem, reported first",
		in:              input(wants(nvmePool(), refused(thin("thin"), "Foo: unknown")), observed(pool("thin", "LVM_THIN")), managed(`["thin"]`)),
		discover:        &discovered{previous: &linstorv1.DiscoveryStatus{Pools: []linstorv1.DiscoveryPoolStatus{{Name: "nvme", State: linstorv1.PoolWaitingForDisks, Message: "No disk"}}}, listErr: "listing the node's unused disks: boom"},
		problem:         "listing the node's unused disks: boom; pool thin: LINSTOR does not accept properties: Foo: unknown",
		waitingForDisks: []string{"pool nvme: No disk"},
	},
	{
		name:     "offline node: nothing is claimed",
		in:       input(wants(nvmePool()), connection("OFFLINE")),
		discover: &discovered{previous: &linstorv1.DiscoveryStatus{Disks: []linstorv1.DiskStatus{claimed(nvme0, "nvme")}}},
		pending:  "waiting for the satellite to be ONLINE (it is OFFLINE) to create pool nvme",
	},
	{
		name:     "fenced: the claim waits before it is recorded",
		in:       input(wants(nvmePool()), fenced()),
		discover: &discovered{listed: []discovery.Disk{nvme0}},
		fenced:   []string{"pool nvme: creating it"},
		check: func(t *testing.T, p pass) {
			if st := p.pool(t, "nvme"); st.ClaimTime != nil {
				t.Errorf("a claim time was recorded for a claim that waits: %+v", st)
			}
		},
	},
	{
		name:     "nothing to discover nor remember: the discovery status is cleared",
		in:       input(wants(thin("thin")), observed(pool("thin", "LVM_THIN")), managed(`["thin"]`)),
		discover: &discovered{previous: &linstorv1.DiscoveryStatus{}},
		check: func(t *testing.T, p pass) {
			if p.out.Discovery != nil {
				t.Errorf("discovery: %+v", p.out.Discovery)
			}
		},
	},
}

func TestPools(t *testing.T)     { runRows(t, poolRows) }
func TestDiscovery(t *testing.T) { runRows(t, discoveryRows) }

func TestStatuses(t *testing.T) {
	for _, tc := range []struct {
		name     string
		observed []Pool
		observe  bool
		wanted   int
		want     []linstorv1.StoragePoolStatus
		summary  string
	}{
		{name: "not observed: the status keeps what it has"},
		{name: "observed, none", observe: true, wanted: 1, summary: "0/1"},
		{
			name: "capacity in bytes, diskless left out, ready when it has capacity", observe: true, wanted: 2,
			observed: []Pool{{Name: "DfltDisklessStorPool", ProviderKind: "DISKLESS"}, {Name: "thin", ProviderKind: "LVM_THIN", FreeCapacity: 1024, TotalCapacity: 2048}, {Name: "new", ProviderKind: "LVM"}},
			want: []linstorv1.StoragePoolStatus{
				{Name: "thin", ProviderKind: "LVM_THIN", FreeCapacity: resource.NewQuantity(1<<20, resource.BinarySI), TotalCapacity: resource.NewQuantity(2<<20, resource.BinarySI)},
				{Name: "new", ProviderKind: "LVM", FreeCapacity: resource.NewQuantity(0, resource.BinarySI), TotalCapacity: resource.NewQuantity(0, resource.BinarySI)},
			},
			summary: "1/2",
		},
		{
			name: "errors carried, bounded", observe: true, wanted: 2,
			observed: []Pool{
				{Name: "thin", ProviderKind: "LVM_THIN", Errors: []string{"Node: 'n1', storage pool: 'thin' - Failed to query free space from storage pool: Thin pool 'vg/thin' does not exist."}},
				{Name: "many", ProviderKind: "LVM_THIN", FreeCapacity: 1, TotalCapacity: 1, Errors: append(slices.Repeat([]string{"e"}, MaxErrors+3), strings.Repeat("é", MaxErrorLength))},
			},
			want: []linstorv1.StoragePoolStatus{
				{Name: "thin", ProviderKind: "LVM_THIN", FreeCapacity: resource.NewQuantity(0, resource.BinarySI), TotalCapacity: resource.NewQuantity(0, resource.BinarySI),
					Errors: []string{"Node: 'n1', storage pool: 'thin' - Failed to query free space from storage pool: Thin pool 'vg/thin' does not exist."}},
				{Name: "many", ProviderKind: "LVM_THIN", FreeCapacity: resource.NewQuantity(1024, resource.BinarySI), TotalCapacity: resource.NewQuantity(1024, resource.BinarySI),
					Errors: append(slices.Repeat([]string{"e"}, MaxErrors-1), "and 5 more errors")},
			},
			summary: "1/2",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o Outcome
			if tc.observe {
				o.Observe(tc.observed)
			}
			got, summary, ok := o.Statuses(tc.wanted)
			if ok != tc.observe || summary != tc.summary || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v %q %t", got, summary, ok)
			}
		})
	}
}

func TestStatusErrorsTruncated(t *testing.T) {
	long := strings.Repeat("é", MaxErrorLength) // 2 bytes each
	got := statusErrors([]string{long})
	if len(got) != 1 || len(got[0]) > MaxErrorLength || !strings.HasSuffix(got[0], "…") || !utf8.ValidString(got[0]) {
		t.Errorf("truncated to %d bytes: %q", len(got[0]), got[0])
	}
	if got := statusErrors(slices.Repeat([]string{"e"}, MaxErrors)); len(got) != MaxErrors || got[MaxErrors-1] != "e" {
		t.Errorf("exactly %d errors: %q", MaxErrors, got)
	}
}
