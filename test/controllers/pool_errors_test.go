package controllers

import (
	"testing"

	. "github.com/onsi/gomega"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// A pool whose thin volume is gone from its machine: LINSTOR's storage-pool view carries
// the satellite's error report, the LinstorSatellite's status carries it, and
// linstor_operator_storage_pool_errors is 1; after the repair both are clear and the
// series is 0 (not gone), so the alert resolves.
func TestPoolErrorsReachStatusAndMetric(t *testing.T) {
	g := NewWithT(t)
	ns, _ := availableCluster(t, "poolerr", linstorv1.LinstorSatelliteConfigurationSpec{StoragePools: []linstorv1.StoragePool{thinPool}}, "poolerr-a")
	labels := map[string]string{"namespace": ns, "node": "poolerr-a", "pool": "thin"}
	g.Eventually(func(g Gomega) {
		g.Expect(gauge(g, "linstor_operator_storage_pool_errors", labels)).To(Equal(float64(0)))
	}, timeout, tick).Should(Succeed())

	g.Expect(emu.BreakStoragePool("poolerr-a", "thin")).To(Succeed())
	t.Cleanup(func() { _ = emu.RepairStoragePool("poolerr-a", "thin") })
	g.Eventually(func(g Gomega) {
		sat := get(g, ns, "poolerr-a", &linstorv1.LinstorSatellite{})
		g.Expect(sat.Status.StoragePools).To(ContainElement(And(
			HaveField("Name", "thin"),
			HaveField("Errors", ConsistOf(
				"Node: 'poolerr-a', storage pool: 'thin' - Failed to query free space from storage pool: Thin pool 'linstor_thin/thin' does not exist.")))),
			"%+v", sat.Status.StoragePools)
		g.Expect(gauge(g, "linstor_operator_storage_pool_errors", labels)).To(Equal(float64(1)))
	}, timeout, tick).Should(Succeed())

	g.Expect(emu.RepairStoragePool("poolerr-a", "thin")).To(Succeed())
	g.Eventually(func(g Gomega) {
		sat := get(g, ns, "poolerr-a", &linstorv1.LinstorSatellite{})
		for _, p := range sat.Status.StoragePools {
			g.Expect(p.Errors).To(BeEmpty(), p.Name)
		}
		g.Expect(gauge(g, "linstor_operator_storage_pool_errors", labels)).To(Equal(float64(0)))
	}, timeout, tick).Should(Succeed())
}
