package discovery

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Devices LINSTOR lists as unused on real hosts that are not free disks: its filter
// (LsBlkUtils.filterDeviceCandidates) has no TYPE check.
var (
	loopOverDRBD = Disk{Device: "/dev/loop3", Size: 20 * gib}                       // kubelet's loop device of a raw-block PV in use
	zvol         = Disk{Device: "/dev/zd16", Size: 50 * gib}                        // a zvol of a zpool
	mdArray      = Disk{Device: "/dev/md127", Size: 2 * tib}                        // software RAID
	dmCrypt      = Disk{Device: "/dev/mapper/luks-data", Size: 500 * gib}           // dm-crypt or LVM LV without signature
	dmKernel     = Disk{Device: "/dev/dm-3", Size: 500 * gib}                       // the same as a kernel name
	rbdImage     = Disk{Device: "/dev/rbd0", Size: 100 * gib}                       // a Ceph image mapped by its CSI
	nbdDev       = Disk{Device: "/dev/nbd0", Size: 100 * gib}                       // a network block device
	drbdDev      = Disk{Device: "/dev/drbd1000", Size: 100 * gib}                   // DRBD itself (LINSTOR filters major 147)
	optical      = Disk{Device: "/dev/sr0", Size: 4 * gib}                          // a DVD in its drive
	ramDisk      = Disk{Device: "/dev/ram0", Size: 2 * gib}                         // brd
	zram         = Disk{Device: "/dev/zram0", Size: 8 * gib}                        // compressed swap not yet mkswapped
	pmem         = Disk{Device: "/dev/pmem0", Size: 256 * gib, Serial: "pmem-0001"} // unknown to discovery
	partition    = Disk{Device: "/dev/sda1", Size: 100 * gib}                       // never listed by LINSTOR, never a disk by name
	nvmePart     = Disk{Device: "/dev/nvme0n1p2", Size: 100 * gib}
	nvmeHidden   = Disk{Device: "/dev/nvme0c0n1", Size: 1788 * gib} // a controller path of native NVMe multipath
)

// anyDisk is the docs' old hdd example: size only, acknowledged.
var anyDisk = Pool{Name: "any", Match: linstorv1.DiskDiscovery{MinSize: q("1Gi"), AllowAnyDisk: true}}

func TestDeviceKinds(t *testing.T) {
	for _, tc := range []struct {
		dev  string
		want Kind
	}{
		{"/dev/sda", PhysicalDisk}, {"/dev/sdaa", PhysicalDisk}, {"/dev/nvme0n1", PhysicalDisk}, {"/dev/nvme12n3", PhysicalDisk},
		{"/dev/vdb", PhysicalDisk}, {"/dev/xvdf", PhysicalDisk}, {"/dev/hdb", PhysicalDisk}, {"/dev/mmcblk0", PhysicalDisk}, {"/dev/dasda", PhysicalDisk},
		{"/dev/sda1", UnknownKind}, {"/dev/nvme0n1p2", UnknownKind}, {"/dev/nvme0c0n1", UnknownKind}, {"/dev/mmcblk0p1", UnknownKind},
		{"/dev/mmcblk0boot0", UnknownKind}, {"/dev/pmem0", UnknownKind}, {"/dev/bcache0", UnknownKind}, {"/dev/disk/by-id/wwn-0x5", UnknownKind},
		{"/dev/loop0", NeverClaimed}, {"/dev/loop12", NeverClaimed}, {"/dev/zd0", NeverClaimed}, {"/dev/zd16", NeverClaimed},
		{"/dev/md127", NeverClaimed}, {"/dev/md/data", NeverClaimed}, {"/dev/dm-0", NeverClaimed}, {"/dev/mapper/vg-lv", NeverClaimed},
		{"/dev/drbd1000", NeverClaimed}, {"/dev/rbd0", NeverClaimed}, {"/dev/nbd3", NeverClaimed}, {"/dev/sr0", NeverClaimed},
		{"/dev/ram0", NeverClaimed}, {"/dev/zram0", NeverClaimed}, {"/dev/zvol/tank/vol1", NeverClaimed},
	} {
		if got, what := DeviceKind(tc.dev); got != tc.want {
			t.Errorf("DeviceKind(%s) = %v (%s), want %v", tc.dev, got, what, tc.want)
		}
	}
}

