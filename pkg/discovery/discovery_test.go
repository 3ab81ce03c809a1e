package discovery

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

const (
	gib = int64(1) << 30
	tib = int64(1) << 40
)

// Disks as lsblk reports them on real machines.
var (
	nvme0 = Disk{Device: "/dev/nvme0n1", Size: 1788 * gib, Model: "SAMSUNG MZQL21T9HCJR-00A07", Serial: "S64GNE0R100001", WWN: "eui.36344730523000010025384500000001"}
	nvme1 = Disk{Device: "/dev/nvme1n1", Size: 1788 * gib, Model: "SAMSUNG MZQL21T9HCJR-00A07", Serial: "S64GNE0R100002", WWN: "eui.36344730523000020025384500000001"}
	small = Disk{Device: "/dev/nvme2n1", Size: 960 * gib, Model: "INTEL SSDPE2KX010T8", Serial: "PHLJ0000000A1P0FGN", WWN: "eui.01000000010000005cd2e4a1b2c3d4e5"}
	hdd   = Disk{Device: "/dev/sdb", Size: 8 * tib, Rotational: true, Model: "ST8000NM000A-2KE1", Serial: "WKD0AAAA", WWN: "0x5000c500c1a2b3c4"}
	hdd2  = Disk{Device: "/dev/sdc", Size: 8 * tib, Rotational: true, Model: "ST8000NM000A-2KE1", Serial: "WKD0BBBB", WWN: "0x5000c500c1a2b3c5"}
	vd    = Disk{Device: "/dev/vdb", Size: 100 * gib, Serial: "data-1"}
)

