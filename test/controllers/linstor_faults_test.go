package controllers

import (
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/emulator"
)

// LINSTOR failing: a blip shorter than the grace period changes nothing, a lasting
// failure is reported on the cluster; an OFFLINE node and a satellite of another
// version are reported on the satellite, the cluster and the metrics; all recover.
func TestLinstorErrorsSetConditionsAndRecover(t *testing.T) {
	g := NewWithT(t)
	ns, cluster := availableCluster(t, "faults", linstorv1.LinstorSatelliteConfigurationSpec{}, "faults-a", "faults-b")

	// A blip (1.5 s of failures, shorter than the 3 s grace of this suite) does not flip the condition.
	stillAvailable := func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
	}
	// A failing test must not leave the fault behind for the next ones.
	t.Cleanup(func() { emu.InjectFault("GET /v1/controller/version", emulator.Fault{}) })
	emu.InjectFault("GET /v1/controller/version", emulator.Fault{Status: http.StatusInternalServerError})
	g.Consistently(stillAvailable, "1500ms", tick).Should(Succeed())
	emu.InjectFault("GET /v1/controller/version", emulator.Fault{})
	g.Consistently(stillAvailable, "3s", tick).Should(Succeed())

	// A lasting failure (longer than the 3 s grace of this suite) is reported.
	emu.InjectFault("GET /v1/controller/version", emulator.Fault{Status: http.StatusInternalServerError})
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		a := condition(c.Status.Conditions, linstorv1.ConditionAvailable)
		g.Expect(a.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(a.Reason).To(Equal(linstorv1.ReasonLinstorUnreachable))
	}, timeout, tick).Should(Succeed())
	emu.InjectFault("GET /v1/controller/version", emulator.Fault{})
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, tick).Should(Succeed())

	g.Expect(emu.SetNodeOnline("faults-b", false)).To(Succeed())
	g.Eventually(func(g Gomega) {
		sat := get(g, ns, "faults-b", &linstorv1.LinstorSatellite{})
		a := condition(sat.Status.Conditions, linstorv1.ConditionAvailable)
		g.Expect(a.Reason).To(Equal(linstorv1.ReasonNodeOffline))
		c := getCluster(g, cluster)
		g.Expect(c.Status.SatellitesSummary).To(Equal("1/2"))
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionAvailable).Reason).To(Equal(linstorv1.ReasonSatellitesNotReady))
		g.Expect(gauge(g, "linstor_operator_satellites", map[string]string{"namespace": ns, "state": "OFFLINE"})).To(Equal(1.0))
		g.Expect(gauge(g, "linstor_operator_satellites", map[string]string{"namespace": ns, "state": "ONLINE"})).To(Equal(1.0))
	}, timeout, tick).Should(Succeed())
	g.Expect(emu.SetSatelliteVersion("faults-b", "1.32.0")).To(Succeed())
	g.Expect(emu.SetNodeOnline("faults-b", true)).To(Succeed())
	g.Eventually(func(g Gomega) {
		sat := get(g, ns, "faults-b", &linstorv1.LinstorSatellite{})
		g.Expect(condition(sat.Status.Conditions, linstorv1.ConditionAvailable).Reason).To(Equal(linstorv1.ReasonVersionMismatch))
	}, timeout, tick).Should(Succeed())
	g.Expect(emu.SetSatelliteVersion("faults-b", "")).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(c.Status.SatellitesSummary).To(Equal("2/2"))
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, tick).Should(Succeed())
}
