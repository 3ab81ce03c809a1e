package controllers

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/discovery"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/emulator"
)

// Hosts as they are: besides a free NVMe, each has what LINSTOR's lsblk filter lists as
// unused although it is not a free disk (it has no TYPE check): kubelet's loop device
// of a raw-block PV in use, a zvol, an md array, an LVM volume seen through
// device-mapper; one has two paths to one SAS disk (no multipathd); and a SAN LUN is
// zoned to both. A size-only pool, acknowledged with allowAnyDisk, takes the NVMe disks
// and nothing else, and each other device says why.
func TestDiscoveryClaimsOnlyFreePhysicalDisksOnARealHost(t *testing.T) {
	g := NewWithT(t)
	lun := emulator.Disk{Device: "/dev/sdf", Size: 10 * tib, Model: "NETAPP LUN", Serial: "80ABCDEF", WWN: "0x600a098038303053453f463045726b30"}
	lunOnB := lun
	lunOnB.Device = "/dev/sdg" // another kernel name on the other node, one disk
	sasA := hddDisk("/dev/sdc", 4*tib, "e1")
	sasB := sasA
	sasB.Device, sasB.Links = "/dev/sdd", nil // the second path of the same disk
	notDisks := []emulator.Disk{
		{Device: "/dev/loop3", Size: 20 * gib},               // over /dev/drbd1001, a block PV in use
		{Device: "/dev/zd0", Size: 50 * gib},                 // a zvol
		{Device: "/dev/md127", Size: 2 * tib},                // software RAID
		{Device: "/dev/mapper/vg0-scratch", Size: 300 * gib}, // an LV nobody formatted
		{Device: "/dev/nbd0", Size: 100 * gib},               // a network block device
	}
	anyPool := linstorv1.StoragePool{Name: "any", ZfsPool: &linstorv1.ZfsPool{},
		Source: &linstorv1.StoragePoolSource{Discover: &linstorv1.DiskDiscovery{MinSize: quantity("1Gi"), Rotational: ptr.To(false), AllowAnyDisk: true}}}
	bulk := linstorv1.StoragePool{Name: "bulk", ZfsPool: &linstorv1.ZfsPool{},
		Source: &linstorv1.StoragePoolSource{Discover: &linstorv1.DiskDiscovery{Rotational: ptr.To(true), AllowAnyDisk: true}}}
	ns := discoveryCluster(t, "hostile", []linstorv1.StoragePool{anyPool, bulk}, map[string][]emulator.Disk{
		"hostile-a": append([]emulator.Disk{nvmeDisk("/dev/nvme0n1", 1788*gib, "a1"), sasA, sasB, lun}, notDisks...),
		"hostile-b": append([]emulator.Disk{nvmeDisk("/dev/nvme0n1", 1788*gib, "b1"), lunOnB}, notDisks...),
	})
	g.Eventually(func(g Gomega) {
		for _, n := range []string{"hostile-a", "hostile-b"} {
			g.Expect(poolOf(n, "/dev/nvme0n1")).To(Equal("any"), n)
			sat := get(g, ns, n, &linstorv1.LinstorSatellite{})
			for _, d := range notDisks {
				st := diskState(sat, d.Device)
				g.Expect(st.Reason).To(Equal(discovery.ReasonNotAPhysicalDisk), n+" "+d.Device)
			}
		}
		a := get(g, ns, "hostile-a", &linstorv1.LinstorSatellite{})
		g.Expect(diskState(a, "/dev/sdc").Reason).To(Equal(discovery.ReasonSameIdentityTwice))
		g.Expect(diskState(a, "/dev/sdd").Reason).To(Equal(discovery.ReasonSameIdentityTwice))
		g.Expect(diskState(a, "/dev/loop3").Message).To(ContainSubstring("raw-block volume"))
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
		for _, d := range append(notDisks, sasA, sasB) {
			g.Expect(poolOf(n, d.Device)).To(BeElementOf("", "<no such disk>"), n+" "+d.Device+" was claimed")
		}
	}
	g.Expect(emu.Overwritten()).To(BeEmpty())
}
