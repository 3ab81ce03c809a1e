package controllers

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

func connectionProps(g Gomega, t *testing.T, a, b string) map[string]string {
	conns, err := emulatorClient(t).Connections.GetNodeConnections(context.Background(), a, b)
	g.Expect(err).NotTo(HaveOccurred())
	for _, c := range conns {
		if (c.NodeA == a && c.NodeB == b) || (c.NodeA == b && c.NodeB == a) {
			return c.Props
		}
	}
	return nil
}

func TestNodeConnectionsFollowTheSelector(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	makeNode(t, "lnc-a", "10.4.0.1", map[string]string{"suite": "lnc", "zone": "z1"})
	makeNode(t, "lnc-b", "10.4.0.2", map[string]string{"suite": "lnc", "zone": "z1"})
	makeNode(t, "lnc-c", "10.4.0.3", map[string]string{"suite": "lnc", "zone": "z2"})
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "lnc"}})
	g.Eventually(func(g Gomega) {
		g.Expect(getCluster(g, cluster).Status.SatellitesSummary).To(Equal("3/3"))
	}, timeout, tick).Should(Succeed())
	// A property someone set by hand on a pair the object will manage.
	g.Expect(emulatorClient(t).Connections.SetNodeConnection(ctx, "lnc-a", "lnc-c", lapi.GenericPropsModify{OverrideProps: map[string]string{"Aux/manual": "yes"}})).To(Succeed())

	lnc := &linstorv1.LinstorNodeConnection{
		ObjectMeta: metav1.ObjectMeta{Name: "cross-zone", Namespace: ns},
		Spec: linstorv1.LinstorNodeConnectionSpec{
			Selector:   []linstorv1.SelectorTerm{{MatchLabels: []linstorv1.MatchLabelExpression{{Key: "zone", Op: "NotSame"}}}},
			Properties: []linstorv1.Property{{Name: "DrbdOptions/Net/protocol", Value: "A"}},
			Paths:      []linstorv1.ConnectionPath{{Name: "data", Interface: "default"}},
		},
	}
	g.Expect(env.Client.Create(ctx, lnc)).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, p := range [][2]string{{"lnc-a", "lnc-c"}, {"lnc-b", "lnc-c"}} {
			props := connectionProps(g, t, p[0], p[1])
			g.Expect(props).To(HaveKeyWithValue("DrbdOptions/Net/protocol", "A"))
			g.Expect(props).To(HaveKeyWithValue("Paths/data/"+p[0], "default"))
			g.Expect(props).To(HaveKeyWithValue("Paths/data/"+p[1], "default"))
		}
		g.Expect(connectionProps(g, t, "lnc-a", "lnc-b")).NotTo(HaveKey("DrbdOptions/Net/protocol"))
		var cur linstorv1.LinstorNodeConnection
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(lnc), &cur)).To(Succeed())
		g.Expect(condition(cur.Status.Conditions, linstorv1.ConditionConfigured).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, tick).Should(Succeed())

	// Switching the selector moves the properties; the manual one stays.
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur linstorv1.LinstorNodeConnection
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(lnc), &cur); err != nil {
			return err
		}
		cur.Spec.Selector[0].MatchLabels[0].Op = "Same"
		return env.Client.Update(ctx, &cur)
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(connectionProps(g, t, "lnc-a", "lnc-b")).To(HaveKeyWithValue("DrbdOptions/Net/protocol", "A"))
		g.Expect(connectionProps(g, t, "lnc-a", "lnc-c")).NotTo(HaveKey("DrbdOptions/Net/protocol"))
		g.Expect(connectionProps(g, t, "lnc-a", "lnc-c")).To(HaveKeyWithValue("Aux/manual", "yes"))
		g.Expect(connectionProps(g, t, "lnc-b", "lnc-c")).NotTo(HaveKey("Paths/data/lnc-b"))
	}, timeout, tick).Should(Succeed())

	// Deleting the object removes exactly its properties.
	g.Expect(env.Client.Delete(ctx, lnc)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(connectionProps(g, t, "lnc-a", "lnc-b")).NotTo(HaveKey("DrbdOptions/Net/protocol"))
		g.Expect(connectionProps(g, t, "lnc-a", "lnc-c")).To(HaveKeyWithValue("Aux/manual", "yes"))
	}, timeout, tick).Should(Succeed())
}

// A selector matching more pairs than one pass writes is configured in batches, and the
// status says how many remain until it is done.
func TestNodeConnectionsAreWrittenInBatches(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	const nodes = 16 // 120 pairs: more than one pass writes
	lc := emulatorClient(t)
	for i := range nodes {
		name := fmt.Sprintf("batch-%02d", i)
		makeNode(t, name, fmt.Sprintf("10.5.0.%d", i+1), map[string]string{"suite": "lnc-batch"})
		g.Expect(lc.Nodes.Create(ctx, lapi.Node{Name: name, Type: "SATELLITE", NetInterfaces: []lapi.NetInterface{{Name: "default", Address: net.ParseIP(fmt.Sprintf("10.5.0.%d", i+1)), SatellitePort: 3366, SatelliteEncryptionType: "PLAIN"}}})).To(Succeed())
		t.Cleanup(func() { _ = lc.Nodes.Delete(context.Background(), name) })
	}
	// No satellites: the cluster selects none of these nodes; LINSTOR has them anyway.
	makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "none"}})
	lnc := &linstorv1.LinstorNodeConnection{
		ObjectMeta: metav1.ObjectMeta{Name: "all-pairs", Namespace: ns},
		Spec: linstorv1.LinstorNodeConnectionSpec{
			Selector:   []linstorv1.SelectorTerm{{MatchLabels: []linstorv1.MatchLabelExpression{{Key: "suite", Op: "In", Values: []string{"lnc-batch"}}}}},
			Properties: []linstorv1.Property{{Name: "DrbdOptions/Net/protocol", Value: "A"}},
		},
	}
	g.Expect(env.Client.Create(ctx, lnc)).To(Succeed())
	// The pass that stops at the limit says so; the next one follows within a second.
	g.Eventually(func(g Gomega) {
		var cur linstorv1.LinstorNodeConnection
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(lnc), &cur)).To(Succeed())
		c := condition(cur.Status.Conditions, linstorv1.ConditionConfigured)
		g.Expect(c.Reason).To(Equal(linstorv1.ReasonReconciling))
		g.Expect(c.Message).To(Equal("20 node pairs still to configure (at most 100 LINSTOR requests per pass)"))
	}, timeout, 20*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		var cur linstorv1.LinstorNodeConnection
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(lnc), &cur)).To(Succeed())
		g.Expect(condition(cur.Status.Conditions, linstorv1.ConditionConfigured).Status).To(Equal(metav1.ConditionTrue))
		for i := range nodes {
			for j := i + 1; j < nodes; j++ {
				g.Expect(connectionProps(g, t, fmt.Sprintf("batch-%02d", i), fmt.Sprintf("batch-%02d", j))).To(HaveKeyWithValue("DrbdOptions/Net/protocol", "A"))
			}
		}
	}, timeout, tick).Should(Succeed())
}