func q(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

var (
	fast = Pool{Name: "fast", Match: linstorv1.DiskDiscovery{Rotational: ptr.To(false), MinSize: q("1Ti"), AllowAnyDisk: true}}
	bulk = Pool{Name: "bulk", Match: linstorv1.DiskDiscovery{Rotational: ptr.To(true), AllowAnyDisk: true}}
)

func poolPlan(t *testing.T, p Plan, name string) PoolPlan {
	t.Helper()
	for _, pp := range p.Pools {
		if pp.Status.Name == name {
			return pp
		}
	}
	t.Fatalf("no plan for pool %s in %+v", name, p.Pools)
	return PoolPlan{}
}

func disk(t *testing.T, p Plan, device string) linstorv1.DiskStatus {
	t.Helper()
	for _, d := range p.Disks {
		if d.Device == device {
			return d
		}
	}
	t.Fatalf("no status for disk %s in %+v", device, p.Disks)
	return linstorv1.DiskStatus{}
}

func TestStableNames(t *testing.T) {
	for _, tc := range []struct {
		disk Disk
		want string
	}{
		{nvme0, "/dev/disk/by-id/nvme-eui.36344730523000010025384500000001"},
		{hdd, "/dev/disk/by-id/wwn-0x5000c500c1a2b3c4"},
		{vd, "/dev/disk/by-id/virtio-data-1"},
		{Disk{Device: "/dev/sdd", Serial: "only-serial"}, ""},                 // SCSI by-id needs the WWN
		{Disk{Device: "/dev/vdc"}, ""},                                        // a virtio disk without serial has no by-id link
		{Disk{Device: "/dev/sde", WWN: "0x50 00"}, ""},                        // udev would rewrite the space
		{Disk{Device: "/dev/xvdb", WWN: "0x5000c500c1a2b3c4"}, ""},            // another bus: unknown rule
		{Disk{Device: "/dev/nvme3n1", Serial: "S64GNE0R100003", WWN: ""}, ""}, // the model_serial link changed across systemd versions
	} {
		if got := StableName(tc.disk); got != tc.want {
			t.Errorf("StableName(%s) = %q, want %q", tc.disk.Device, got, tc.want)
		}
	}
}

func TestHeterogeneousNodesGetTheirOwnDisks(t *testing.T) {
	pools := []Pool{fast, bulk}
	// Node a: two large NVMe, one HDD, one NVMe too small for fast.
	a := Decide(Input{Pools: pools, Listed: []Disk{hdd, small, nvme1, nvme0}})
	if pp := poolPlan(t, a, "fast"); pp.Action != Claim || strings.Join(pp.Devices, ",") != StableName(nvme0)+","+StableName(nvme1) {
		t.Errorf("fast on a: %v %v", pp.Action, pp.Devices)
	}
	if pp := poolPlan(t, a, "bulk"); pp.Action != Claim || strings.Join(pp.Devices, ",") != StableName(hdd) {
		t.Errorf("bulk on a: %v %v", pp.Action, pp.Devices)
	}
	if d := disk(t, a, small.Device); d.State != linstorv1.DiskSkipped || d.Reason != "NoMatch" ||
		!strings.Contains(d.Message, "fast: smaller than minSize 1Ti") || !strings.Contains(d.Message, "bulk: not rotational") {
		t.Errorf("small disk: %+v", d)
	}
	if d := disk(t, a, nvme0.Device); d.State != linstorv1.DiskClaimed || d.Pool != "fast" || d.StableName != StableName(nvme0) || d.Size.Value() != nvme0.Size {
		t.Errorf("nvme0: %+v", d)
	}
	// Node b: only a small NVMe: fast waits, bulk waits, nothing is claimed.
	b := Decide(Input{Pools: pools, Listed: []Disk{small}})
	for _, name := range []string{"fast", "bulk"} {
		if pp := poolPlan(t, b, name); pp.Action != None || pp.Status.State != linstorv1.PoolWaitingForDisks {
			t.Errorf("%s on b: %+v", name, pp)
		}
	}
}

func TestMatchers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		match linstorv1.DiskDiscovery
		disk  Disk
		why   string // "" when it matches
	}{
		{"min size", linstorv1.DiskDiscovery{MinSize: q("1Ti")}, small, "smaller than minSize 1Ti"},
		{"max size", linstorv1.DiskDiscovery{MaxSize: q("1Ti")}, nvme0, "larger than maxSize 1Ti"},
		{"size bounds inclusive", linstorv1.DiskDiscovery{MinSize: q("960Gi"), MaxSize: q("960Gi")}, small, ""},
		{"solid state only", linstorv1.DiskDiscovery{Rotational: ptr.To(false)}, hdd, "rotational"},
		{"spinning only", linstorv1.DiskDiscovery{Rotational: ptr.To(true)}, nvme0, "not rotational"},
		{"media solid state", linstorv1.DiskDiscovery{Media: linstorv1.DiskMediaSolidState}, hdd, "rotational"},
		{"media rotational", linstorv1.DiskDiscovery{Media: linstorv1.DiskMediaRotational}, nvme0, "not rotational"},
		{"media any", linstorv1.DiskDiscovery{Media: linstorv1.DiskMediaAny, MinSize: q("1Ti")}, hdd, ""},
		{"model glob", linstorv1.DiskDiscovery{Models: []string{"INTEL*", "SAMSUNG MZQL2*"}}, nvme0, ""},
		{"model glob misses", linstorv1.DiskDiscovery{Models: []string{"INTEL*"}}, nvme0, `model "SAMSUNG MZQL21T9HCJR-00A07" matches none of INTEL*`},
		{"kernel path glob", linstorv1.DiskDiscovery{DevicePaths: []string{"/dev/nvme*"}}, nvme1, ""},
		{"by-id glob", linstorv1.DiskDiscovery{DevicePaths: []string{"/dev/disk/by-id/wwn-0x5000c500*"}}, hdd, ""},
		{"by-id glob misses a disk without a stable name", linstorv1.DiskDiscovery{DevicePaths: []string{"/dev/disk/by-id/*"}}, Disk{Device: "/dev/vdc", Size: 10 * gib}, "path matches none of /dev/disk/by-id/*"},
		{"all fields must match", linstorv1.DiskDiscovery{Rotational: ptr.To(false), DevicePaths: []string{"/dev/sd*"}}, nvme0, "path matches none of /dev/sd*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mismatch(&tc.match, tc.disk, StableName(tc.disk)); got != tc.why {
				t.Errorf("mismatch = %q, want %q", got, tc.why)
			}
		})
	}
}

