package replicahealth

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/linstor"
)

func TestSeverity(t *testing.T) {
	for i := 1; i < len(States); i++ {
		if Severity(States[i-1]) <= Severity(States[i]) {
			t.Errorf("Severity(%s) = %d is not worse than Severity(%s) = %d", States[i-1], Severity(States[i-1]), States[i], Severity(States[i]))
		}
	}
	if Severity(Healthy) != 0 || Severity("") != -1 || Severity(SplitBrain) != len(States)-1 {
		t.Errorf("Healthy %d, \"\" %d, SplitBrain %d", Severity(Healthy), Severity(""), Severity(SplitBrain))
	}
}

func reportOf(resources ...*Resource) *Report {
	r := &Report{Now: fxNow, Resources: map[string]*Resource{}}
	for _, res := range resources {
		r.Resources[res.Name] = res
	}
	return r
}

func TestWorst(t *testing.T) {
	old, recent := fxNow.Add(-time.Hour), fxNow.Add(-time.Minute)
	rep := reportOf(
		&Resource{Name: "ok", State: Healthy, Since: old},
		&Resource{Name: "deg-recent", State: Degraded, Since: recent},
		&Resource{Name: "deg-old", State: Degraded, Since: old},
		&Resource{Name: "deg-old-b", State: Degraded, Since: old},
		&Resource{Name: "sb", State: SplitBrain, Since: recent},
		&Resource{Name: "unknown", State: Unknown, Since: old},
		&Resource{Name: "syncing", State: Syncing, Since: old},
	)
	cases := []struct {
		name string
		n    int
		want []string
	}{
		{name: "severity, then longest in state, then name; Healthy never", n: 10, want: []string{"sb", "deg-old", "deg-old-b", "deg-recent", "syncing", "unknown"}},
		{name: "at most n", n: 2, want: []string{"sb", "deg-old"}},
		{name: "n = 0", n: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range rep.Worst(tc.n) {
				got = append(got, r.Name)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if (*Report)(nil).Worst(3) != nil {
		t.Error("a nil report has no worst resources")
	}
}

func TestHoldingAcrossResources(t *testing.T) {
	rep := Classify(Input{
		Now: fxNow,
		Replicas: []linstor.ResourceView{
			replicaOf("pvc-b", "Node-A", "UpToDate", "node-b:Connecting"), offlineOf("pvc-b", "node-b"),
			replicaOf("pvc-a", "node-a", "UpToDate", "node-b:Connecting"), offlineOf("pvc-a", "node-b"),
			replicaOf("pvc-c", "node-a", "UpToDate", "node-b"), replicaOf("pvc-c", "node-b", "UpToDate", "node-a"),
		},
	})
	want := []Hold{{Resource: "pvc-a", Reason: "last UpToDate replica"}, {Resource: "pvc-b", Reason: "last UpToDate replica"}}
	if got := rep.Holding("NODE-A"); !reflect.DeepEqual(got, want) {
		t.Errorf("node-a holds %v, want %v", got, want)
	}
	if got := rep.Holding("node-b"); got != nil {
		t.Errorf("node-b holds %v, want nothing", got)
	}
	if (*Report)(nil).Holding("node-a") != nil {
		t.Error("a nil report holds nothing")
	}
}

func offlineOf(rsc, node string) linstor.ResourceView {
	v := offline(node)
	v.Name = rsc
	return v
}

func TestTransitions(t *testing.T) {
	prev := reportOf(
		&Resource{Name: "same", State: Healthy},
		&Resource{Name: "worse", State: Healthy},
		&Resource{Name: "better", State: Degraded},
		&Resource{Name: "gone", State: Degraded},
	)
	next := reportOf(
		&Resource{Name: "same", State: Healthy},
		&Resource{Name: "worse", State: SplitBrain},
		&Resource{Name: "better", State: Healthy},
		&Resource{Name: "new", State: Syncing},
	)
	cases := []struct {
		name       string
		prev, next *Report
		want       []Transition
	}{
		{name: "changed, appeared and disappeared, by name", prev: prev, next: next, want: []Transition{
			{Resource: "better", From: Degraded, To: Healthy},
			{Resource: "gone", From: Degraded, To: ""},
			{Resource: "new", From: "", To: Syncing},
			{Resource: "worse", From: Healthy, To: SplitBrain},
		}},
		{name: "first report: every resource appears", prev: nil, next: reportOf(&Resource{Name: "a", State: Healthy}), want: []Transition{{Resource: "a", To: Healthy}}},
		{name: "no report now: every resource disappears", prev: reportOf(&Resource{Name: "a", State: Healthy}), next: nil, want: []Transition{{Resource: "a", From: Healthy}}},
		{name: "nothing changed", prev: prev, next: prev},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Transitions(tc.prev, tc.next); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// benchInput is n resources of three connected UpToDate replicas each over 1,000 nodes,
// with every tenth resource missing a replica.
func benchInput(n int) Input {
	in := Input{Now: fxNow, Definitions: make(map[string]Definition, n), PlaceCounts: map[string]int{"sc": 3}}
	in.Replicas = make([]linstor.ResourceView, 0, 3*n)
	for i := 0; i < n; i++ {
		rsc := fmt.Sprintf("pvc-%05d", i)
		in.Definitions[rsc] = Definition{Name: rsc, UID: "uid-" + rsc, ResourceGroup: "sc"}
		nodes := [3]string{fmt.Sprintf("node-%03d", i%1000), fmt.Sprintf("node-%03d", (i+1)%1000), fmt.Sprintf("node-%03d", (i+2)%1000)}
		for j, node := range nodes {
			if i%10 == 0 && j == 2 {
				v := offline(node)
				v.Name = rsc
				in.Replicas = append(in.Replicas, v)
				continue
			}
			in.Replicas = append(in.Replicas, replicaOf(rsc, node, "UpToDate", nodes[(j+1)%3], nodes[(j+2)%3]))
		}
	}
	return in
}

// BenchmarkClassify10k: 10,000 resources × 3 replicas. B/op is what one Classify
// allocates; report-B what the report keeps alive afterwards.
func BenchmarkClassify10k(b *testing.B) {
	in := benchInput(10000)
	var rep *Report
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		in.Previous = rep
		rep = Classify(in)
	}
	b.StopTimer()
	if len(rep.Resources) != 10000 || rep.Counts[Degraded] != 1000 {
		b.Fatalf("%d resources, counts %v", len(rep.Resources), rep.Counts)
	}
	in.Previous = nil
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	kept := Classify(in)
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "report-B")
	runtime.KeepAlive(kept)
	runtime.KeepAlive(in.Replicas)
}
