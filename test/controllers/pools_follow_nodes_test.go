package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Each node's pools follow that node (issue #33, item 6): a satellite that never
// connects holds back no other node's pools. One of five LINSTOR nodes is cut off
// while it is still connecting (the emulator takes 300 ms to report a new satellite
// ONLINE) and stays OFFLINE; the four others get their pools, with capacity, while it
// waits, and it says why it has none.
func TestPoolsFollowTheirNodeWhileOneNeverConnects(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	nodes := []string{"follow-a", "follow-b", "follow-c", "follow-d", "follow-e"}
	const never = "follow-e"
	for i, n := range nodes {
		makeNode(t, n, "10.3.0."+string(rune('1'+i)), map[string]string{"suite": "follow"})
	}
	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorSatelliteConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: ns},
		Spec:       linstorv1.LinstorSatelliteConfigurationSpec{StoragePools: []linstorv1.StoragePool{thinPool}},
	})).To(Succeed())

	// Cut the satellite off as soon as the operator registers its node, before the
	// emulator's connect delay ends: LINSTOR never reports it ONLINE.
	cut := make(chan error, 1)
	cutCtx, stopCutting := context.WithTimeout(ctx, timeout)
	defer stopCutting()
	go func() {
		for cutCtx.Err() == nil {
			if _, ok := emu.Node(never); ok {
				cut <- emu.SetNodeOnline(never, false)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		cut <- cutCtx.Err()
	}()
	// Cleanups run last-registered first: the satellite is back before the cluster's
	// deletion evacuates its node.
	makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "follow"}})
	t.Cleanup(func() { _ = emu.SetNodeOnline(never, true) })
	g.Expect(<-cut).To(Succeed(), "the operator did not register %s", never)

	start := time.Now()
	poolsWithCapacity := func(g Gomega, node string) {
		sat := get(g, ns, node, &linstorv1.LinstorSatellite{})
		g.Expect(sat.Status.ConnectionStatus).To(Equal("ONLINE"), "%s: %+v", node, sat.Status)
		g.Expect(sat.Status.StoragePools).To(HaveLen(1), "%s: %+v", node, sat.Status)
		g.Expect(sat.Status.StoragePools[0].TotalCapacity).NotTo(BeNil(), "%s: %+v", node, sat.Status)
		g.Expect(sat.Status.StoragePools[0].TotalCapacity.IsZero()).To(BeFalse(), "%s: %+v", node, sat.Status)
	}
	// The bound: registration, the connect delay, a cycle, a pool write and the cycle
	// that shows it, at the suite's 1 s poll, with room for a loaded machine.
	const bound = 15 * time.Second
	g.Eventually(func(g Gomega) {
		for _, n := range nodes {
			if n != never {
				poolsWithCapacity(g, n)
			}
		}
	}, bound, tick).Should(Succeed(), "pools of the connected nodes not created within %s while %s never connects", bound, never)
	t.Logf("pools of the 4 connected nodes created and observed %s after %s was cut off", time.Since(start).Round(100*time.Millisecond), never)

	// The node that never connected has no pool, and says why.
	g.Eventually(func(g Gomega) {
		sat := get(g, ns, never, &linstorv1.LinstorSatellite{})
		g.Expect(sat.Status.ConnectionStatus).To(Equal("OFFLINE"), "%+v", sat.Status)
		p := condition(sat.Status.Conditions, linstorv1.ConditionProgressing)
		g.Expect(p.Reason).To(Equal(linstorv1.ReasonNodeOffline), "%+v", sat.Status)
		g.Expect(p.Message).To(ContainSubstring("waiting for the satellite to be ONLINE"))
	}, timeout, tick).Should(Succeed())
	pools, err := emu.StoragePools(never)
	g.Expect(err).NotTo(HaveOccurred())
	for _, p := range pools {
		g.Expect(p.ProviderKind).To(BeEquivalentTo("DISKLESS"), "a pool was created on %s, which never connected: %+v", never, p)
	}
}