// A size-only matcher on a host with everything a real host has claims only the
// physical disks, and says for each other device why it is left alone.
func TestOnlyWholePhysicalDisksAreClaimed(t *testing.T) {
	listed := []Disk{hdd, nvme0, loopOverDRBD, zvol, mdArray, dmCrypt, dmKernel, rbdImage, nbdDev, drbdDev, optical, ramDisk, zram, pmem, partition, nvmePart, nvmeHidden}
	p := Decide(Input{Pools: []Pool{anyDisk}, Listed: listed})
	pp := poolPlan(t, p, "any")
	var claimed []string
	for _, d := range pp.Disks {
		claimed = append(claimed, d.Device)
	}
	if pp.Action != Claim || strings.Join(claimed, ",") != "/dev/nvme0n1,/dev/sdb" {
		t.Fatalf("claimed %v (action %v), want only the physical disks /dev/nvme0n1 and /dev/sdb", claimed, pp.Action)
	}
	for _, d := range []Disk{loopOverDRBD, zvol, mdArray, dmCrypt, dmKernel, rbdImage, nbdDev, drbdDev, optical, ramDisk, zram} {
		if st := disk(t, p, d.Device); st.State != linstorv1.DiskSkipped || st.Reason != ReasonNotAPhysicalDisk || !strings.Contains(st.Message, "never claims it") {
			t.Errorf("%s: %s %s %q, want Skipped NotAPhysicalDisk", d.Device, st.State, st.Reason, st.Message)
		}
	}
	for _, d := range []Disk{pmem, partition, nvmePart, nvmeHidden} {
		if st := disk(t, p, d.Device); st.State != linstorv1.DiskSkipped || st.Reason != "NoMatch" || !strings.Contains(st.Message, "only a devicePaths entry naming it exactly claims it") {
			t.Errorf("%s: %s %s %q, want Skipped NoMatch (unknown kind)", d.Device, st.State, st.Reason, st.Message)
		}
	}
	if st := disk(t, p, loopOverDRBD.Device); !strings.Contains(st.Message, "raw-block volume") {
		t.Errorf("the loop device's message does not say what it is: %q", st.Message)
	}
}

// Naming a device exactly claims a kind discovery does not know; a wildcard does not,
// and nothing claims a device that may hold someone's data.
func TestOnlyAnExactDevicePathClaimsAnUnknownKind(t *testing.T) {
	for _, tc := range []struct {
		name  string
		paths []string
		disk  Disk
		claim bool
	}{
		{"exact pmem", []string{"/dev/pmem0"}, pmem, true},
		{"glob pmem", []string{"/dev/pmem*"}, pmem, false},
		{"exact loop", []string{"/dev/loop3"}, loopOverDRBD, false},
		{"exact zvol", []string{"/dev/zd16"}, zvol, false},
		{"exact md", []string{"/dev/md127"}, mdArray, false},
		{"glob everything", []string{"/dev/*"}, loopOverDRBD, false},
		{"glob physical", []string{"/dev/sd*"}, hdd, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := Pool{Name: "p", Match: linstorv1.DiskDiscovery{DevicePaths: tc.paths}}
			pp := poolPlan(t, Decide(Input{Pools: []Pool{pool}, Listed: []Disk{tc.disk}}), "p")
			if got := pp.Action == Claim; got != tc.claim {
				t.Errorf("claims %s = %v, want %v (%s)", tc.disk.Device, got, tc.claim, pp.Status.Message)
			}
		})
	}
}

