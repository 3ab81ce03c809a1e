package controllers

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/emulator"
	"github.com/linstor-operator/linstor-operator/pkg/discovery"
)

// Hosts as they are: besides a free NVMe, each has what LINSTOR's lsblk filter offers as
// unused although it is no free disk (the filter has no TYPE check): kubelet's loop
// device of a raw-block PV in use, a VM's zvol, a loop device over a VM image, a bare
// device-mapper target; one host has two paths to one SAS disk (no multipathd), and a SAN
// LUN is zoned to both. A size-only pool, acknowledged with allowAnyDisk, takes the NVMe
// disks and nothing else; each other device says why, and no data is overwritten.
func TestDiscoveryClaimsOnlyFreePhysicalDisksOnARealHost(t *testing.T) {
	g := NewWithT(t)
	const lunWWN = "0x600a098038303053453f463045726b30"
	lunOnA := emulator.SANPaths(lunWWN, "80ABCDEF", 10*tib, "/dev/sdf")
	lunOnB := emulator.SANPaths(lunWWN, "80ABCDEF", 10*tib, "/dev/sdg") // the same LUN, another kernel name
	twoPaths := emulator.SANPaths("0x6000c29a00000001", "SAS-0001", 4*tib, "/dev/sdc", "/dev/sdd")
	for i := range lunOnA {
		lunOnA[i].Rotational, lunOnB[i].Rotational = false, false // an all-flash array: the size-only pool matches it
	}
	// What LINSTOR offers on each host that is not a free disk (emulator.HostDevices adds
	// /dev/zd0, a VM's zvol, and /dev/loop1, a VM image).
	kubeletLoop := emulator.LoopDevice(3, 20*gib, "/dev/drbd1001") // a raw-block PV in use
	kubeletLoop.Data = "a database on a block volume"
	bareDM := emulator.DeviceMapper(7, "scratch", emulator.TypeDM, 300*gib) // a dm target without parents
	bareDM.Data = "scratch data"
	notDisks := []string{"/dev/zd0", "/dev/loop1", "/dev/loop3", "/dev/mapper/scratch"}
	host := func(node string, extra ...emulator.Disk) []emulator.Disk {
		return append(append(emulator.HostDevices(node), kubeletLoop, bareDM, nvmeDisk("/dev/nvme0n1", 1788*gib, node[len(node)-1:]+"1")), extra...)
	}
	anyPool := linstorv1.StoragePool{Name: "any", ZfsPool: &linstorv1.ZfsPool{},
		Source: &linstorv1.StoragePoolSource{Discover: &linstorv1.DiskDiscovery{MinSize: quantity("1Gi"), Rotational: ptr.To(false), AllowAnyDisk: true}}}
	bulk := linstorv1.StoragePool{Name: "bulk", ZfsPool: &linstorv1.ZfsPool{},
		Source: &linstorv1.StoragePoolSource{Discover: &linstorv1.DiskDiscovery{Rotational: ptr.To(true), AllowAnyDisk: true}}}
	ns := discoveryCluster(t, "hostile", []linstorv1.StoragePool{anyPool, bulk}, map[string][]emulator.Disk{
		"hostile-a": host("hostile-a", append(lunOnA, twoPaths...)...),
		"hostile-b": host("hostile-b", lunOnB...),
	})
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range []string{"hostile-a", "hostile-b"} {
				var sat linstorv1.LinstorSatellite
				if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: n}, &sat); err == nil && sat.Status.Discovery != nil {
					for _, p := range sat.Status.Discovery.Pools {
						t.Logf("%s pool %s: %s %q", n, p.Name, p.State, p.Message)
					}
					for _, d := range sat.Status.Discovery.Disks {
						t.Logf("%s disk %s: %s %s %q", n, d.Device, d.State, d.Reason, d.Message)
					}
				}
			}
		}
	})
	g.Eventually(func(g Gomega) {
		for _, n := range []string{"hostile-a", "hostile-b"} {
			g.Expect(poolOf(n, "/dev/nvme0n1")).To(Equal("any"), n)
			sat := get(g, ns, n, &linstorv1.LinstorSatellite{})
			for _, dev := range notDisks {
				g.Expect(diskState(sat, dev).Reason).To(Equal(discovery.ReasonNotAPhysicalDisk), n+" "+dev)
			}
		}
		a := get(g, ns, "hostile-a", &linstorv1.LinstorSatellite{})
		g.Expect(diskState(a, "/dev/sdc").Reason).To(Equal(discovery.ReasonSameIdentityTwice))
		g.Expect(diskState(a, "/dev/sdd").Reason).To(Equal(discovery.ReasonSameIdentityTwice))
		g.Expect(diskState(a, "/dev/loop3").Message).To(ContainSubstring("raw-block volume"))
		g.Expect(diskState(a, "/dev/vda").Device).To(BeEmpty(), "LINSTOR offered the partitioned system disk")
		g.Expect(discoveryPool(a, "bulk").State).To(Equal(linstorv1.PoolWaitingForDisks))
	}, timeout, tick).Should(Succeed())

	// The shared LUN: whichever node listed it first may hold it; never both, and a node
	// that does not hold it says which node reports it.
	lunClaims := func() int {
		n := 0
		if poolOf("hostile-a", "/dev/sdf") != "" {
			n++
		}
		if poolOf("hostile-b", "/dev/sdg") != "" {
			n++
		}
		return n
	}
	g.Consistently(lunClaims, "3s", tick).Should(BeNumerically("<=", 1), "the shared LUN was claimed on both nodes")
	g.Eventually(func(g Gomega) {
		for n, dev := range map[string]string{"hostile-a": "/dev/sdf", "hostile-b": "/dev/sdg"} {
			if poolOf(n, dev) != "" {
				continue
			}
			st := diskState(get(g, ns, n, &linstorv1.LinstorSatellite{}), dev)
			g.Expect(st.Reason).To(Equal(discovery.ReasonSeenOnOtherNode), n)
		}
	}, timeout, tick).Should(Succeed())

	for _, n := range []string{"hostile-a", "hostile-b"} {
		for _, dev := range append(notDisks, "/dev/sdc", "/dev/sdd") {
			g.Expect(poolOf(n, dev)).To(BeElementOf("", "<no such disk>"), n+" "+dev+" was claimed")
		}
	}
	g.Expect(emu.Overwritten()).To(BeEmpty())
	g.Expect(emu.DestroyedReplicas()).To(BeEmpty())
}
