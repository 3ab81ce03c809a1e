package controllers

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// warningsOf lists the Warning events of one object.
func warningsOf(g Gomega, ns, kind, name string) []corev1.Event {
	var events corev1.EventList
	g.Expect(env.Client.List(context.Background(), &events, client.InNamespace(ns))).To(Succeed())
	var out []corev1.Event
	for _, e := range events.Items {
		if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// touch adds a label: a write of the test's own, which wakes the controllers of obj.
func touch[T client.Object](g Gomega, obj T, value string) string {
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		obj.SetLabels(map[string]string{"touched": value})
		return env.Client.Update(context.Background(), obj)
	})).To(Succeed())
	return obj.GetResourceVersion()
}

// A LinstorSatelliteConfiguration or LinstorNodeConnection outside the LinstorCluster's
// namespace is ignored, and says so: a condition and one Warning event, written once
// (a resync writes nothing), and the connection keeps no finalizer it would never run.
func TestMisplacedConfigurationsSayWhy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	home := env.Namespace(t)
	elsewhere := env.Namespace(t)
	makeNode(t, "misplaced-a", "10.6.0.1", map[string]string{"suite": "misplaced"})
	cluster := makeCluster(t, home, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "misplaced"}})
	g.Eventually(func(g Gomega) {
		g.Expect(getCluster(g, cluster).Status.SatellitesSummary).To(Equal("1/1"))
	}, timeout, tick).Should(Succeed())

	cfg := &linstorv1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "lost", Namespace: elsewhere},
		Spec: linstorv1.LinstorSatelliteConfigurationSpec{Properties: []linstorv1.NodeProperty{{Name: "Aux/lost", Value: "yes"}}}}
	lnc := &linstorv1.LinstorNodeConnection{ObjectMeta: metav1.ObjectMeta{Name: "lost", Namespace: elsewhere},
		Spec: linstorv1.LinstorNodeConnectionSpec{Properties: []linstorv1.Property{{Name: "DrbdOptions/Net/protocol", Value: "A"}}}}
	// The same configuration where it belongs, for contrast.
	good := &linstorv1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "found", Namespace: home}}
	for _, o := range []client.Object{cfg, lnc, good} {
		g.Expect(env.Client.Create(ctx, o)).To(Succeed())
	}
	wantMessage := fmt.Sprintf("namespace %q holds no LinstorCluster. Create it in the namespace of the LinstorCluster (%s)", elsewhere, home)
	g.Eventually(func(g Gomega) {
		c := get(g, elsewhere, "lost", &linstorv1.LinstorSatelliteConfiguration{})
		applied := condition(c.Status.Conditions, linstorv1.ConditionApplied)
		g.Expect(applied.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(applied.Reason).To(Equal(linstorv1.ReasonWrongNamespace))
		g.Expect(applied.Message).To(ContainSubstring(wantMessage))
		l := get(g, elsewhere, "lost", &linstorv1.LinstorNodeConnection{})
		configured := condition(l.Status.Conditions, linstorv1.ConditionConfigured)
		g.Expect(configured.Reason).To(Equal(linstorv1.ReasonWrongNamespace))
		g.Expect(configured.Message).To(ContainSubstring(wantMessage))
		g.Expect(l.Finalizers).To(BeEmpty())
		g.Expect(warningsOf(g, elsewhere, "LinstorSatelliteConfiguration", "lost")).To(HaveLen(1))
		g.Expect(warningsOf(g, elsewhere, "LinstorNodeConnection", "lost")).To(HaveLen(1))

		f := get(g, home, "found", &linstorv1.LinstorSatelliteConfiguration{})
		g.Expect(condition(f.Status.Conditions, linstorv1.ConditionApplied).Reason).To(Equal(linstorv1.ReasonAsExpected))
	}, timeout, tick).Should(Succeed())
	// Nothing of it reached the satellite.
	g.Expect(get(g, home, "misplaced-a", &linstorv1.LinstorSatellite{}).Spec.Properties).To(BeEmpty())

	// Wake both controllers (a label on each object, a node label change for the
	// connections): the only writes are the test's own.
	cfgVersion := touch(g, &linstorv1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "lost", Namespace: elsewhere}}, "1")
	lncVersion := touch(g, &linstorv1.LinstorNodeConnection{ObjectMeta: metav1.ObjectMeta{Name: "lost", Namespace: elsewhere}}, "1")
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node := get(g, "", "misplaced-a", &corev1.Node{})
		node.Labels["wake"] = "1"
		return env.Client.Update(ctx, node)
	})).To(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, elsewhere, "lost", &linstorv1.LinstorSatelliteConfiguration{}).ResourceVersion).To(Equal(cfgVersion), "a resync wrote the configuration")
		g.Expect(get(g, elsewhere, "lost", &linstorv1.LinstorNodeConnection{}).ResourceVersion).To(Equal(lncVersion), "a resync wrote the connection")
		for _, kind := range []string{"LinstorSatelliteConfiguration", "LinstorNodeConnection"} {
			events := warningsOf(g, elsewhere, kind, "lost")
			g.Expect(events).To(HaveLen(1))
			g.Expect(events[0].Count).To(BeNumerically("<=", 1), "the event was sent again")
			g.Expect(events[0].Reason).To(Equal(linstorv1.ReasonWrongNamespace))
		}
	}, "3s", tick).Should(Succeed())

	// With no finalizer of ours, the misplaced connection goes at once.
	g.Expect(env.Client.Delete(ctx, lnc)).To(Succeed())
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(lnc), &linstorv1.LinstorNodeConnection{})
	}, timeout, tick).ShouldNot(Succeed())
}