// Two paths to one disk (dual-path SAS, an iSCSI LUN over two portals, without
// multipathd): both are listed unused with one WWN; a pool on each path would write
// the same disk twice. Neither is claimed.
func TestTwoPathsToOneDiskAreClaimedByNone(t *testing.T) {
	pathA := Disk{Device: "/dev/sdc", Size: 4 * tib, Model: "PERC H755", Serial: "SAS-0001", WWN: "0x6000c29a00000001"}
	pathB := pathA
	pathB.Device = "/dev/sdd"
	// Without WWNs, the serial tells: two paths of a disk behind a USB bridge.
	serialA := Disk{Device: "/dev/sde", Size: 4 * tib, Model: "USB bridge", Serial: "USB-0001"}
	serialB := serialA
	serialB.Device = "/dev/sdh"
	// The namespaces of one NVMe controller share its serial and differ in WWN: two disks.
	ns1 := Disk{Device: "/dev/nvme4n1", Size: 2 * tib, Model: "KIOXIA CM6", Serial: "CTRL-SERIAL-1", WWN: "eui.00000000000000018ce38e0300000001"}
	ns2 := Disk{Device: "/dev/nvme4n2", Size: 2 * tib, Model: "KIOXIA CM6", Serial: "CTRL-SERIAL-1", WWN: "eui.00000000000000018ce38e0300000002"}
	p := Decide(Input{Pools: []Pool{anyDisk}, Listed: []Disk{pathA, pathB, serialA, serialB, nvme0, ns1, ns2}})
	for _, d := range []Disk{pathA, pathB, serialA, serialB} {
		if st := disk(t, p, d.Device); st.State != linstorv1.DiskSkipped || st.Reason != ReasonSameIdentityTwice {
			t.Errorf("%s: %s %s %q, want Skipped SameIdentityTwice", d.Device, st.State, st.Reason, st.Message)
		}
	}
	if pp := poolPlan(t, p, "any"); pp.Action != Claim || len(pp.Disks) != 3 || pp.Disks[0] != nvme0 || pp.Disks[1] != ns1 || pp.Disks[2] != ns2 {
		t.Errorf("any: %+v, want nvme0 and both namespaces of nvme4 claimed", pp)
	}
}

// A disk that reports neither WWN nor serial (a VMDK without disk.EnableUUID, a virtio
// disk without serial, a libvirt shareable disk) cannot be told from a disk another
// machine sees: only an exact devicePaths entry claims it.
func TestADiskWithoutIdentityIsClaimedOnlyWhenNamed(t *testing.T) {
	bare := Disk{Device: "/dev/sdb", Size: 100 * gib, Model: "Virtual disk"}
	if pp := poolPlan(t, Decide(Input{Pools: []Pool{anyDisk}, Listed: []Disk{bare}}), "any"); pp.Action == Claim {
		t.Errorf("an identity-less disk was claimed by a size-only matcher")
	}
	glob := Pool{Name: "g", Match: linstorv1.DiskDiscovery{DevicePaths: []string{"/dev/sd*"}}}
	if pp := poolPlan(t, Decide(Input{Pools: []Pool{glob}, Listed: []Disk{bare}}), "g"); pp.Action == Claim {
		t.Errorf("an identity-less disk was claimed by a glob")
	}
	named := Pool{Name: "n", Match: linstorv1.DiskDiscovery{DevicePaths: []string{"/dev/sdb"}}}
	if pp := poolPlan(t, Decide(Input{Pools: []Pool{named}, Listed: []Disk{bare}}), "n"); pp.Action != Claim {
		t.Errorf("an identity-less disk named exactly was not claimed: %q", pp.Status.Message)
	}
}

