package controllers

import (
	"context"
	"strings"
	"testing"

	lapi "github.com/LINBIT/golinstor/client"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/emulator"
)

const (
	gib = int64(1) << 30
	tib = int64(1) << 40
)

// nvmeDisk and hddDisk are disks as lsblk and udev describe real ones: NVMe namespaces
// get nvme-<WWN> links, SCSI/SATA disks wwn-<WWN>.
func nvmeDisk(dev string, size int64, n string) emulator.Disk {
	wwn := "eui.3634473052" + n + "0025384500000001"
	return emulator.Disk{Device: dev, Size: size, Model: "SAMSUNG MZQL21T9HCJR-00A07", Serial: "S64GNE0R1000" + n, WWN: wwn,
		Links: []string{"/dev/disk/by-id/nvme-" + wwn, "/dev/disk/by-id/nvme-SAMSUNG_MZQL21T9HCJR-00A07_S64GNE0R1000" + n}}
}

func hddDisk(dev string, size int64, n string) emulator.Disk {
	wwn := "0x5000c500c1a2b3" + n
	return emulator.Disk{Device: dev, Size: size, Rotational: true, Model: "ST8000NM000A-2KE1", Serial: "WKD0AA" + n, WWN: wwn,
		Links: []string{"/dev/disk/by-id/wwn-" + wwn, "/dev/disk/by-id/ata-ST8000NM000A-2KE1_WKD0AA" + n}}
}

func quantity(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

var (
	nvmeThin = linstorv1.StoragePool{Name: "nvme", LvmThinPool: &linstorv1.LvmThinPool{},
		Source: &linstorv1.StoragePoolSource{Discover: &linstorv1.DiskDiscovery{Rotational: ptr.To(false), MinSize: quantity("1Ti"), AllowAnyDisk: true}}}
	hddZfs = linstorv1.StoragePool{Name: "hdd", ZfsPool: &linstorv1.ZfsPool{},
		Source: &linstorv1.StoragePoolSource{Discover: &linstorv1.DiskDiscovery{Rotational: ptr.To(true), AllowAnyDisk: true}}}
)

// discoveryCluster brings up a cluster whose nodes have the given disks and one
// configuration with pools, without waiting for the pools.
func discoveryCluster(t *testing.T, prefix string, pools []linstorv1.StoragePool, disks map[string][]emulator.Disk) string {
	t.Helper()
	g := NewWithT(t)
	ns := env.Namespace(t)
	i := 0
	for node, d := range disks {
		emu.SetNodeDisks(node, d...)
		makeNode(t, node, "10.5.0."+string(rune('1'+i)), map[string]string{"suite": prefix})
		i++
	}
	g.Expect(env.Client.Create(context.Background(), &linstorv1.LinstorSatelliteConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: ns}, Spec: linstorv1.LinstorSatelliteConfigurationSpec{StoragePools: pools},
	})).To(Succeed())
	makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": prefix}})
	return ns
}

func setPools(t *testing.T, ns string, pools ...linstorv1.StoragePool) {
	t.Helper()
	NewWithT(t).Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cfg linstorv1.LinstorSatelliteConfiguration
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cfg"}, &cfg); err != nil {
			return err
		}
		cfg.Spec.StoragePools = pools
		return env.Client.Update(context.Background(), &cfg)
	})).To(Succeed())
}

func discoveryPool(sat *linstorv1.LinstorSatellite, name string) linstorv1.DiscoveryPoolStatus {
	if sat.Status.Discovery != nil {
		for _, p := range sat.Status.Discovery.Pools {
			if p.Name == name {
				return p
			}
		}
	}
	return linstorv1.DiscoveryPoolStatus{}
}

func diskState(sat *linstorv1.LinstorSatellite, device string) linstorv1.DiskStatus {
	if sat.Status.Discovery != nil {
		for _, d := range sat.Status.Discovery.Disks {
			if d.Device == device {
				return d
			}
		}
	}
	return linstorv1.DiskStatus{}
}

// poolOf says which VG or zpool holds a disk on the emulated machine ("" when unused).
func poolOf(node, device string) string {
	for _, d := range emu.NodeDisks(node) {
		if d.Device == device {
			return d.Pool
		}
	}
	return "<no such disk>"
}

