package controllers

import (
	"context"
	"testing"

	lapi "github.com/LINBIT/golinstor/client"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
)

func passphraseStatus(g Gomega, t *testing.T) linstor.PassphraseStatus {
	lc := emulatorClient(t)
	st, err := linstor.GetPassphraseStatus(context.Background(), lc, nil)
	g.Expect(err).NotTo(HaveOccurred())
	return st
}

func TestPassphraseCreatedProtectedAndReentered(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// Earlier tests' clusters set their own passphrases in the shared emulator.
	emu.ResetPassphrase()
	ns, cluster := availableCluster(t, "pass", linstorv1.LinstorSatelliteConfigurationSpec{}, "pass-a")

	secret := &corev1.Secret{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "linstor-passphrase"}, secret)).To(Succeed())
		g.Expect(secret.Finalizers).To(ContainElement("linstor.io/protect-passphrase"))
		g.Expect(secret.OwnerReferences).To(BeEmpty(), "the passphrase must not be garbage-collected with the cluster")
		g.Expect(secret.Data["MASTER_PASSPHRASE"]).To(HaveLen(43))
		g.Expect(passphraseStatus(g, t)).To(Equal(linstor.PassphraseUnlocked))
	}, timeout, tick).Should(Succeed())

	// After a controller restart LINSTOR asks for the passphrase again.
	emu.RestartController()
	g.Eventually(func(g Gomega) {
		g.Expect(passphraseStatus(g, t)).To(Equal(linstor.PassphraseUnlocked))
	}, timeout, tick).Should(Succeed())

	// Deleting the Secret (by mistake) leaves it in place until the finalizer is removed by hand.
	g.Expect(env.Client.Delete(ctx, secret)).To(Succeed())
	g.Consistently(func(g Gomega) {
		cur := &corev1.Secret{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(secret), cur)).To(Succeed())
		g.Expect(cur.Data["MASTER_PASSPHRASE"]).To(Equal(secret.Data["MASTER_PASSPHRASE"]))
	}, "2s", tick).Should(Succeed())
	releaseAfterTest(t, client.ObjectKeyFromObject(secret))

	// A cluster naming a Secret that does not exist is Degraded and nothing is invented.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.PassphraseSecretRef = &linstorv1.LocalSecretReference{Name: "my-passphrase"}
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		d := condition(c.Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonSecretMissing))
		g.Expect(d.Message).To(ContainSubstring("my-passphrase"))
	}, timeout, tick).Should(Succeed())
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "my-passphrase"}, &corev1.Secret{})
	g.Expect(err).To(HaveOccurred(), "a named passphrase Secret was invented")

	// Providing it (with the passphrase LINSTOR knows) clears the condition.
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "my-passphrase", Namespace: ns},
		Data: map[string][]byte{"MASTER_PASSPHRASE": secret.Data["MASTER_PASSPHRASE"]}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
	}, timeout, tick).Should(Succeed())
	releaseAfterTest(t, client.ObjectKey{Namespace: ns, Name: "my-passphrase"})
}

// A lost default passphrase Secret while LINSTOR has a passphrase: a new passphrase
// would never open the existing volumes, so the operator creates none, and says what
// to do.
func TestLostPassphraseSecretIsNeverReplaced(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	makeNode(t, "lost-a", "10.40.0.1", map[string]string{"suite": "lost"})
	// LINSTOR has a passphrase, its Secret is gone (deleted, or not restored with the cluster).
	emu.ResetPassphrase()
	g.Expect(emulatorClient(t).Encryption.Create(ctx, lapi.Passphrase{NewPassphrase: "the-real-one"})).To(Succeed())
	cluster := makeClusterOnLinstor(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "lost"}})
	g.Eventually(func(g Gomega) {
		d := condition(getCluster(g, cluster).Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonSecretMissing))
		g.Expect(d.Message).To(ContainSubstring("restore the Secret"))
	}, timeout, tick).Should(Succeed())
	g.Consistently(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "linstor-passphrase"}, &corev1.Secret{}))
	}, "2s", tick).Should(BeTrue(), "a new passphrase Secret was invented while LINSTOR has a passphrase")

	// Restoring the Secret with the real passphrase heals the cluster.
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "linstor-passphrase", Namespace: ns},
		Data: map[string][]byte{"MASTER_PASSPHRASE": []byte("the-real-one")}})).To(Succeed())
	releaseAfterTest(t, client.ObjectKey{Namespace: ns, Name: "linstor-passphrase"})
	g.Eventually(func(g Gomega) {
		g.Expect(condition(getCluster(g, cluster).Status.Conditions, linstorv1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
	}, timeout, tick).Should(Succeed())
}

// releaseAfterTest removes the passphrase's protecting finalizer after the test, as an
// admin would, so the namespace can go.
func releaseAfterTest(t *testing.T, key client.ObjectKey) {
	t.Cleanup(func() {
		ctx := context.Background()
		cur := &corev1.Secret{}
		if env.Client.Get(ctx, key, cur) == nil {
			cur.Finalizers = nil
			_ = env.Client.Update(ctx, cur)
		}
	})
}
