package lifecycle

import (
	"reflect"
	"strings"
	"testing"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Table tests for the acknowledgement of nodes gone for good: which are honoured, what
// status.lostNodes becomes, which Events say so, and what the upgrade's checks see.

var fxAckedAt = fxNow.Add(-time.Hour)

// gone: LINSTOR reports the node OFFLINE and its Kubernetes Node is deleted.
func gone(name string) SeenNode {
	return SeenNode{InLinstor: true, Name: name, ConnectionStatus: "OFFLINE"}
}

func recorded(names ...string) []linstorv1.LostNode {
	var out []linstorv1.LostNode
	for _, n := range names {
		out = append(out, linstorv1.LostNode{Name: n, AcknowledgedAt: mt(fxAckedAt), Message: "recorded"})
	}
	return out
}

type lostCase struct {
	name       string
	annotation string
	recorded   []linstorv1.LostNode
	seen       []SeenNode // nil: nothing looked at
	unseen     bool
	// lost are the names recorded afterwards; newAt those stamped now (the others keep
	// fxAckedAt).
	lost, newAt []string
	// notHonoured: parts of the refusals, in order.
	notHonoured []string
	events      []string
	eventHas    []string
	unknown     bool
}

var lostCases = []lostCase{
	{name: "no annotation, nothing recorded: nothing"},
	{
		name: "an OFFLINE node whose Kubernetes Node is gone: honoured, recorded now, an Event", annotation: "node-b",
		seen: []SeenNode{gone("node-b")}, lost: []string{"node-b"}, newAt: []string{"node-b"},
		events: ev("LostNodeAcknowledged"), eventHas: []string{"node-b", "OFFLINE", "Kubernetes Node is gone", "no DRBD peer reports a connection to it", "Preflight, Satellites and Verify proceed"},
	},
	{
		name: "an OFFLINE node whose Kubernetes Node exists but runs no satellite pod: honoured", annotation: "node-b",
		seen: []SeenNode{{InLinstor: true, Name: "node-b", ConnectionStatus: "OFFLINE", KubernetesNode: true}},
		lost: []string{"node-b"}, newAt: []string{"node-b"}, events: ev("LostNodeAcknowledged"), eventHas: []string{"no satellite pod runs"},
	},
	{
		name: "UNKNOWN (LINSTOR has no peer for it): honoured", annotation: "node-b",
		seen: []SeenNode{{InLinstor: true, Name: "node-b", ConnectionStatus: "UNKNOWN"}},
		lost: []string{"node-b"}, newAt: []string{"node-b"}, events: ev("LostNodeAcknowledged"),
	},
	{
		name: "already recorded: kept with its time, no new Event", annotation: "node-b", recorded: recorded("node-b"),
		seen: []SeenNode{gone("node-b")}, lost: []string{"node-b"},
	},
	{
		name: "an ONLINE node: not honoured, says why", annotation: "node-a",
		seen:        []SeenNode{{InLinstor: true, Name: "node-a", ConnectionStatus: "ONLINE", KubernetesNode: true, SatellitePod: "Running"}},
		notHonoured: []string{"node-a: LINSTOR reports it ONLINE"},
	},
	{
		name: "a satellite that answers at another version is not gone", annotation: "node-a",
		seen:        []SeenNode{{InLinstor: true, Name: "node-a", ConnectionStatus: "VERSION_MISMATCH", KubernetesNode: true}},
		notHonoured: []string{"node-a: LINSTOR reports it VERSION_MISMATCH"},
	},
	{
		name: "CONNECTED (a satellite is connecting) is not gone", annotation: "node-a",
		seen:        []SeenNode{{InLinstor: true, Name: "node-a", ConnectionStatus: "CONNECTED"}},
		notHonoured: []string{"node-a: LINSTOR reports it CONNECTED"},
	},
	{
		name: "OFFLINE but its satellite pod runs: not honoured, fence the machine first", annotation: "node-b",
		seen:        []SeenNode{{InLinstor: true, Name: "node-b", ConnectionStatus: "OFFLINE", KubernetesNode: true, SatellitePod: "Running"}},
		notHonoured: []string{"node-b: its satellite pod is Running", "fence or power off"},
	},
	{
		name: "OFFLINE, but DRBD on another node is Connected to it: not honoured, fence it first", annotation: "node-b",
		seen:        []SeenNode{{InLinstor: true, Name: "node-b", ConnectionStatus: "OFFLINE", DrbdConnected: []string{"pvc-1 on node-a", "pvc-2 on node-c"}}},
		notHonoured: []string{"node-b: DRBD reports a connection to it", "pvc-1 on node-a", "pvc-2 on node-c", "its DRBD runs", "fence or power off"},
	},
	{
		name: "OFFLINE, its satellite pod Terminating (its kubelet never confirmed it stopped): not honoured", annotation: "node-b",
		seen:        []SeenNode{{InLinstor: true, Name: "node-b", ConnectionStatus: "OFFLINE", KubernetesNode: true, SatellitePod: "Terminating"}},
		notHonoured: []string{"node-b: its satellite pod is Terminating", "may still run", "fence or power off"},
	},
	{
		name: "OFFLINE, a satellite pod Pending on its Node: not honoured", annotation: "node-b",
		seen:        []SeenNode{{InLinstor: true, Name: "node-b", ConnectionStatus: "OFFLINE", KubernetesNode: true, SatellitePod: "Pending"}},
		notHonoured: []string{"node-b: a satellite pod is Pending on it"},
	},
	{
		name: "recorded, then DRBD on another node connects to it again: withdrawn, a Warning says why", annotation: "node-b", recorded: recorded("node-b"),
		seen:        []SeenNode{{InLinstor: true, Name: "node-b", ConnectionStatus: "OFFLINE", DrbdConnected: []string{"pvc-1 on node-a"}}},
		notHonoured: []string{"pvc-1 on node-a"}, events: ev("LostNodeWithdrawn"), eventHas: []string{"no longer treated as lost", "pvc-1 on node-a"},
	},
	{
		name: "a name LINSTOR does not have: not honoured", annotation: "node-x",
		seen: []SeenNode{{Name: "node-x"}}, notHonoured: []string{"node-x: LINSTOR has no node of that name"},
	},
	{
		name: "one honoured, one not: each on its own", annotation: "node-a, node-b",
		seen: []SeenNode{{InLinstor: true, Name: "node-a", ConnectionStatus: "ONLINE"}, gone("node-b")},
		lost: []string{"node-b"}, newAt: []string{"node-b"}, events: ev("LostNodeAcknowledged"),
		notHonoured: []string{"node-a: LINSTOR reports it ONLINE"},
	},
	{
		name: "spaces, empty items, repeats and other capitals are one name", annotation: " ,node-b,, NODE-B ,",
		seen: []SeenNode{gone("node-b")}, lost: []string{"node-b"}, newAt: []string{"node-b"}, events: ev("LostNodeAcknowledged"),
	},
	{
		name: "sorted by name", annotation: "node-c,node-b",
		seen: []SeenNode{gone("node-b"), gone("node-c")}, lost: []string{"node-b", "node-c"}, newAt: []string{"node-b", "node-c"},
		events: ev("LostNodeAcknowledged", "LostNodeAcknowledged"),
	},
	{
		name: "the annotation no longer names it: the entry goes, an Event", recorded: recorded("node-b"),
		seen: []SeenNode{gone("node-b")}, events: ev("LostNodeForgotten"), eventHas: []string{"no longer names node node-b"},
	},
	{
		name: "LINSTOR no longer has it (node lost, deleted): the entry goes", annotation: "node-b", recorded: recorded("node-b"),
		seen: []SeenNode{{Name: "node-b"}}, notHonoured: []string{"LINSTOR has no node"},
		events: ev("LostNodeWithdrawn"),
	},
	{
		name: "LINSTOR no longer has it and the annotation is gone: the entry goes", recorded: recorded("node-b"),
		seen: []SeenNode{{Name: "node-b"}}, events: ev("LostNodeForgotten"), eventHas: []string{"LINSTOR no longer has it"},
	},
	{
		name: "back ONLINE: no longer treated as lost, a Warning says so", annotation: "node-b", recorded: recorded("node-b"),
		seen:        []SeenNode{{InLinstor: true, Name: "node-b", ConnectionStatus: "ONLINE", KubernetesNode: true, SatellitePod: "Running"}},
		notHonoured: []string{"node-b: LINSTOR reports it ONLINE"}, events: ev("LostNodeWithdrawn"), eventHas: []string{"no longer treated as lost"},
	},
	{
		name: "LINSTOR did not answer: what was recorded stands, nothing said", annotation: "node-b,node-c", recorded: recorded("node-b"),
		unseen: true, lost: []string{"node-b"}, unknown: true,
	},
}

func TestLostNodes(t *testing.T) {
	for _, tc := range lostCases {
		t.Run(tc.name, func(t *testing.T) {
			in := LostNodesInput{Annotation: tc.annotation, Recorded: tc.recorded, Now: fxNow}
			if !tc.unseen {
				in.Seen = map[string]SeenNode{}
				for _, s := range tc.seen {
					in.Seen[strings.ToLower(s.Name)] = s
				}
			}
			before := append([]linstorv1.LostNode(nil), tc.recorded...)
			out := LostNodes(in)
			if !reflect.DeepEqual(tc.recorded, before) {
				t.Errorf("LostNodes modified the recorded entries")
			}
			if !reflect.DeepEqual(out, LostNodes(in)) {
				t.Errorf("LostNodes is not deterministic")
			}
			var names []string
			for _, l := range out.Lost {
				names = append(names, l.Name)
				want := fxAckedAt
				for _, n := range tc.newAt {
					if n == l.Name {
						want = fxNow
					}
				}
				if l.AcknowledgedAt == nil || !l.AcknowledgedAt.Time.Equal(want) {
					t.Errorf("%s acknowledgedAt %v, want %v", l.Name, l.AcknowledgedAt, want)
				}
				if l.Message == "" {
					t.Errorf("%s has no message", l.Name)
				}
			}
			if strings.Join(names, ",") != strings.Join(tc.lost, ",") {
				t.Errorf("lost %v, want %v", names, tc.lost)
			}
			if len(out.NotHonoured) != 0 || len(tc.notHonoured) != 0 {
				all := strings.Join(out.NotHonoured, "; ")
				for _, p := range tc.notHonoured {
					if !strings.Contains(all, p) {
						t.Errorf("not honoured %q does not say %q", all, p)
					}
				}
				if len(tc.notHonoured) == 0 {
					t.Errorf("not honoured %q, want none", all)
				}
			}
			var reasons, messages []string
			for _, e := range out.Events {
				reasons, messages = append(reasons, e.Reason), append(messages, e.Message)
			}
			if strings.Join(reasons, ",") != strings.Join(tc.events, ",") {
				t.Errorf("events %v, want %v", reasons, tc.events)
			}
			for _, p := range tc.eventHas {
				if !strings.Contains(strings.Join(messages, "\n"), p) {
					t.Errorf("events %q do not say %q", messages, p)
				}
			}
			if out.Unknown != tc.unknown {
				t.Errorf("Unknown = %v, want %v", out.Unknown, tc.unknown)
			}
		})
	}
}

func TestLostNodesAreBounded(t *testing.T) {
	in := LostNodesInput{Seen: map[string]SeenNode{}, Now: fxNow}
	var names []string
	for i := 0; i < MaxLostNodes+2; i++ {
		n := "node-" + strings.Repeat("x", i/26) + string(rune('a'+i%26))
		names = append(names, n)
		in.Seen[n] = gone(n)
	}
	in.Annotation = strings.Join(names, ",")
	out := LostNodes(in)
	if len(out.Lost) != MaxLostNodes || len(out.NotHonoured) != 2 || !strings.Contains(out.NotHonoured[0], "at most 256") {
		t.Errorf("%d lost, not honoured %q; want %d and 2 refusals", len(out.Lost), out.NotHonoured, MaxLostNodes)
	}
}

func TestNeedsLostNodes(t *testing.T) {
	for _, tc := range []struct {
		annotation string
		recorded   []linstorv1.LostNode
		want       bool
	}{
		{"", nil, false},
		{" ", nil, false},
		{"node-b", nil, true},
		{"", recorded("node-b"), true}, // its entry must go
	} {
		if got := NeedsLostNodes(tc.annotation, tc.recorded); got != tc.want {
			t.Errorf("NeedsLostNodes(%q, %d recorded) = %v, want %v", tc.annotation, len(tc.recorded), got, tc.want)
		}
	}
}

// A DRBD replica as LINSTOR's resource view shows it, connected to each peer as given.
func drbdReplica(rd, node, disk string, peers map[string]bool) lapi.ResourceWithVolumes {
	conns := map[string]lapi.DrbdConnection{}
	for p, up := range peers {
		conns[p] = lapi.DrbdConnection{Connected: up}
	}
	return lapi.ResourceWithVolumes{
		Resource: lapi.Resource{Name: rd, NodeName: node, LayerObject: &lapi.ResourceLayer{Type: "DRBD", Drbd: &lapi.DrbdResource{Connections: conns},
			Children: []lapi.ResourceLayer{{Type: "STORAGE"}}}},
		Volumes: []lapi.Volume{{VolumeNumber: 0, State: lapi.VolumeState{DiskState: disk}}},
	}
}

func TestWithoutLostNodes(t *testing.T) {
	nodes := []lapi.Node{{Name: "node-a", ConnectionStatus: "ONLINE"}, {Name: "NODE-B", ConnectionStatus: "OFFLINE"}, {Name: "node-c", ConnectionStatus: "OFFLINE"}}
	resources := []lapi.ResourceWithVolumes{
		drbdReplica("pvc-1", "node-a", "UpToDate", map[string]bool{"NODE-B": false, "node-c": true}),
		drbdReplica("pvc-1", "NODE-B", "", nil),
		drbdReplica("pvc-2", "node-a", "UpToDate", map[string]bool{"node-c": false}),
		// DRBD below another layer: its connections are filtered where they are.
		{Resource: lapi.Resource{Name: "pvc-3", NodeName: "node-a", LayerObject: &lapi.ResourceLayer{Type: "WRITECACHE",
			Children: []lapi.ResourceLayer{{Type: "DRBD", Drbd: &lapi.DrbdResource{Connections: map[string]lapi.DrbdConnection{"node-b": {}}}}}}}},
	}
	syncing := map[string]bool{"pvc-1": true, "pvc-2": true}
	orig := [][]lapi.DrbdConnection{}
	for _, r := range resources {
		var cs []lapi.DrbdConnection
		if d := r.LayerObject.Drbd; d != nil {
			for _, c := range d.Connections {
				cs = append(cs, c)
			}
		}
		orig = append(orig, cs)
	}

	n, r, s := WithoutLostNodes(map[string]bool{"node-b": true}, nodes, resources, syncing)
	var names []string
	for _, x := range n {
		names = append(names, x.Name)
	}
	if strings.Join(names, ",") != "node-a,node-c" {
		t.Errorf("nodes %v, want node-a,node-c (node-c is not acknowledged: still judged)", names)
	}
	if len(r) != 3 || r[0].NodeName != "node-a" || r[1].Name != "pvc-2" || r[2].Name != "pvc-3" {
		t.Fatalf("resources %+v, want pvc-1, pvc-2 and pvc-3 on node-a", r)
	}
	if c := r[0].LayerObject.Drbd.Connections; len(c) != 1 || !c["node-c"].Connected {
		t.Errorf("pvc-1 on node-a connections %+v, want only node-c", c)
	}
	if c := r[1].LayerObject.Drbd.Connections; len(c) != 1 {
		t.Errorf("pvc-2 connections %+v: a peer that is not acknowledged is kept", c)
	}
	if c := r[2].LayerObject.Children[0].Drbd.Connections; len(c) != 0 {
		t.Errorf("pvc-3's DRBD below writecache still connects to %v", c)
	}
	if r[0].LayerObject.Children[0].Type != "STORAGE" {
		t.Errorf("the layers below DRBD were lost: %+v", r[0].LayerObject)
	}
	if !reflect.DeepEqual(s, map[string]bool{"pvc-2": true}) {
		t.Errorf("syncing %v, want pvc-2 only (pvc-1 is judged by its remaining replicas' disk states)", s)
	}
	// The inputs are untouched.
	if len(nodes) != 3 || len(resources) != 4 || len(syncing) != 2 || len(resources[0].LayerObject.Drbd.Connections) != 2 ||
		len(resources[3].LayerObject.Children[0].Drbd.Connections) != 1 || len(orig[0]) != 2 {
		t.Errorf("WithoutLostNodes modified its inputs")
	}

	// Nothing acknowledged: the inputs as they are.
	n, r, s = WithoutLostNodes(nil, nodes, resources, syncing)
	if !reflect.DeepEqual(n, nodes) || !reflect.DeepEqual(r, resources) || !reflect.DeepEqual(s, syncing) {
		t.Errorf("with nothing acknowledged the inputs changed")
	}
}

func TestSatellitePodState(t *testing.T) {
	deleting := metav1.NewTime(fxNow)
	pod := func(node string, phase corev1.PodPhase, terminating bool) corev1.Pod {
		p := corev1.Pod{Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
		if terminating {
			p.DeletionTimestamp = &deleting
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		want string
	}{
		{"no pod", nil, ""},
		{"a pod on another node", []corev1.Pod{pod("node-a", corev1.PodRunning, false)}, ""},
		{"Running", []corev1.Pod{pod("node-b", corev1.PodRunning, false)}, "Running"},
		{"Running, other capitals", []corev1.Pod{pod("NODE-B", corev1.PodRunning, false)}, "Running"},
		// A partitioned node's kubelet never confirms the deletion: the pod stays
		// Terminating, its containers may run on.
		{"Running and Terminating", []corev1.Pod{pod("node-b", corev1.PodRunning, true)}, "Terminating"},
		{"Pending and Terminating", []corev1.Pod{pod("node-b", corev1.PodPending, true)}, "Terminating"},
		{"Unknown and Terminating", []corev1.Pod{pod("node-b", corev1.PodUnknown, true)}, "Terminating"},
		{"Pending: its kubelet may start it", []corev1.Pod{pod("node-b", corev1.PodPending, false)}, "Pending"},
		{"Failed: stopped", []corev1.Pod{pod("node-b", corev1.PodFailed, false)}, ""},
		{"Succeeded and Terminating: stopped", []corev1.Pod{pod("node-b", corev1.PodSucceeded, true)}, ""},
		{"the most alive one counts", []corev1.Pod{pod("node-b", corev1.PodPending, false), pod("node-b", corev1.PodRunning, true),
			pod("node-b", corev1.PodFailed, false)}, "Terminating"},
		{"Running over Terminating", []corev1.Pod{pod("node-b", corev1.PodRunning, true), pod("node-b", corev1.PodRunning, false)}, "Running"},
	} {
		if got := SatellitePodState(tc.pods, "node-b"); got != tc.want {
			t.Errorf("%s: SatellitePodState = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestDrbdConnectedTo(t *testing.T) {
	resources := []lapi.ResourceWithVolumes{
		drbdReplica("pvc-1", "node-a", "UpToDate", map[string]bool{"NODE-B": true, "node-c": true}),
		drbdReplica("pvc-1", "node-b", "", map[string]bool{"node-a": true}), // its own view: not another node's
		drbdReplica("pvc-2", "node-c", "UpToDate", map[string]bool{"node-b": false}),
		drbdReplica("pvc-3", "node-c", "UpToDate", map[string]bool{"node-b": true}),
		// DRBD below another layer.
		{Resource: lapi.Resource{Name: "pvc-4", NodeName: "node-d", LayerObject: &lapi.ResourceLayer{Type: "WRITECACHE",
			Children: []lapi.ResourceLayer{{Type: "DRBD", Drbd: &lapi.DrbdResource{Connections: map[string]lapi.DrbdConnection{"node-b": {Connected: true}}}}}}}},
		// No DRBD, no layer data.
		{Resource: lapi.Resource{Name: "pvc-5", NodeName: "node-a", LayerObject: &lapi.ResourceLayer{Type: "STORAGE"}}},
		{Resource: lapi.Resource{Name: "pvc-6", NodeName: "node-a"}},
	}
	got := DrbdConnectedTo(resources, "node-b")
	if want := []string{"pvc-1 on node-a", "pvc-3 on node-c", "pvc-4 on node-d"}; !reflect.DeepEqual(got, want) {
		t.Errorf("DrbdConnectedTo(node-b) = %q, want %q", got, want)
	}
	if got := DrbdConnectedTo(resources, "node-x"); len(got) != 0 {
		t.Errorf("DrbdConnectedTo(node-x) = %q, want none", got)
	}
}