func devicePoolPosts() int { return emu.RequestCounts()["POST /v1/physical-storage/{node}"] }

func TestDiscoveryHeterogeneousNodesConvergeAndLaterDisksAreClaimed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := discoveryCluster(t, "hetero", []linstorv1.StoragePool{nvmeThin, hddZfs}, map[string][]emulator.Disk{
		// Two large NVMe and a spinning disk.
		"hetero-a": {nvmeDisk("/dev/nvme0n1", 1788*gib, "01"), nvmeDisk("/dev/nvme1n1", 1788*gib, "02"), hddDisk("/dev/sda", 8*tib, "c1")},
		// One large NVMe and one too small for the pool.
		"hetero-b": {nvmeDisk("/dev/nvme0n1", 1788*gib, "03"), nvmeDisk("/dev/nvme1n1", 960*gib, "04")},
		// Only a spinning disk.
		"hetero-c": {hddDisk("/dev/sdb", 4*tib, "c2")},
	})
	total := func(node, pool string) int64 {
		p, err := emulatorClient(t).Nodes.GetStoragePool(ctx, node, pool)
		if err != nil {
			return -1
		}
		return p.TotalCapacity * 1024
	}
	g.Eventually(func(g Gomega) {
		g.Expect(total("hetero-a", "nvme")).To(Equal(2 * 1788 * gib))
		g.Expect(total("hetero-a", "hdd")).To(Equal(8 * tib))
		g.Expect(total("hetero-b", "nvme")).To(Equal(1788 * gib))
		g.Expect(total("hetero-c", "hdd")).To(Equal(4 * tib))
		for _, n := range []string{"hetero-a", "hetero-b", "hetero-c"} {
			sat := get(g, ns, n, &linstorv1.LinstorSatellite{})
			g.Expect(sat.Status.Discovery).NotTo(BeNil(), n)
		}
		b := get(g, ns, "hetero-b", &linstorv1.LinstorSatellite{})
		g.Expect(discoveryPool(b, "nvme").State).To(Equal(linstorv1.PoolCreated))
		g.Expect(discoveryPool(b, "hdd").State).To(Equal(linstorv1.PoolWaitingForDisks))
		g.Expect(condition(b.Status.Conditions, linstorv1.ConditionProgressing).Reason).To(Equal(linstorv1.ReasonWaitingForDisks))
		small := diskState(b, "/dev/nvme1n1")
		g.Expect(small.Reason).To(Equal("NoMatch"))
		g.Expect(small.Message).To(ContainSubstring("nvme: smaller than minSize 1Ti"))
		g.Expect(small.Message).To(ContainSubstring("hdd: not rotational"))
	}, timeout, tick).Should(Succeed())
	_, err := emulatorClient(t).Nodes.GetStoragePool(ctx, "hetero-c", "nvme")
	g.Expect(err).To(MatchError(lapi.NotFoundError), "a pool was made on a node with no matching disk")

	// The claims went out under the by-id names, and the VGs and zpools hold exactly
	// the matching disks; the small NVMe is untouched.
	g.Expect(poolOf("hetero-a", "/dev/nvme0n1")).To(Equal("linstor_nvme"))
	g.Expect(poolOf("hetero-a", "/dev/nvme1n1")).To(Equal("linstor_nvme"))
	g.Expect(poolOf("hetero-a", "/dev/sda")).To(Equal("hdd"))
	g.Expect(poolOf("hetero-b", "/dev/nvme1n1")).To(BeEmpty())
	a := get(g, ns, "hetero-a", &linstorv1.LinstorSatellite{})
	g.Expect(diskState(a, "/dev/nvme0n1").StableName).To(Equal("/dev/disk/by-id/nvme-eui.3634473052010025384500000001"))
	g.Expect(devicePoolPosts()).To(BeNumerically(">=", 4))
	posts := devicePoolPosts()

	// A node whose discovery pools all exist is not listed any more: each listing is an
	// lsblk on its satellite.
	listings := func(node string) int {
		n := 0
		for _, r := range emu.Requests() {
			if r.Method == "GET" && r.Path == "/v1/physical-storage/"+node {
				n++
			}
		}
		return n
	}
	g.Consistently(func() int { return listings("hetero-a") }, "4s", tick).Should(Equal(listings("hetero-a")))

	// Disks hot-plugged later are found at the next listing of a node still waiting:
	// hetero-c's NVMe becomes its nvme pool, hetero-b's spinning disk its hdd pool, and
	// hetero-b's new NVMe is reported, not added to the nvme pool that exists.
	emu.AddNodeDisk("hetero-c", nvmeDisk("/dev/nvme0n1", 3*tib, "05"))
	emu.AddNodeDisk("hetero-b", nvmeDisk("/dev/nvme2n1", 3*tib, "06"))
	emu.AddNodeDisk("hetero-b", hddDisk("/dev/sda", 4*tib, "c3"))
	g.Eventually(func(g Gomega) {
		g.Expect(total("hetero-c", "nvme")).To(Equal(3 * tib))
		g.Expect(total("hetero-b", "hdd")).To(Equal(4 * tib))
		sat := get(g, ns, "hetero-b", &linstorv1.LinstorSatellite{})
		g.Expect(diskState(sat, "/dev/nvme2n1").Reason).To(Equal("PoolExists"))
	}, timeout, tick).Should(Succeed())
	g.Expect(poolOf("hetero-b", "/dev/nvme2n1")).To(BeEmpty(), "a disk was added to an existing pool")
	g.Expect(devicePoolPosts()).To(Equal(posts+2), "exactly two more claims")
	posts = devicePoolPosts()

	// Removing the hdd pool deletes the LINSTOR pool and leaves the zpool on the disks;
	// adding it back registers it on them, claiming nothing.
	setPools(t, ns, nvmeThin)
	g.Eventually(func() error {
		_, err := emulatorClient(t).Nodes.GetStoragePool(ctx, "hetero-a", "hdd")
		return err
	}, timeout, tick).Should(MatchError(lapi.NotFoundError))
	g.Expect(poolOf("hetero-a", "/dev/sda")).To(Equal("hdd"), "removing the pool touched its disk")
	g.Eventually(func(g Gomega) {
		sat := get(g, ns, "hetero-a", &linstorv1.LinstorSatellite{})
		d := diskState(sat, "/dev/sda")
		g.Expect(d.State).To(Equal(linstorv1.DiskClaimed))
		g.Expect(d.Message).To(ContainSubstring("no longer in the spec"))
	}, timeout, tick).Should(Succeed())
	setPools(t, ns, nvmeThin, hddZfs)
	g.Eventually(func() int64 { return total("hetero-a", "hdd") }, timeout, tick).Should(BeNumerically(">=", int64(0)))
	g.Expect(devicePoolPosts()).To(Equal(posts), "the pool added back claimed disks")
	g.Expect(emu.Overwritten()).To(BeEmpty(), "a claim destroyed a signature")
}

