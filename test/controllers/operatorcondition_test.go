package controllers

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	"github.com/operator-framework/operator-lib/conditions"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/operatorcondition"
)

// olmCondition reads and writes one OperatorCondition's Upgradeable condition the way
// operator-lib's does in a pod (which finds the object through OLM's environment
// variable and the pod's service-account namespace, both absent in a test process).
type olmCondition struct{ key client.ObjectKey }

func (c olmCondition) Get(ctx context.Context) (*metav1.Condition, error) {
	oc := &operatorsv2.OperatorCondition{}
	if err := env.Client.Get(ctx, c.key, oc); err != nil {
		return nil, err
	}
	if cond := meta.FindStatusCondition(oc.Spec.Conditions, operatorsv2.Upgradeable); cond != nil {
		return cond, nil
	}
	return nil, conditions.ErrNoOperatorCondition
}

func (c olmCondition) Set(ctx context.Context, status metav1.ConditionStatus, opts ...conditions.Option) error {
	oc := &operatorsv2.OperatorCondition{}
	if err := env.Client.Get(ctx, c.key, oc); err != nil {
		return err
	}
	cond := metav1.Condition{Type: operatorsv2.Upgradeable, Status: status}
	for _, o := range opts {
		o(&cond)
	}
	meta.SetStatusCondition(&oc.Spec.Conditions, cond)
	return env.Client.Update(ctx, oc)
}

func TestOperatorConditionFollowsTheClusters(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	oc := &operatorsv2.OperatorCondition{ObjectMeta: metav1.ObjectMeta{Name: "linstor-operator.v0.2.0", Namespace: ns}}
	g.Expect(env.Client.Create(ctx, oc)).To(Succeed())
	r := &operatorcondition.Reconciler{Client: env.Client, Condition: olmCondition{key: client.ObjectKeyFromObject(oc)}}
	upgradeable := func(g Gomega) metav1.Condition {
		_, err := r.Reconcile(ctx, reconcile.Request{})
		g.Expect(err).NotTo(HaveOccurred())
		got := &operatorsv2.OperatorCondition{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(oc), got)).To(Succeed())
		cond := meta.FindStatusCondition(got.Spec.Conditions, operatorsv2.Upgradeable)
		g.Expect(cond).NotTo(BeNil())
		return *cond
	}

	// A cluster whose spec names a Secret that does not exist is degraded, which holds no
	// operator upgrade: the next release may be the fix.
	makeNode(t, "oc-a", "10.5.0.1", map[string]string{"suite": "oc"})
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "oc"},
		PassphraseSecretRef: &linstorv1.LocalSecretReference{Name: "missing"}})
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionDegraded).Reason).To(Equal(linstorv1.ReasonSecretMissing))
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionUpgradeable).Message).To(ContainSubstring("which holds no operator upgrade"))
		cond := upgradeable(g)
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), cond.Message)
		g.Expect(cond.Reason).To(Equal(operatorcondition.ReasonUpgradeable))
	}, timeout, tick).Should(Succeed())

	// A backup waiting for the LINSTOR controller to stop holds it: another release would
	// take over an operation it did not start.
	pod := runningControllerPod(t, ns, "linstor-controller-oc", cluster)
	backup := &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: "oc-backup", Namespace: ns},
		Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}}}
	g.Expect(env.Client.Create(ctx, backup)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cond := upgradeable(g)
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Reason).To(Equal(operatorcondition.ReasonNotUpgradeable))
		g.Expect(cond.Message).To(ContainSubstring("LinstorCluster " + ns + "/linstor: "))
	}, timeout, tick).Should(Succeed())

	// The backup withdrawn: OLM may upgrade the operator again.
	g.Expect(env.Client.Delete(ctx, backup)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, pod)).To(Succeed())
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.PassphraseSecretRef = nil })).To(Succeed())
	g.Eventually(func(g Gomega) {
		cond := upgradeable(g)
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), cond.Message)
		g.Expect(cond.Reason).To(Equal(operatorcondition.ReasonUpgradeable))
	}, timeout, tick).Should(Succeed())

	// Nothing changed: no write.
	before := &operatorsv2.OperatorCondition{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(oc), before)).To(Succeed())
	upgradeable(g)
	after := &operatorsv2.OperatorCondition{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(oc), after)).To(Succeed())
	g.Expect(after.ResourceVersion).To(Equal(before.ResourceVersion))
}
