package controllers

import (
	"context"
	"testing"

	lapi "github.com/LINBIT/golinstor/client"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// A pool that is no longer wanted but still holds a volume stays, and the satellite says
// why; it goes once the volume is gone.
func TestPoolHoldingDataIsNotDeleted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _ := availableCluster(t, "inuse", linstorv1.LinstorSatelliteConfigurationSpec{StoragePools: []linstorv1.StoragePool{thinPool}}, "inuse-a")
	g.Expect(emu.PlaceResource("pvc-inuse", "inuse-a", "thin", false)).To(Succeed())

	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cfg linstorv1.LinstorSatelliteConfiguration
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cfg"}, &cfg); err != nil {
			return err
		}
		cfg.Spec.StoragePools = nil
		return env.Client.Update(ctx, &cfg)
	})).To(Succeed())

	g.Eventually(func(g Gomega) {
		sat := get(g, ns, "inuse-a", &linstorv1.LinstorSatellite{})
		d := condition(sat.Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonPoolInUse))
		g.Expect(d.Message).To(ContainSubstring("pool thin is no longer wanted but cannot be deleted yet"))
	}, timeout, tick).Should(Succeed())
	lc := emulatorClient(t)
	_, err := lc.Nodes.GetStoragePool(ctx, "inuse-a", "thin")
	g.Expect(err).NotTo(HaveOccurred(), "a pool holding a volume was deleted")

	g.Expect(lc.Resources.Delete(ctx, "pvc-inuse", "inuse-a")).To(Succeed())
	g.Eventually(func() error {
		_, err := lc.Nodes.GetStoragePool(ctx, "inuse-a", "thin")
		return err
	}, timeout, tick).Should(MatchError(lapi.NotFoundError))
}

// A pool the operator did not make (an admin's, made in LINSTOR) is never deleted.
func TestForeignPoolIsNeverDeleted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	availableCluster(t, "foreign", linstorv1.LinstorSatelliteConfigurationSpec{}, "foreign-a")
	lc := emulatorClient(t)
	g.Expect(lc.Nodes.CreateStoragePool(ctx, "foreign-a", lapi.StoragePool{StoragePoolName: "manual", ProviderKind: lapi.LVM})).To(Succeed())
	t.Cleanup(func() { _ = lc.Nodes.DeleteStoragePool(ctx, "foreign-a", "manual") })
	g.Consistently(func() error {
		_, err := lc.Nodes.GetStoragePool(ctx, "foreign-a", "manual")
		return err
	}, "2s", tick).Should(Succeed())
}