func TestDiscoveryDryRunClaimsNothing(t *testing.T) {
	g := NewWithT(t)
	dry := *nvmeThin.DeepCopy()
	dry.Source.Discover.DryRun = true
	ns := discoveryCluster(t, "dryrun", []linstorv1.StoragePool{dry}, map[string][]emulator.Disk{
		"dryrun-a": {nvmeDisk("/dev/nvme0n1", 1788*gib, "11"), nvmeDisk("/dev/nvme1n1", 1788*gib, "12")},
	})
	g.Eventually(func(g Gomega) {
		sat := get(g, ns, "dryrun-a", &linstorv1.LinstorSatellite{})
		g.Expect(discoveryPool(sat, "nvme").State).To(Equal(linstorv1.PoolDryRun))
		g.Expect(diskState(sat, "/dev/nvme0n1").State).To(Equal(linstorv1.DiskWouldClaim))
		g.Expect(diskState(sat, "/dev/nvme1n1").State).To(Equal(linstorv1.DiskWouldClaim))
	}, timeout, tick).Should(Succeed())
	// Several listings later still nothing is claimed.
	g.Consistently(func(g Gomega) {
		g.Expect(poolOf("dryrun-a", "/dev/nvme0n1")).To(BeEmpty())
		g.Expect(poolOf("dryrun-a", "/dev/nvme1n1")).To(BeEmpty())
	}, "5s", tick).Should(Succeed())
	_, err := emulatorClient(t).Nodes.GetStoragePool(context.Background(), "dryrun-a", "nvme")
	g.Expect(err).To(MatchError(lapi.NotFoundError))

	// Turning the dry run off claims exactly the disks it reported.
	setPools(t, ns, nvmeThin)
	g.Eventually(func() string { return poolOf("dryrun-a", "/dev/nvme1n1") }, timeout, tick).Should(Equal("linstor_nvme"))
	g.Expect(poolOf("dryrun-a", "/dev/nvme0n1")).To(Equal("linstor_nvme"))
}