func TestADiskMatchedByTwoPoolsIsClaimedByNone(t *testing.T) {
	ssd := Pool{Name: "ssd", Match: linstorv1.DiskDiscovery{Rotational: ptr.To(false), AllowAnyDisk: true}}
	samsung := Pool{Name: "samsung", Match: linstorv1.DiskDiscovery{Models: []string{"SAMSUNG*"}}}
	p := Decide(Input{Pools: []Pool{ssd, samsung}, Listed: []Disk{nvme0, small}})
	if d := disk(t, p, nvme0.Device); d.State != linstorv1.DiskSkipped || d.Reason != "MatchedTwice" || !strings.Contains(d.Message, "ssd and samsung") {
		t.Errorf("nvme0: %+v", d)
	}
	// ssd still claims the disk only it matches, and says which one it left.
	if pp := poolPlan(t, p, "ssd"); pp.Action != Claim || len(pp.Disks) != 1 || pp.Disks[0] != small || !strings.Contains(pp.Status.Message, "not /dev/nvme0n1") {
		t.Errorf("ssd: %+v", pp)
	}
	// samsung has nothing left, and says why.
	if pp := poolPlan(t, p, "samsung"); pp.Action != None || pp.Status.State != linstorv1.PoolWaitingForDisks || !strings.Contains(pp.Status.Message, "/dev/nvme0n1 is also matched by another pool") {
		t.Errorf("samsung: %+v", pp)
	}
}

func TestDryRunClaimsNothing(t *testing.T) {
	dry := fast
	dry.Match.DryRun = true
	p := Decide(Input{Pools: []Pool{dry}, Listed: []Disk{nvme0, nvme1}})
	pp := poolPlan(t, p, "fast")
	if pp.Action != None || len(pp.Devices) != 0 || pp.Status.State != linstorv1.PoolDryRun || len(pp.Status.Claimed) != 0 {
		t.Fatalf("dry run: %+v", pp)
	}
	for _, d := range p.Disks {
		if d.State != linstorv1.DiskWouldClaim || d.Pool != "fast" {
			t.Errorf("disk %s: %+v", d.Device, d)
		}
	}
}

func TestLimitPerNodeTakesDisksInDeviceOrder(t *testing.T) {
	one := fast
	one.Match.MaxDisksPerNode = ptr.To[int32](1)
	p := Decide(Input{Pools: []Pool{one}, Listed: []Disk{nvme1, nvme0}})
	if pp := poolPlan(t, p, "fast"); len(pp.Disks) != 1 || pp.Disks[0] != nvme0 {
		t.Errorf("fast: %+v", pp)
	}
	if d := disk(t, p, nvme1.Device); d.State != linstorv1.DiskSkipped || d.Reason != "LimitReached" {
		t.Errorf("nvme1: %+v", d)
	}
}

func TestHostDevicesOfAnotherPoolAreNeverDiscovered(t *testing.T) {
	// Named by kernel path or by its stable name, the disk belongs to the explicit pool.
	for _, listed := range []string{nvme0.Device, StableName(nvme0)} {
		p := Decide(Input{Pools: []Pool{fast}, HostDevices: map[string]string{listed: "manual"}, Listed: []Disk{nvme0, nvme1}})
		if d := disk(t, p, nvme0.Device); d.State != linstorv1.DiskSkipped || d.Reason != "HostDevice" || !strings.Contains(d.Message, "manual") {
			t.Errorf("listed as %s: nvme0 %+v", listed, d)
		}
		if pp := poolPlan(t, p, "fast"); len(pp.Disks) != 1 || pp.Disks[0] != nvme1 {
			t.Errorf("listed as %s: fast %+v", listed, pp)
		}
	}
}

func TestAnExistingPoolGetsNoNewDisk(t *testing.T) {
	exists := fast
	exists.Exists = true
	prev := &linstorv1.DiscoveryStatus{
		Pools: []linstorv1.DiscoveryPoolStatus{{Name: "fast", State: linstorv1.PoolClaiming, Claimed: []string{nvme0.Device}, Attempts: 1}},
		Disks: []linstorv1.DiskStatus{claimed(nvme0, "fast")},
	}
	// A disk added later that matches the pool is reported, not claimed.
	p := Decide(Input{Pools: []Pool{exists}, Listed: []Disk{nvme1}, Previous: prev})
	pp := poolPlan(t, p, "fast")
	if pp.Action != None || pp.Status.State != linstorv1.PoolCreated || strings.Join(pp.Status.Claimed, ",") != nvme0.Device {
		t.Errorf("fast: %+v", pp)
	}
	if d := disk(t, p, nvme1.Device); d.State != linstorv1.DiskSkipped || d.Reason != "PoolExists" {
		t.Errorf("nvme1: %+v", d)
	}
	// The disk claimed before is no longer listed and is remembered.
	if d := disk(t, p, nvme0.Device); d.State != linstorv1.DiskClaimed || d.Pool != "fast" {
		t.Errorf("nvme0: %+v", d)
	}
}