// Patterns that match every disk narrow nothing: the matcher still needs allowAnyDisk.
func TestCatchAllPatternsNeedAcknowledgement(t *testing.T) {
	for _, tc := range []struct {
		m    linstorv1.DiskDiscovery
		want bool
	}{
		{linstorv1.DiskDiscovery{MinSize: q("1Ti")}, true},
		{linstorv1.DiskDiscovery{Models: []string{"*"}}, true},
		{linstorv1.DiskDiscovery{DevicePaths: []string{"/dev/*"}}, true},
		{linstorv1.DiskDiscovery{DevicePaths: []string{"/dev/sd*", "/dev/*"}}, true},
		{linstorv1.DiskDiscovery{Models: []string{"*"}, DevicePaths: []string{"/dev/nvme*"}}, false},
		{linstorv1.DiskDiscovery{Models: []string{"SAMSUNG*"}}, false},
		{linstorv1.DiskDiscovery{DevicePaths: []string{"/dev/disk/by-id/nvme-*"}}, false},
		{linstorv1.DiskDiscovery{MinSize: q("1Ti"), AllowAnyDisk: true}, false},
	} {
		if got := NeedsAcknowledgement(&tc.m); got != tc.want {
			t.Errorf("NeedsAcknowledgement(%+v) = %v, want %v", tc.m, got, tc.want)
		}
	}
}

// A SAN LUN zoned to several nodes: another node reports the same WWN. Claiming it
// here would write under that node's feet, whatever it does with it.
func TestALunSeenOnAnotherNodeIsClaimedByNone(t *testing.T) {
	lun := Disk{Device: "/dev/sdf", Size: 10 * tib, Model: "NETAPP LUN", Serial: "80ABCDEF", WWN: "0x600a098038303053453f463045726b30"}
	elsewhere := map[string]string{}
	for _, k := range IdentityKeys(claimed(lun, "san")) {
		elsewhere[k] = "node-b"
	}
	p := Decide(Input{Pools: []Pool{anyDisk}, Listed: []Disk{lun, nvme0}, Elsewhere: elsewhere})
	if st := disk(t, p, lun.Device); st.State != linstorv1.DiskSkipped || st.Reason != ReasonSeenOnOtherNode || !strings.Contains(st.Message, "node-b") {
		t.Errorf("lun: %s %s %q, want Skipped SeenOnOtherNode naming node-b", st.State, st.Reason, st.Message)
	}
	if pp := poolPlan(t, p, "any"); len(pp.Disks) != 1 || pp.Disks[0] != nvme0 {
		t.Errorf("any: %+v, want only nvme0", pp)
	}
	// A retry of a claim sent before the other node reported the LUN is not sent again.
	prev := &linstorv1.DiscoveryStatus{
		Pools: []linstorv1.DiscoveryPoolStatus{{Name: "any", State: linstorv1.PoolClaiming, Claimed: []string{lun.Device}, Attempts: 1}},
		Disks: []linstorv1.DiskStatus{claimed(lun, "any")},
	}
	pp := poolPlan(t, Decide(Input{Pools: []Pool{anyDisk}, Listed: []Disk{lun}, Previous: prev, Elsewhere: elsewhere}), "any")
	if pp.Action != None || pp.Status.State != linstorv1.PoolClaimFailed || !strings.Contains(pp.Status.Message, "node-b") {
		t.Errorf("retry of a shared LUN: %v %s %q", pp.Action, pp.Status.State, pp.Status.Message)
	}
}

