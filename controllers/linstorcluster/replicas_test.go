package linstorcluster

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/linstor-operator/linstor-operator/pkg/replicahealth"
)

func reportOf(now time.Time, states map[string]replicahealth.State) *replicahealth.Report {
	r := &replicahealth.Report{Now: now, Resources: map[string]*replicahealth.Resource{}, Counts: map[replicahealth.State]int{}}
	for name, st := range states {
		r.Resources[name] = &replicahealth.Resource{Name: name, UID: "u-" + name, State: st, Since: now.Add(-time.Minute), Placed: 2, Message: name + " is " + string(st)}
		r.Counts[st]++
	}
	return r
}

func TestVolumeChanges(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	prev := reportOf(now, map[string]replicahealth.State{"a": replicahealth.Healthy, "b": replicahealth.Degraded, "c": replicahealth.Healthy, "gone": replicahealth.Degraded})
	next := reportOf(now, map[string]replicahealth.State{"a": replicahealth.Degraded, "b": replicahealth.Healthy, "c": replicahealth.SplitBrain,
		"new": replicahealth.Healthy, "newsync": replicahealth.Syncing, "newbad": replicahealth.QuorumLost})
	var got []string
	for _, ch := range volumeChanges(prev, next) {
		got = append(got, ch.Resource+":"+string(ch.From)+">"+string(ch.To))
	}
	// Worst first; a new healthy or syncing volume and a deleted one are not news.
	want := "c:Healthy>SplitBrain newbad:>QuorumLost a:Healthy>Degraded b:Degraded>Healthy"
	if strings.Join(got, " ") != want {
		t.Fatalf("changes %q, want %q", strings.Join(got, " "), want)
	}
	if got := volumeChanges(nil, next); len(got) != 3 {
		t.Fatalf("after a restart only problems are told, got %v", got)
	}
}

func TestReplicasStatus(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	r := reportOf(now, map[string]replicahealth.State{"a": replicahealth.Healthy, "b": replicahealth.Degraded, "c": replicahealth.SplitBrain})
	pct, eta := 42.25, 90*time.Second
	r.Resources["b"].SyncPercent, r.Resources["b"].SyncETA = &pct, &eta
	st := replicasStatus(r)
	if st.Total != 3 || st.Healthy != 1 || st.Degraded != 1 || st.SplitBrain != 1 || len(st.Worst) != 2 {
		t.Fatalf("status %+v", st)
	}
	if st.Worst[0].Name != "c" || st.Worst[1].SyncPercent != "42.2" || !st.Worst[1].SyncETA.Time.Equal(now.Add(eta)) {
		t.Fatalf("worst %+v", st.Worst)
	}
	// observedAt moves only with the rest: a steady state writes nothing.
	later := replicasStatus(reportOf(now.Add(time.Minute), map[string]replicahealth.State{"a": replicahealth.Healthy}))
	again := keepObservedAt(later.DeepCopy(), replicasStatus(reportOf(now.Add(2*time.Minute), map[string]replicahealth.State{"a": replicahealth.Healthy})))
	if !again.ObservedAt.Equal(later.ObservedAt) {
		t.Fatalf("observedAt moved without a change: %v -> %v", later.ObservedAt, again.ObservedAt)
	}
	changed := keepObservedAt(later.DeepCopy(), replicasStatus(reportOf(now.Add(2*time.Minute), map[string]replicahealth.State{"a": replicahealth.Degraded})))
	if changed.ObservedAt.Equal(later.ObservedAt) {
		t.Fatal("observedAt kept although the counts changed")
	}
	if s, reason, msg := redundancy(r); s != metav1.ConditionFalse || reason != "SplitBrain" || !strings.Contains(msg, "1 SplitBrain, 1 Degraded of 3 resources") {
		t.Fatalf("redundancy %s %s %q", s, reason, msg)
	}
	if s, reason, _ := redundancy(reportOf(now, map[string]replicahealth.State{"a": replicahealth.Healthy})); s != metav1.ConditionTrue || reason != "AsExpected" {
		t.Fatalf("a healthy cluster: %s %s", s, reason)
	}
}