func claimed(d Disk, pool string) linstorv1.DiskStatus {
	st := diskStatus(d)
	st.State, st.Pool = linstorv1.DiskClaimed, pool
	return st
}

func TestAClaimIsRetriedOnlyWithTheSameStillUnusedDisks(t *testing.T) {
	attempt := func(state linstorv1.DiscoveryPoolState) *linstorv1.DiscoveryStatus {
		return &linstorv1.DiscoveryStatus{
			Pools: []linstorv1.DiscoveryPoolStatus{{Name: "fast", State: state, Claimed: []string{nvme0.Device, nvme1.Device}, Attempts: 1}},
			Disks: []linstorv1.DiskStatus{claimed(nvme0, "fast"), claimed(nvme1, "fast")},
		}
	}
	big := Disk{Device: "/dev/nvme4n1", Size: 3 * tib, WWN: "eui.99"}
	for _, tc := range []struct {
		name    string
		state   linstorv1.DiscoveryPoolState
		listed  []Disk
		action  Action
		devices string
		want    linstorv1.DiscoveryPoolState
	}{
		// The answer was lost or LINSTOR refused before touching the disks: same disks,
		// by kernel path this time.
		{"unknown outcome, untouched", linstorv1.PoolClaiming, []Disk{nvme0, nvme1, big}, Claim, "/dev/nvme0n1,/dev/nvme1n1", linstorv1.PoolClaiming},
		{"failed, untouched", linstorv1.PoolClaimFailed, []Disk{nvme1, nvme0}, Claim, "/dev/nvme0n1,/dev/nvme1n1", linstorv1.PoolClaiming},
		// LINSTOR made a PV of nvme0 and failed: nothing more, not even the new big disk.
		{"partly done", linstorv1.PoolClaimFailed, []Disk{nvme1, big}, None, "", linstorv1.PoolClaimFailed},
		{"unknown outcome, disks in use", linstorv1.PoolClaiming, []Disk{big}, None, "", linstorv1.PoolClaimFailed},
		// Not listed in this pass: wait to know.
		{"not listed", linstorv1.PoolClaiming, nil, None, "", linstorv1.PoolClaiming},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(Input{Pools: []Pool{fast}, Listed: tc.listed, Previous: attempt(tc.state)})
			pp := poolPlan(t, p, "fast")
			if pp.Action != tc.action || strings.Join(pp.Devices, ",") != tc.devices || pp.Status.State != tc.want {
				t.Fatalf("got %v %v %s (%s)", pp.Action, pp.Devices, pp.Status.State, pp.Status.Message)
			}
			if tc.action == Claim {
				if pp.Status.Attempts != 2 {
					t.Errorf("attempts = %d", pp.Status.Attempts)
				}
				for _, dev := range []string{nvme0.Device, nvme1.Device} {
					if d := disk(t, p, dev); d.State != linstorv1.DiskClaimed || d.Pool != "fast" {
						t.Errorf("retried disk %s: %+v", dev, d)
					}
				}
			}
			for _, d := range p.Disks {
				if d.Device == big.Device && d.State != linstorv1.DiskSkipped {
					t.Errorf("the new disk is %s", d.State)
				}
			}
		})
	}
}

func TestAPoolAddedBackIsRegisteredOnItsDisks(t *testing.T) {
	// fast was created from nvme0, then removed from the spec (the LINSTOR pool deleted,
	// the VG left on the disk), then added back.
	prev := &linstorv1.DiscoveryStatus{Disks: []linstorv1.DiskStatus{claimed(nvme0, "fast")}}
	p := Decide(Input{Pools: []Pool{fast}, Listed: []Disk{nvme1}, Previous: prev})
	pp := poolPlan(t, p, "fast")
	if pp.Action != Register || len(pp.Devices) != 0 || pp.Status.State != linstorv1.PoolRegistering {
		t.Fatalf("fast: %+v", pp)
	}
	if d := disk(t, p, nvme1.Device); d.State == linstorv1.DiskClaimed {
		t.Errorf("a new disk was claimed for a pool that has disks: %+v", d)
	}
	// While the pool is out of the spec, its disks are remembered and say why.
	p = Decide(Input{Listed: []Disk{nvme1}, Previous: prev})
	if d := disk(t, p, nvme0.Device); d.State != linstorv1.DiskClaimed || !strings.Contains(d.Message, "no longer in the spec") {
		t.Errorf("nvme0: %+v", d)
	}
}