func TestDiscoveryDiskMatchedByTwoPoolsIsClaimedByNone(t *testing.T) {
	g := NewWithT(t)
	ssd := linstorv1.StoragePool{Name: "ssd", LvmThinPool: &linstorv1.LvmThinPool{},
		Source: &linstorv1.StoragePoolSource{Discover: &linstorv1.DiskDiscovery{Rotational: ptr.To(false), MaxSize: quantity("1Ti"), AllowAnyDisk: true}}}
	samsung := linstorv1.StoragePool{Name: "samsung", LvmPool: &linstorv1.LvmPool{},
		Source: &linstorv1.StoragePoolSource{Discover: &linstorv1.DiskDiscovery{Models: []string{"SAMSUNG*"}}}}
	small := nvmeDisk("/dev/nvme0n1", 960*gib, "21") // a Samsung and small: both pools want it
	other := small
	other.Device, other.Model, other.Serial, other.WWN = "/dev/nvme1n1", "INTEL SSDPE2KX010T8", "PHLJ00000001", "eui.0100000001000000"
	other.Links = []string{"/dev/disk/by-id/nvme-eui.0100000001000000"}
	ns := discoveryCluster(t, "twice", []linstorv1.StoragePool{ssd, samsung}, map[string][]emulator.Disk{"twice-a": {small, other}})
	g.Eventually(func(g Gomega) {
		sat := get(g, ns, "twice-a", &linstorv1.LinstorSatellite{})
		d := diskState(sat, "/dev/nvme0n1")
		g.Expect(d.Reason).To(Equal("MatchedTwice"))
		g.Expect(d.Message).To(ContainSubstring("ssd and samsung"))
		// Both pools say why they did not get it.
		g.Expect(discoveryPool(sat, "samsung").Message).To(ContainSubstring("/dev/nvme0n1 is also matched by another pool"))
		g.Expect(discoveryPool(sat, "ssd").Message).To(ContainSubstring("not /dev/nvme0n1, also matched by another pool"))
		g.Expect(poolOf("twice-a", "/dev/nvme1n1")).To(Equal("linstor_ssd"))
	}, timeout, tick).Should(Succeed())
	g.Consistently(func() string { return poolOf("twice-a", "/dev/nvme0n1") }, "4s", tick).Should(BeEmpty())
}

