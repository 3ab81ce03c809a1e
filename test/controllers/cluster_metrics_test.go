package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// The gauges the alerts in config/prometheus read follow the LinstorCluster's status:
// its conditions, its certificates' expiry, whether a backup was ever taken, the
// upgrade's phase with its start and timeout, the satellites by state; and they go with
// the cluster.
func TestClusterMetricsFollowTheStatus(t *testing.T) {
	g := NewWithT(t)
	ns, cluster := preflightCluster(t, "mtr", "mtr-a", "mtr-b")
	of := map[string]string{"namespace": ns, "cluster": cluster.Name}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{"namespace": ns, "cluster": cluster.Name}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}

	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		for _, typ := range []string{linstorv1.ConditionAvailable, linstorv1.ConditionUpgradeable, linstorv1.ConditionDegraded} {
			cond := condition(c.Status.Conditions, typ)
			g.Expect(gauge(g, "linstor_operator_cluster_condition", with(map[string]string{"type": typ, "status": string(cond.Status), "reason": cond.Reason}))).
				To(Equal(1.0), "%s %s %s", typ, cond.Status, cond.Reason)
		}
		// One series per condition type: the current status and reason.
		g.Expect(seriesOf(g, "linstor_operator_cluster_condition", of)).To(HaveLen(len(c.Status.Conditions)))
		// TLS is on by default: three generated certificates.
		g.Expect(c.Status.Certificates).To(HaveLen(3))
		for _, cert := range c.Status.Certificates {
			g.Expect(gauge(g, "linstor_operator_certificate_expiry_timestamp_seconds", with(map[string]string{"secret": cert.SecretName}))).
				To(Equal(float64(cert.NotAfter.Unix())), cert.SecretName)
		}
		g.Expect(seriesOf(g, "linstor_operator_satellites", of)).To(ConsistOf(with(map[string]string{"state": "ONLINE"})))
		g.Expect(gauge(g, "linstor_operator_satellites", with(map[string]string{"state": "ONLINE"}))).To(Equal(2.0))
		g.Expect(gauge(g, "linstor_operator_backup_last_completed_timestamp_seconds", of)).To(Equal(0.0), "no backup was ever taken")
		g.Expect(gauge(g, "linstor_operator_upgrade_phase_timeout_seconds", of)).To(Equal(600.0))
		g.Expect(seriesOf(g, "linstor_operator_upgrade_phase_started_timestamp_seconds", of)).To(BeEmpty())
	}, timeout, tick).Should(Succeed())

	// An upgrade held in Preflight by an OFFLINE satellite: its phase and start, and the
	// timeout the spec sets.
	g.Expect(emu.SetNodeOnline("mtr-b", false)).To(Succeed())
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.Version = preflightTo
		c.Spec.Upgrade = &linstorv1.UpgradeSpec{PhaseTimeout: &metav1.Duration{Duration: 25 * time.Minute}}
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(upgradePhase(c)).To(Equal(linstorv1.UpgradePreflight))
		g.Expect(c.Status.Upgrade.PhaseStartedAt).NotTo(BeNil())
		g.Expect(gauge(g, "linstor_operator_upgrade_phase_started_timestamp_seconds", with(map[string]string{"phase": "Preflight"}))).
			To(Equal(float64(c.Status.Upgrade.PhaseStartedAt.Unix())))
		g.Expect(seriesOf(g, "linstor_operator_upgrade_phase_started_timestamp_seconds", of)).To(HaveLen(1))
		g.Expect(gauge(g, "linstor_operator_upgrade_phase_timeout_seconds", of)).To(Equal(1500.0))
		g.Expect(gauge(g, "linstor_operator_satellites", with(map[string]string{"state": "OFFLINE"}))).To(Equal(1.0))
		g.Expect(gauge(g, "linstor_operator_satellites", with(map[string]string{"state": "ONLINE"}))).To(Equal(1.0))
	}, timeout, tick).Should(Succeed())

	// Deleted: every series of the cluster goes.
	ctx := context.Background()
	g.Expect(env.Client.Delete(ctx, cluster)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(cluster), &linstorv1.LinstorCluster{}))
	}, timeout, tick).Should(BeTrue())
	for _, name := range []string{"linstor_operator_cluster_condition", "linstor_operator_certificate_expiry_timestamp_seconds",
		"linstor_operator_backup_last_completed_timestamp_seconds", "linstor_operator_upgrade_phase_started_timestamp_seconds",
		"linstor_operator_upgrade_phase_timeout_seconds", "linstor_operator_resources", "linstor_operator_satellites"} {
		g.Expect(seriesOf(g, name, of)).To(BeEmpty(), "%s of the deleted cluster", name)
	}
}

// seriesOf lists the label sets of a metric's series that carry all these labels.
func seriesOf(g Gomega, name string, labels map[string]string) []map[string]string {
	var out []map[string]string
	for _, m := range metricsMatching(g, name, labels) {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		out = append(out, have)
	}
	return out
}