func TestADiskWipedByTheAdminIsOfferedAgain(t *testing.T) {
	prev := &linstorv1.DiscoveryStatus{Disks: []linstorv1.DiskStatus{claimed(nvme0, "gone")}}
	p := Decide(Input{Pools: []Pool{fast}, Listed: []Disk{nvme0}, Previous: prev})
	if pp := poolPlan(t, p, "fast"); pp.Action != Claim || len(pp.Disks) != 1 {
		t.Errorf("fast: %+v", pp)
	}
	n := 0
	for _, d := range p.Disks {
		if d.Device == nvme0.Device {
			n++
		}
	}
	if n != 1 {
		t.Errorf("nvme0 reported %d times", n)
	}
}

func TestListingIsDueOnlyWhileAPoolIsMissing(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration, gen int64) *linstorv1.DiscoveryStatus {
		return &linstorv1.DiscoveryStatus{ListedAt: &metav1.Time{Time: now.Add(-ago)}, ObservedGeneration: gen}
	}
	exists := fast
	exists.Exists = true
	for _, tc := range []struct {
		name  string
		pools []Pool
		prev  *linstorv1.DiscoveryStatus
		want  bool
	}{
		{"never listed", []Pool{fast}, nil, true},
		{"listed a moment ago", []Pool{fast}, at(time.Second, 3), false},
		{"spec changed since", []Pool{fast}, at(time.Second, 2), true},
		{"interval passed", []Pool{fast}, at(RelistEvery, 3), true},
		{"every pool exists", []Pool{exists}, nil, false},
		{"one of two missing", []Pool{exists, bulk}, at(RelistEvery+time.Second, 3), true},
		{"no discovery pool", nil, nil, false},
	} {
		if got := ListDue(tc.pools, tc.prev, 3, now, RelistEvery); got != tc.want {
			t.Errorf("%s: ListDue = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAClaimIsNotRetriedOnDisksTheSpecNoLongerGivesThePool(t *testing.T) {
	prev := &linstorv1.DiscoveryStatus{
		Pools: []linstorv1.DiscoveryPoolStatus{{Name: "fast", State: linstorv1.PoolClaimFailed, Claimed: []string{nvme0.Device}, Attempts: 1}},
		Disks: []linstorv1.DiskStatus{claimed(nvme0, "fast")},
	}
	narrowed := fast
	narrowed.Match.Models = []string{"INTEL*"}
	samsung := Pool{Name: "samsung", Match: linstorv1.DiskDiscovery{Models: []string{"SAMSUNG*"}}}
	for _, tc := range []struct {
		name  string
		in    Input
		cause string
	}{
		{"no longer matches", Input{Pools: []Pool{narrowed}, Listed: []Disk{nvme0, nvme1}, Previous: prev}, "/dev/nvme0n1 (no longer matched by this pool alone"},
		{"now matched twice", Input{Pools: []Pool{fast, samsung}, Listed: []Disk{nvme0}, Previous: prev}, "/dev/nvme0n1 (no longer matched by this pool alone"},
		{"now a host device", Input{Pools: []Pool{fast}, HostDevices: map[string]string{nvme0.Device: "manual"}, Listed: []Disk{nvme0}, Previous: prev}, "/dev/nvme0n1 (no longer matched by this pool alone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(tc.in)
			pp := poolPlan(t, p, "fast")
			if pp.Action != None || pp.Status.State != linstorv1.PoolClaimFailed || !strings.Contains(pp.Status.Message, tc.cause) {
				t.Fatalf("fast: %v %s %q", pp.Action, pp.Status.State, pp.Status.Message)
			}
			for _, d := range p.Disks {
				if d.State == linstorv1.DiskClaimed && d.Device != nvme0.Device {
					t.Errorf("claimed %s", d.Device)
				}
			}
		})
	}
}