func TestDiscoveryLostAnswerIsNotClaimedAgain(t *testing.T) {
	g := NewWithT(t)
	// LINSTOR does the claim but its answer is lost: the operator records a failure,
	// then sees the pool and settles, without a second claim.
	emu.InjectFault("POST /v1/physical-storage/{node}", emulator.Fault{Status: 500, AfterServing: true, Times: 1})
	t.Cleanup(func() { emu.InjectFault("POST /v1/physical-storage/{node}", emulator.Fault{}) })
	before := devicePoolPosts()
	ns := discoveryCluster(t, "lost", []linstorv1.StoragePool{nvmeThin}, map[string][]emulator.Disk{
		"lost-a": {nvmeDisk("/dev/nvme0n1", 1788*gib, "31"), nvmeDisk("/dev/nvme1n1", 1788*gib, "32")},
	})
	g.Eventually(func(g Gomega) {
		sat := get(g, ns, "lost-a", &linstorv1.LinstorSatellite{})
		g.Expect(discoveryPool(sat, "nvme").State).To(Equal(linstorv1.PoolCreated))
		g.Expect(condition(sat.Status.Conditions, linstorv1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
	}, timeout, tick).Should(Succeed())
	g.Consistently(devicePoolPosts, "3s", tick).Should(Equal(before + 1))
}

func TestDiscoveryAfterACrashClaimsOnlyTheSameDisks(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// An operator that died after recording a claim of nvme0 (which LINSTOR turned into
	// a PV before failing) leaves only its status; whoever reads it next claims nothing
	// else for the pool, and says why.
	emu.SetNodeDisks("crash-a", nvmeDisk("/dev/nvme0n1", 1788*gib, "41"), nvmeDisk("/dev/nvme1n1", 1788*gib, "42"))
	ns2 := env.Namespace(t)
	makeNode(t, "crash-a", "10.5.1.1", map[string]string{"suite": "crash"})
	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: ns2}})).To(Succeed())
	makeCluster(t, ns2, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "crash"}})
	var sat *linstorv1.LinstorSatellite
	g.Eventually(func(g Gomega) {
		sat = get(g, ns2, "crash-a", &linstorv1.LinstorSatellite{})
		g.Expect(sat.Status.ConnectionStatus).To(Equal("ONLINE"))
	}, timeout, tick).Should(Succeed())
	pv := nvmeDisk("/dev/nvme0n1", 1788*gib, "41")
	pv.FSType = "LVM2_member"
	emu.SetNodeDisks("crash-a", pv, nvmeDisk("/dev/nvme1n1", 1788*gib, "42"))
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := &linstorv1.LinstorSatellite{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(sat), s); err != nil {
			return err
		}
		s.Status.Discovery = &linstorv1.DiscoveryStatus{
			Pools: []linstorv1.DiscoveryPoolStatus{{Name: "nvme", State: linstorv1.PoolClaiming, Claimed: []string{"/dev/nvme0n1"}, Attempts: 1, ClaimTime: &metav1.Time{Time: metav1.Now().Time}}},
			Disks: []linstorv1.DiskStatus{{Device: "/dev/nvme0n1", Size: resource.NewQuantity(1788*gib, resource.BinarySI), State: linstorv1.DiskClaimed, Pool: "nvme", Serial: "S64GNE0R100041", WWN: pv.WWN}},
		}
		return env.Client.Status().Update(ctx, s)
	})).To(Succeed())
	posts := devicePoolPosts()
	setPools(t, ns2, nvmeThin)
	g.Eventually(func(g Gomega) {
		s := get(g, ns2, "crash-a", &linstorv1.LinstorSatellite{})
		g.Expect(discoveryPool(s, "nvme").State).To(Equal(linstorv1.PoolClaimFailed))
		d := condition(s.Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonDiskClaimFailed))
		g.Expect(d.Message).To(ContainSubstring("/dev/nvme0n1 is no longer listed as unused"))
		g.Expect(diskState(s, "/dev/nvme1n1").Reason).To(Equal("PoolFailed"))
	}, timeout, tick).Should(Succeed())
	g.Consistently(devicePoolPosts, "4s", tick).Should(Equal(posts), "a disk was claimed for a pool with an unsettled claim")
	g.Expect(poolOf("crash-a", "/dev/nvme1n1")).To(BeEmpty())

	// The admin wipes the PV (played as the disk swapped for a blank one): the same disk,
	// and only it, is claimed again.
	emu.SetNodeDisks("crash-a", nvmeDisk("/dev/nvme1n1", 1788*gib, "42"))
	emu.SetNodeDisks("crash-a", nvmeDisk("/dev/nvme0n1", 1788*gib, "41"), nvmeDisk("/dev/nvme1n1", 1788*gib, "42"))
	g.Eventually(func(g Gomega) {
		s := get(g, ns2, "crash-a", &linstorv1.LinstorSatellite{})
		g.Expect(discoveryPool(s, "nvme").State).To(Equal(linstorv1.PoolCreated))
	}, timeout, tick).Should(Succeed())
	g.Expect(devicePoolPosts()).To(Equal(posts + 1))
	g.Expect(poolOf("crash-a", "/dev/nvme0n1")).To(Equal("linstor_nvme"))
	g.Expect(poolOf("crash-a", "/dev/nvme1n1")).To(BeEmpty(), "another disk was claimed")
	g.Expect(strings.Join(emu.Overwritten(), ",")).To(BeEmpty())
}
