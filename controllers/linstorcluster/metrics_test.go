package linstorcluster

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// The newest Completed backup of this cluster counts; others, failed, running or
// deleted ones do not; none at all is 0; a database the operator cannot back up has no
// age.
func TestLastBackupCompleted(t *testing.T) {
	at := func(h int) *metav1.Time {
		tm := metav1.NewTime(time.Date(2026, 11, 1, h, 0, 0, 0, time.UTC))
		return &tm
	}
	backup := func(cluster string, phase linstorv1.BackupPhase, completed *metav1.Time, deleting bool) linstorv1.LinstorBackup {
		b := linstorv1.LinstorBackup{Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: cluster}},
			Status: linstorv1.LinstorBackupStatus{Phase: phase, CompletedAt: completed}}
		if deleting {
			b.DeletionTimestamp = at(23)
		}
		return b
	}
	k8s := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor"}}
	external := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor"},
		Spec: linstorv1.LinstorClusterSpec{Database: &linstorv1.DatabaseSpec{Type: linstorv1.DatabaseExternal, ConnectionURL: "etcd://db:2379"}}}
	for _, tc := range []struct {
		name    string
		cluster *linstorv1.LinstorCluster
		backups []linstorv1.LinstorBackup
		want    float64
		ok      bool
	}{
		{"none", k8s, nil, 0, true},
		{"only failed and running", k8s, []linstorv1.LinstorBackup{backup("linstor", linstorv1.BackupFailed, nil, false), backup("linstor", linstorv1.BackupRunning, nil, false)}, 0, true},
		{"newest completed", k8s, []linstorv1.LinstorBackup{
			backup("linstor", linstorv1.BackupCompleted, at(3), false),
			backup("linstor", linstorv1.BackupCompleted, at(5), false),
			backup("other", linstorv1.BackupCompleted, at(9), false),
			backup("linstor", linstorv1.BackupCompleted, at(7), true),
		}, float64(at(5).Unix()), true},
		{"external database", external, []linstorv1.LinstorBackup{backup("linstor", linstorv1.BackupCompleted, at(5), false)}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := lastBackupCompleted(tc.cluster, tc.backups)
			if got != tc.want || ok != tc.ok {
				t.Errorf("lastBackupCompleted = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// The status's conditions, certificates and upgrade phase become series; the phase
// timeout is always there, the default when the spec sets none.
func TestStatusSeries(t *testing.T) {
	notAfter := metav1.NewTime(time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC))
	phaseStarted := metav1.NewTime(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	c := &linstorv1.LinstorCluster{Status: linstorv1.LinstorClusterStatus{
		Conditions: []metav1.Condition{
			{Type: linstorv1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: linstorv1.ReasonAsExpected},
			{Type: linstorv1.ConditionUpgradeable, Status: metav1.ConditionFalse, Reason: linstorv1.ReasonUpgradeInProgress},
		},
		Certificates: []linstorv1.CertificateStatus{{SecretName: "linstor-api-tls", NotAfter: &notAfter}, {SecretName: "no-expiry-yet"}},
		Upgrade:      &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeSatellites, PhaseStartedAt: &phaseStarted},
	}}
	got := statusSeries(c, 0)
	want := map[*prometheus.GaugeVec][]series{
		conditionGauge: {
			{labels: []string{"Available", "True", "AsExpected"}, value: 1},
			{labels: []string{"Upgradeable", "False", "UpgradeInProgress"}, value: 1},
		},
		certificateExpiry:   {{labels: []string{"linstor-api-tls"}, value: float64(notAfter.Unix())}},
		upgradePhaseStarted: {{labels: []string{"Satellites"}, value: float64(phaseStarted.Unix())}},
		upgradePhaseTimeout: {{value: 600}},
	}
	for vec, w := range want {
		if !equalSeries(got[vec], w) {
			t.Errorf("%v: got %+v, want %+v", vec, got[vec], w)
		}
	}
	if s := statusSeries(&linstorv1.LinstorCluster{}, 25*time.Minute); len(s[upgradePhaseStarted]) != 0 || s[upgradePhaseTimeout][0].value != 1500 {
		t.Errorf("without an upgrade, timeout 25m: %+v", s)
	}
}

func equalSeries(a, b []series) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].value != b[i].value || len(a[i].labels) != len(b[i].labels) {
			return false
		}
		for j := range a[i].labels {
			if a[i].labels[j] != b[i].labels[j] {
				return false
			}
		}
	}
	return true
}

// A pass removes the series that are gone and keeps the others (never deleting one it
// sets again), another cluster's series are untouched, and nothing removes them all.
func TestExportedSeriesReplacesOnlyWhatIsGone(t *testing.T) {
	vec := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "test_series"}, []string{"namespace", "cluster", "state"})
	e := exportedSeries{last: map[*prometheus.GaugeVec]map[types.NamespacedName]map[string]bool{}}
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	e.set(vec, a, []series{{labels: []string{"x"}, value: 1}, {labels: []string{"y"}, value: 2}})
	e.set(vec, b, []series{{labels: []string{"x"}, value: 3}})
	kept := vec.WithLabelValues("ns", "a", "y")
	e.set(vec, a, []series{{labels: []string{"y"}, value: 4}})
	if n := len(collect(t, vec)); n != 2 {
		t.Fatalf("series after the second pass of a: %d, want 2 (a/y and b/x)", n)
	}
	if v := collect(t, vec)["a/ns/y"]; v != 4 {
		t.Errorf("a/y = %v, want 4", v)
	}
	if vec.WithLabelValues("ns", "a", "y") != kept {
		t.Error("a/y was deleted and created again: a scrape in between would have missed it")
	}
	e.set(vec, a, nil)
	if got := collect(t, vec); len(got) != 1 || got["b/ns/x"] != 3 {
		t.Errorf("after a is forgotten: %v, want only b/x", got)
	}
}

// collect reads every series of vec, keyed by its label values in label name order
// joined with "/".
func collect(t *testing.T, vec *prometheus.GaugeVec) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(vec)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var values []string // by label name: cluster, namespace, state
			for _, l := range m.GetLabel() {
				values = append(values, l.GetValue())
			}
			out[strings.Join(values, "/")] = m.GetGauge().GetValue()
		}
	}
	return out
}