// After a reboot the kernel gave /dev/sdb to another disk. The retry of a claim of the
// old /dev/sdb follows its WWN to its new path, and never claims the disk now at sdb.
func TestARetryFollowsTheDiskNotTheKernelPath(t *testing.T) {
	old := Disk{Device: "/dev/sdb", Size: 8 * tib, Rotational: true, Model: "ST8000NM000A-2KE1", Serial: "WKD0AAAA", WWN: "0x5000c500c1a2b3c4"}
	prev := &linstorv1.DiscoveryStatus{
		Pools: []linstorv1.DiscoveryPoolStatus{{Name: "bulk", State: linstorv1.PoolClaiming, Claimed: []string{"/dev/sdb"}, Attempts: 1}},
		Disks: []linstorv1.DiskStatus{claimed(old, "bulk")},
	}
	renamed := old
	renamed.Device = "/dev/sdc"
	stranger := Disk{Device: "/dev/sdb", Size: 8 * tib, Rotational: true, Model: "ST8000NM000A-2KE1", Serial: "WKD0ZZZZ", WWN: "0x5000c500c1a2ffff"}

	// The disk moved: it is claimed again at its new path.
	pp := poolPlan(t, Decide(Input{Pools: []Pool{bulk}, Listed: []Disk{stranger, renamed}, Previous: prev}), "bulk")
	if pp.Action != Claim || len(pp.Devices) != 1 || pp.Devices[0] != "/dev/sdc" || pp.Status.Claimed[0] != "/dev/sdc" {
		t.Errorf("moved: %v %v %q, want a claim of /dev/sdc", pp.Action, pp.Devices, pp.Status.Message)
	}
	// The disk is gone (it holds a PV now) and a stranger has its old path: nothing.
	pp = poolPlan(t, Decide(Input{Pools: []Pool{bulk}, Listed: []Disk{stranger}, Previous: prev}), "bulk")
	if pp.Action != None || pp.Status.State != linstorv1.PoolClaimFailed {
		t.Errorf("a stranger at the old path: %v %v %q, want nothing claimed", pp.Action, pp.Devices, pp.Status.Message)
	}
	// A disk without WWN or serial is found only at its path with its size and model.
	bare := Disk{Device: "/dev/vdc", Size: 100 * gib, Model: "QEMU HARDDISK"}
	prevBare := &linstorv1.DiscoveryStatus{
		Pools: []linstorv1.DiscoveryPoolStatus{{Name: "any", State: linstorv1.PoolClaimFailed, Claimed: []string{"/dev/vdc"}, Attempts: 1}},
		Disks: []linstorv1.DiskStatus{claimed(bare, "any")},
	}
	other := bare
	other.Size = 200 * gib
	named := Pool{Name: "any", Match: linstorv1.DiskDiscovery{DevicePaths: []string{"/dev/vdc"}}}
	if pp := poolPlan(t, Decide(Input{Pools: []Pool{named}, Listed: []Disk{other}, Previous: prevBare}), "any"); pp.Action != None {
		t.Errorf("another size at the path was claimed: %v", pp.Devices)
	}
	if pp := poolPlan(t, Decide(Input{Pools: []Pool{named}, Listed: []Disk{bare}, Previous: prevBare}), "any"); pp.Action != Claim {
		t.Errorf("the same bare disk was not retried: %q", pp.Status.Message)
	}
}

// A matcher that could take any disk (size or rotational only) claims nothing until
// allowAnyDisk acknowledges it; it reports what it would take.
func TestASizeOnlyMatcherWaitsForAcknowledgement(t *testing.T) {
	hddOnly := Pool{Name: "hdd", Match: linstorv1.DiskDiscovery{Rotational: ptr.To(true), MinSize: q("1Ti")}}
	p := Decide(Input{Pools: []Pool{hddOnly}, Listed: []Disk{hdd, hdd2}})
	pp := poolPlan(t, p, "hdd")
	if pp.Action != None || pp.Status.State != linstorv1.PoolAwaitingAcknowledgement || !strings.Contains(pp.Status.Message, "allowAnyDisk") {
		t.Fatalf("hdd: %v %s %q", pp.Action, pp.Status.State, pp.Status.Message)
	}
	if st := disk(t, p, hdd.Device); st.State != linstorv1.DiskWouldClaim || st.Pool != "hdd" {
		t.Errorf("sdb: %+v", st)
	}
	for _, narrowed := range []linstorv1.DiskDiscovery{
		{Rotational: ptr.To(true), AllowAnyDisk: true},
		{Rotational: ptr.To(true), Models: []string{"ST8000*"}},
		{Rotational: ptr.To(true), DevicePaths: []string{"/dev/sd*"}},
	} {
		pool := Pool{Name: "hdd", Match: narrowed}
		if pp := poolPlan(t, Decide(Input{Pools: []Pool{pool}, Listed: []Disk{hdd, hdd2}}), "hdd"); pp.Action != Claim || len(pp.Disks) != 2 {
			t.Errorf("%+v: %v %q, want both disks claimed", narrowed, pp.Action, pp.Status.Message)
		}
	}
}
