package replicahealth

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/linstor-operator/linstor-operator/pkg/linstor"
)

// Table tests for Classify: every row is one resource (fxRsc) as one cycle read it, and
// states what the report says of it. Every row also checks, for free: Classify does not
// modify its input, decides the same twice, counts the resource once under its state,
// keeps no replica flagged DELETE or INACTIVE, and names the pool of diskful replicas only.

type healthCase struct {
	name     string
	replicas []linstor.ResourceView
	// groupPlaces is the place count of fxGroup; 0: the group has none.
	groupPlaces int
	// noDefinition: fxRsc's definition is not in the read.
	noDefinition bool
	previous     *Report

	absent           bool // fxRsc is not in the report
	state            State
	placed, upToDate int
	// holds: node → reason, for fxRsc; every other node holds nothing.
	holds       map[string]string
	standAlone  []Pair
	connected   []Pair
	syncPercent *float64
	syncETA     *time.Duration
	since       time.Time // zero: fxNow
	lastInUse   map[string]time.Time
	message     string // exact, when set
	msgHas      []string
	msgLacks    []string
}

var healthCases = []healthCase{
	// Healthy
	{
		name:        "two replicas UpToDate and connected: healthy, no node holds it",
		replicas:    views(inUse(up("node-a", "UpToDate", "node-b")), up("node-b", "UpToDate", "node-a")),
		groupPlaces: 2, state: Healthy, placed: 2, upToDate: 2, lastInUse: map[string]time.Time{"node-a": fxNow},
		message: "2 of 2 placed replicas UpToDate (node-a, node-b)",
	},
	{
		name: "three replicas connected: quorum survives any one node, no holds",
		replicas: views(up("node-a", "UpToDate", "node-b", "node-c"), up("node-b", "UpToDate", "node-a", "node-c"),
			up("node-c", "UpToDate", "node-a", "node-b")),
		groupPlaces: 3, state: Healthy, placed: 3, upToDate: 3,
	},
	{
		name:        "group without a place count: LINSTOR's default 2",
		replicas:    views(up("node-a", "UpToDate", "node-b"), up("node-b", "UpToDate", "node-a")),
		groupPlaces: 0, state: Healthy, placed: 2, upToDate: 2,
	},
	{
		name: "definition missing from the read: still classified, placed from its diskful replicas",
		replicas: views(up("node-a", "UpToDate", "node-b", "node-c"), up("node-b", "UpToDate", "node-a", "node-c"),
			up("node-c", "UpToDate", "node-a", "node-b")),
		noDefinition: true, state: Healthy, placed: 3, upToDate: 3,
	},
	{
		name: "replicas grouped by name case-insensitively",
		replicas: views(up("node-a", "UpToDate", "node-b"),
			replicaOf("PVC-1", "node-b", "UpToDate", "node-a")),
		groupPlaces: 2, state: Healthy, placed: 2, upToDate: 2,
	},

	// Degraded and Unknown
	{
		name:        "2 replicas, one satellite offline: Degraded, the known UpToDate one holds it",
		replicas:    views(inUse(up("node-a", "UpToDate", "node-b:Connecting")), offline("node-b")),
		groupPlaces: 2, state: Degraded, placed: 2, upToDate: 1,
		holds:   holdsOn("node-a", "last UpToDate replica"),
		message: "1 of 2 placed replicas UpToDate (node-a); node-b: state unknown (satellite not ONLINE)",
	},
	{
		name:        "no satellite reports: Unknown, every diskful node holds it (it may hold the only good copy)",
		replicas:    views(offline("node-a"), offline("node-b")),
		groupPlaces: 2, state: Unknown, placed: 2, upToDate: 0,
		holds:   map[string]string{"node-a": "state unknown and no other UpToDate replica", "node-b": "state unknown and no other UpToDate replica"},
		message: "no satellite of node-a, node-b reports the replicas' state",
	},
	{
		name:        "one replica placed of two: Degraded",
		replicas:    views(up("node-a", "UpToDate")),
		groupPlaces: 2, state: Degraded, placed: 2, upToDate: 1, holds: holdsOn("node-a", "last UpToDate replica"),
		msgHas: []string{"1 of 2 placed replicas UpToDate (node-a); no other diskful replica"},
	},
	{
		name: "diskless tiebreaker is not diskful: 1 of 2, and it is needed for quorum with node-a",
		replicas: views(up("node-a", "UpToDate", "node-b:Connecting", "node-c"), offline("node-b"),
			tiebreaker(up("node-c", "Diskless", "node-a", "node-b:Connecting"))),
		groupPlaces: 2, state: Degraded, placed: 2, upToDate: 1,
		holds: map[string]string{"node-a": "last UpToDate replica", "node-c": "needed for quorum"},
	},
	{
		name: "tiebreaker offline: data redundant (Healthy), but both diskful nodes are needed for quorum",
		replicas: views(up("node-a", "UpToDate", "node-b", "node-c:Connecting"), up("node-b", "UpToDate", "node-a", "node-c:Connecting"),
			tiebreaker(offline("node-c"))),
		groupPlaces: 2, state: Healthy, placed: 2, upToDate: 2,
		holds: map[string]string{"node-a": "needed for quorum", "node-b": "needed for quorum"},
	},
	{
		name:        "two UpToDate replicas not connected: Degraded, the next write leaves one behind",
		replicas:    views(up("node-a", "UpToDate", "node-b:Connecting"), up("node-b", "UpToDate", "node-a:Connecting")),
		groupPlaces: 2, state: Degraded, placed: 2, upToDate: 2,
		msgHas: []string{"not connected: node-a and node-b (Connecting)"},
	},
	{
		name: "a diskless tiebreaker not connected to node-a: no write is left behind on it",
		replicas: views(up("node-a", "UpToDate", "node-b", "node-c:Connecting"), up("node-b", "UpToDate", "node-a", "node-c"),
			tiebreaker(up("node-c", "Diskless", "node-a:Connecting", "node-b"))),
		groupPlaces: 2, state: Degraded, placed: 2, upToDate: 2,
		msgHas:   []string{"not connected: node-a and node-c (Connecting)", "node-c has no disk"},
		msgLacks: []string{"leaves one behind"},
	},
	{
		name:        "Outdated with fewer UpToDate than placed: Degraded",
		replicas:    views(up("node-a", "UpToDate", "node-b:Connecting"), up("node-b", "Outdated", "node-a:Connecting")),
		groupPlaces: 2, state: Degraded, placed: 2, upToDate: 1, holds: holdsOn("node-a", "last UpToDate replica"),
		msgHas: []string{"node-b: Outdated"},
	},
	{
		name:        "a disk being added (toggle-disk) reports Diskless: not unintentional, Degraded",
		replicas:    views(up("node-a", "UpToDate", "node-b"), flagged(up("node-b", "Diskless", "node-a"), "DISK_ADDING")),
		groupPlaces: 2, state: Degraded, placed: 2, upToDate: 1, holds: holdsOn("node-a", "last UpToDate replica"),
	},
	{
		name:        "the worst volume decides: UpToDate and Outdated volumes make an Outdated replica",
		replicas:    views(up("node-a", "UpToDate", "node-b"), volume(up("node-b", "UpToDate", "node-a"), "Outdated")),
		groupPlaces: 2, state: Degraded, placed: 2, upToDate: 1, holds: holdsOn("node-a", "last UpToDate replica"),
	},

	// DELETE and INACTIVE
	{
		name: "DELETE-flagged replica neither counts nor holds: 1 of 2",
		replicas: views(up("node-a", "UpToDate", "node-c"), offline("node-b"),
			flagged(up("node-c", "UpToDate", "node-a"), "DELETE")),
		groupPlaces: 2, state: Degraded, placed: 2, upToDate: 1, holds: holdsOn("node-a", "last UpToDate replica"),
	},
	{
		name: "StandAlone towards a DELETE-flagged replica is not a split brain",
		replicas: views(up("node-a", "UpToDate", "node-b", "node-c:StandAlone"), up("node-b", "UpToDate", "node-a"),
			flagged(up("node-c", "UpToDate", "node-a:StandAlone"), "DELETE")),
		groupPlaces: 2, state: Healthy, placed: 2, upToDate: 2,
	},
	{
		name:        "every replica flagged DELETE: the resource is being deleted, not reported",
		replicas:    views(flagged(up("node-a", "UpToDate"), "DELETE"), flagged(offline("node-b"), "DELETE")),
		groupPlaces: 2, absent: true,
	},
	{
		name:        "INACTIVE replica runs no DRBD: not counted, named",
		replicas:    views(up("node-a", "UpToDate"), flagged(offline("node-b"), "INACTIVE")),
		groupPlaces: 2, state: Degraded, placed: 2, upToDate: 1, holds: holdsOn("node-a", "last UpToDate replica"),
		msgHas: []string{"inactive: node-b"},
	},
	{
		name:        "EVICTED (implies INACTIVE) is not counted",
		replicas:    views(up("node-a", "UpToDate"), flagged(offline("node-b"), "INACTIVE", "EVICTED")),
		groupPlaces: 2, state: Degraded, placed: 2, upToDate: 1, holds: holdsOn("node-a", "last UpToDate replica"),
	},

	// Without DRBD
	{
		name:        "no DRBD, placed count present: Healthy, never Unknown, never held",
		replicas:    views(plain("node-a")),
		groupPlaces: 1, state: Healthy, placed: 1, upToDate: 1,
		message: "1 of 1 placed replicas present (node-a), without replication",
	},
	{
		name:        "no DRBD, fewer replicas than placed: Degraded, not held",
		replicas:    views(plain("node-a")),
		groupPlaces: 2, state: Degraded, placed: 2, upToDate: 1,
	},

	// Split brain
	{
		name: "split brain, both in use at different times: both sides named with role and disk",
		replicas: views(inUse(up("node-a", "UpToDate", "node-b:StandAlone")),
			up("node-b", "UpToDate", "node-a:StandAlone")),
		previous: prevReport(fxNow.Add(-time.Minute), Resource{State: Healthy, Since: fxNow.Add(-2 * time.Hour), Replicas: []Replica{
			{Node: "node-a", Diskful: true, DiskState: "UpToDate"},
			{Node: "node-b", Diskful: true, DiskState: "UpToDate", LastInUse: fxNow.Add(-time.Hour)},
		}}),
		groupPlaces: 2, state: SplitBrain, placed: 2, upToDate: 2,
		standAlone: []Pair{{A: "node-a", B: "node-b"}},
		lastInUse:  map[string]time.Time{"node-a": fxNow, "node-b": fxNow.Add(-time.Hour)},
		message: "StandAlone between node-a (in use, UpToDate) and node-b (last in use 2025-06-01T11:00:00Z, UpToDate): " +
			"DRBD refuses to connect them, most likely after a split brain, or DRBD refused the connection for another reason " +
			"(see the satellites' logs); for a split brain, name the node whose changes to discard",
	},
	{
		name:        "StandAlone seen from one side suffices",
		replicas:    views(up("node-a", "UpToDate", "node-b:StandAlone"), up("node-b", "UpToDate", "node-a:Connecting")),
		groupPlaces: 2, state: SplitBrain, placed: 2, upToDate: 2, standAlone: []Pair{{A: "node-a", B: "node-b"}},
		msgHas: []string{"node-a (never seen in use, UpToDate) and node-b (never seen in use, UpToDate)"},
	},
	{
		name: "three replicas: node-a StandAlone with both, node-b and node-c Connected: their connection is reported",
		replicas: views(up("node-a", "UpToDate", "node-b:StandAlone", "node-c:StandAlone"), up("node-b", "UpToDate", "node-a:StandAlone", "node-c"),
			up("node-c", "UpToDate", "node-a:StandAlone", "node-b")),
		groupPlaces: 3, state: SplitBrain, placed: 3, upToDate: 3,
		standAlone: []Pair{{A: "node-a", B: "node-b"}, {A: "node-a", B: "node-c"}}, connected: []Pair{{A: "node-b", B: "node-c"}},
		holds:  map[string]string{"node-b": "needed for quorum", "node-c": "needed for quorum"},
		msgHas: []string{"or DRBD refused the connection"},
	},
	{
		name: "split brain outranks lost quorum",
		replicas: views(up("node-a", "UpToDate", "node-b:StandAlone", "node-c:Connecting"), up("node-b", "UpToDate", "node-a:StandAlone", "node-c:Connecting"),
			up("node-c", "UpToDate", "node-a:Connecting", "node-b:Connecting")),
		groupPlaces: 3, state: SplitBrain, placed: 3, upToDate: 3, standAlone: []Pair{{A: "node-a", B: "node-b"}},
	},

	// Quorum
	{
		name: "quorum lost: 3 nodes, each cannot reach the two others",
		replicas: views(inUse(up("node-a", "UpToDate", "node-b:Connecting", "node-c:Connecting")),
			noPromote(up("node-b", "Outdated", "node-a:Connecting", "node-c:Connecting")),
			noPromote(up("node-c", "Outdated", "node-a:Connecting", "node-b:Connecting"))),
		groupPlaces: 3, state: QuorumLost, placed: 3, upToDate: 1, holds: holdsOn("node-a", "last UpToDate replica"),
		message: "no replica reaches quorum (a majority of 3 voters): node-a sees 1 of 3, node-b sees 1 of 3, node-c sees 1 of 3",
	},
	{
		name: "quorum lost: two known replicas alone, the unknown third could not reach a majority alone",
		replicas: views(noPromote(up("node-a", "UpToDate", "node-b:Connecting", "node-c:Connecting")),
			noPromote(up("node-b", "UpToDate", "node-a:Connecting", "node-c:Connecting")), offline("node-c")),
		groupPlaces: 3, state: QuorumLost, placed: 3, upToDate: 2,
		msgHas: []string{"node-c state unknown"},
	},
	{
		name: "counts say lost, but node-b reports may_promote true (DRBD knows which peers lost quorum): not QuorumLost",
		replicas: views(noPromote(up("node-a", "UpToDate", "node-b:Connecting", "node-c:Connecting")),
			up("node-b", "UpToDate", "node-a:Connecting", "node-c:Connecting"), offline("node-c")),
		groupPlaces: 3, state: Degraded, placed: 3, upToDate: 2,
	},
	{
		name: "not proven lost: node-a alone, but the two unknown nodes may have quorum together",
		replicas: views(up("node-a", "UpToDate", "node-b:Connecting", "node-c:Connecting"),
			offline("node-b"), offline("node-c")),
		groupPlaces: 3, state: Degraded, placed: 3, upToDate: 1, holds: holdsOn("node-a", "last UpToDate replica"),
	},
	{
		name: "3 voters, one lost: the two connected ones are each needed for quorum",
		replicas: views(up("node-a", "UpToDate", "node-b", "node-c:Connecting"), up("node-b", "UpToDate", "node-a", "node-c:Connecting"),
			offline("node-c")),
		groupPlaces: 2, state: Healthy, placed: 2, upToDate: 2,
		holds: map[string]string{"node-a": "needed for quorum", "node-b": "needed for quorum"},
	},
	{
		name:        "2 voters never lose quorum here (LINSTOR sets auto-quorum from 3 replicas)",
		replicas:    views(up("node-a", "UpToDate", "node-b:Connecting"), up("node-b", "Outdated", "node-a:Connecting")),
		groupPlaces: 2, state: Degraded, placed: 2, upToDate: 1, holds: holdsOn("node-a", "last UpToDate replica"),
	},

	// Unintentionally diskless, Outdated
	{
		name:        "a diskful replica reports Diskless: unintentionally diskless",
		replicas:    views(up("node-a", "UpToDate", "node-b"), up("node-b", "Diskless", "node-a")),
		groupPlaces: 2, state: UnintentionallyDiskless, placed: 2, upToDate: 1, holds: holdsOn("node-a", "last UpToDate replica"),
		message: "node-b should have a disk but reports Diskless: the backing disk failed or was detached; 1 of 2 placed replicas UpToDate (node-a)",
	},
	{
		name: "a third diskful replica Outdated, enough UpToDate: Outdated; the connected two carry quorum",
		replicas: views(up("node-a", "UpToDate", "node-b", "node-c:Connecting"), up("node-b", "UpToDate", "node-a", "node-c:Connecting"),
			up("node-c", "Outdated", "node-a:Connecting", "node-b:Connecting")),
		groupPlaces: 2, state: Outdated, placed: 2, upToDate: 2,
		holds:   map[string]string{"node-a": "needed for quorum", "node-b": "needed for quorum"},
		message: "node-c is Outdated and wait for a resync; 2 of 2 placed replicas UpToDate (node-a, node-b)",
	},

	// Syncing
	{
		name: "a third replica syncing, ETA from the previous report's progress",
		replicas: views(replicating(up("node-a", "UpToDate", "node-b", "node-c"), "node-c", "SyncSource", 40),
			up("node-b", "UpToDate", "node-a", "node-c"),
			replicating(up("node-c", "Inconsistent", "node-a", "node-b"), "node-a", "SyncTarget", 40)),
		previous:    prevReport(fxNow.Add(-time.Minute), Resource{State: Syncing, Since: fxNow.Add(-2 * time.Minute), SyncPercent: ptr.To(20.0)}),
		groupPlaces: 2, state: Syncing, placed: 2, upToDate: 2, since: fxNow.Add(-2 * time.Minute),
		syncPercent: ptr.To(40.0), syncETA: ptr.To(3 * time.Minute),
		message: "2 of 2 placed replicas UpToDate (node-a, node-b); resync 40.0% done, about 3m0s left",
	},
	{
		name: "syncing first seen: progress, no ETA yet",
		replicas: views(up("node-a", "UpToDate", "node-b", "node-c"), up("node-b", "UpToDate", "node-a", "node-c"),
			replicating(up("node-c", "Inconsistent", "node-a", "node-b"), "node-a", "SyncTarget", 10)),
		groupPlaces: 2, state: Syncing, placed: 2, upToDate: 2, syncPercent: ptr.To(10.0),
	},
	{
		name: "no progress since the previous report: no ETA",
		replicas: views(up("node-a", "UpToDate", "node-b", "node-c"), up("node-b", "UpToDate", "node-a", "node-c"),
			replicating(up("node-c", "Inconsistent", "node-a", "node-b"), "node-a", "PausedSyncT", 10)),
		previous:    prevReport(fxNow.Add(-time.Minute), Resource{State: Syncing, Since: fxNow.Add(-time.Minute), SyncPercent: ptr.To(10.0)}),
		groupPlaces: 2, state: Syncing, placed: 2, upToDate: 2, syncPercent: ptr.To(10.0), since: fxNow.Add(-time.Minute),
	},
	{
		name: "the least done target decides the progress",
		replicas: views(up("node-a", "UpToDate", "node-b", "node-c"),
			replicating(up("node-b", "UpToDate", "node-a", "node-c"), "node-c", "SyncSource", 30),
			replicating(replicating(up("node-c", "Inconsistent", "node-a", "node-b"), "node-a", "SyncTarget", 60), "node-b", "SyncTarget", 30)),
		groupPlaces: 2, state: Syncing, placed: 2, upToDate: 2, syncPercent: ptr.To(30.0),
	},
	{
		name: "waiting for the bitmap exchange is syncing, without progress",
		replicas: views(up("node-a", "UpToDate", "node-b", "node-c"), up("node-b", "UpToDate", "node-a", "node-c"),
			replicating(up("node-c", "Inconsistent", "node-a", "node-b"), "node-a", "WFBitMapT", -1)),
		groupPlaces: 2, state: Syncing, placed: 2, upToDate: 2,
	},
	{
		name: "a placed replica syncing: redundancy not yet back, Degraded with the progress",
		replicas: views(replicating(up("node-a", "UpToDate", "node-b"), "node-b", "SyncSource", 50),
			replicating(up("node-b", "Inconsistent", "node-a"), "node-a", "SyncTarget", 50)),
		groupPlaces: 2, state: Degraded, placed: 2, upToDate: 1, syncPercent: ptr.To(50.0), holds: holdsOn("node-a", "last UpToDate replica"),
		message: "1 of 2 placed replicas UpToDate (node-a); node-b: Inconsistent; resync 50.0% done",
	},

	// Since and LastInUse
	{
		name:        "state unchanged: Since kept from the previous report",
		replicas:    views(up("node-a", "UpToDate")),
		previous:    prevReport(fxNow.Add(-time.Minute), Resource{State: Degraded, Since: fxNow.Add(-time.Hour)}),
		groupPlaces: 2, state: Degraded, placed: 2, upToDate: 1, since: fxNow.Add(-time.Hour), holds: holdsOn("node-a", "last UpToDate replica"),
	},
	{
		name:        "state changed: Since is now",
		replicas:    views(up("node-a", "UpToDate", "node-b"), up("node-b", "UpToDate", "node-a")),
		previous:    prevReport(fxNow.Add(-time.Minute), Resource{State: Degraded, Since: fxNow.Add(-time.Hour)}),
		groupPlaces: 2, state: Healthy, placed: 2, upToDate: 2,
	},
	{
		name:     "LastInUse kept from the previous report while not in use, and for a node whose state is unknown",
		replicas: views(up("node-a", "UpToDate"), offline("node-b")),
		previous: prevReport(fxNow.Add(-time.Minute), Resource{State: Degraded, Since: fxNow.Add(-time.Hour), Replicas: []Replica{
			{Node: "node-a", LastInUse: fxNow.Add(-3 * time.Hour)}, {Node: "node-b", LastInUse: fxNow.Add(-2 * time.Minute)},
		}}),
		groupPlaces: 2, state: Degraded, placed: 2, upToDate: 1, since: fxNow.Add(-time.Hour), holds: holdsOn("node-a", "last UpToDate replica"),
		lastInUse: map[string]time.Time{"node-a": fxNow.Add(-3 * time.Hour), "node-b": fxNow.Add(-2 * time.Minute)},
	},
}

func inputFor(tc healthCase) Input {
	in := Input{Replicas: tc.replicas, Previous: tc.previous, Now: fxNow, PlaceCounts: map[string]int{}, Definitions: map[string]Definition{}}
	if !tc.noDefinition {
		in.Definitions[fxRsc] = Definition{Name: fxRsc, UID: fxUID, ResourceGroup: fxGroup}
	}
	if tc.groupPlaces > 0 {
		in.PlaceCounts[fxGroup] = tc.groupPlaces
	}
	return in
}

func TestClassify(t *testing.T) {
	for _, tc := range healthCases {
		t.Run(tc.name, func(t *testing.T) {
			in := inputFor(tc)
			before := deepCopyViews(in.Replicas)
			rep := Classify(in)
			if !reflect.DeepEqual(in.Replicas, before) {
				t.Fatal("Classify modified its input")
			}
			if again := Classify(inputFor(tc)); !reflect.DeepEqual(rep, again) {
				t.Fatal("Classify decided differently on the same input")
			}
			total := 0
			for _, n := range rep.Counts {
				total += n
			}
			if total != len(rep.Resources) || len(rep.Counts) != len(States) {
				t.Fatalf("counts %v do not add up to %d resources over every state", rep.Counts, len(rep.Resources))
			}

			res := rep.Resources[fxRsc]
			if tc.absent {
				if res != nil {
					t.Fatalf("reported %+v, want absent", res)
				}
				return
			}
			if res == nil {
				t.Fatal("fxRsc not reported")
			}
			if rep.Counts[tc.state] != 1 {
				t.Errorf("Counts[%s] = %d, want 1", tc.state, rep.Counts[tc.state])
			}
			if res.State != tc.state || res.Placed != tc.placed || res.UpToDate != tc.upToDate {
				t.Errorf("state %s placed %d uptodate %d, want %s %d %d (%s)", res.State, res.Placed, res.UpToDate, tc.state, tc.placed, tc.upToDate, res.Message)
			}
			wantUID := fxUID
			if tc.noDefinition {
				wantUID = ""
			}
			if res.UID != wantUID || res.Name != fxRsc {
				t.Errorf("name %q uid %q", res.Name, res.UID)
			}
			for _, r := range res.Replicas {
				if wantPool := map[bool]string{true: "pool1"}[r.Diskful]; r.Pool != wantPool {
					t.Errorf("replica on %s (diskful %v) in pool %q, want %q", r.Node, r.Diskful, r.Pool, wantPool)
				}
				for _, v := range in.Replicas {
					if strings.EqualFold(v.NodeName, r.Node) && (v.HasFlag("DELETE") || v.HasFlag("INACTIVE")) {
						t.Errorf("replica on %s is flagged %v but reported", r.Node, v.Flags)
					}
				}
			}
			wantSince := tc.since
			if wantSince.IsZero() {
				wantSince = fxNow
			}
			if !res.Since.Equal(wantSince) {
				t.Errorf("since %v, want %v", res.Since, wantSince)
			}
			if !reflect.DeepEqual(res.StandAlone, tc.standAlone) {
				t.Errorf("standAlone %v, want %v", res.StandAlone, tc.standAlone)
			}
			if !reflect.DeepEqual(res.Connected, tc.connected) {
				t.Errorf("connected %v, want %v", res.Connected, tc.connected)
			}
			for _, r := range res.Replicas {
				for _, v := range in.Replicas {
					toggling := v.HasFlag("DISK_ADD_REQUESTED") || v.HasFlag("DISK_ADDING") || v.HasFlag("DISK_REMOVE_REQUESTED") || v.HasFlag("DISK_REMOVING")
					if strings.EqualFold(v.NodeName, r.Node) && r.Toggling != toggling {
						t.Errorf("replica on %s flagged %v: toggling %v", r.Node, v.Flags, r.Toggling)
					}
				}
			}
			for _, part := range tc.msgLacks {
				if strings.Contains(res.Message, part) {
					t.Errorf("message %q says %q", res.Message, part)
				}
			}
			if !reflect.DeepEqual(res.SyncPercent, tc.syncPercent) {
				t.Errorf("syncPercent %v, want %v", fmtPtr(res.SyncPercent), fmtPtr(tc.syncPercent))
			}
			if !reflect.DeepEqual(res.SyncETA, tc.syncETA) {
				t.Errorf("syncETA %v, want %v", fmtPtr(res.SyncETA), fmtPtr(tc.syncETA))
			}
			for node, want := range tc.lastInUse {
				if r := res.replica(node); r == nil || !r.LastInUse.Equal(want) {
					t.Errorf("LastInUse of %s = %v, want %v", node, r, want)
				}
			}
			gotHolds := map[string]string{}
			for _, v := range in.Replicas {
				for _, h := range rep.Holding(strings.ToUpper(v.NodeName)) {
					if h.Resource == fxRsc {
						gotHolds[v.NodeName] = h.Reason
					}
				}
			}
			wantHolds := tc.holds
			if wantHolds == nil {
				wantHolds = map[string]string{}
			}
			if !reflect.DeepEqual(gotHolds, wantHolds) {
				t.Errorf("holds %v, want %v", gotHolds, wantHolds)
			}
			if tc.message != "" && res.Message != tc.message {
				t.Errorf("message\n got %q\nwant %q", res.Message, tc.message)
			}
			for _, part := range tc.msgHas {
				if !strings.Contains(res.Message, part) {
					t.Errorf("message %q lacks %q", res.Message, part)
				}
			}
		})
	}
}

func fmtPtr[T any](p *T) any {
	if p == nil {
		return "nil"
	}
	return *p
}

func deepCopyViews(in []linstor.ResourceView) []linstor.ResourceView {
	out := make([]linstor.ResourceView, len(in))
	for i, v := range in {
		c := v
		c.Flags = append([]string(nil), v.Flags...)
		if v.Flags != nil && len(v.Flags) == 0 {
			c.Flags = []string{}
		}
		if v.InUse != nil {
			c.InUse = ptr.To(*v.InUse)
		}
		if v.Drbd != nil {
			d := *v.Drbd
			if v.Drbd.Connections != nil {
				d.Connections = map[string]linstor.DrbdConnection{}
				for k, x := range v.Drbd.Connections {
					d.Connections[k] = x
				}
			}
			c.Drbd = &d
		}
		c.Volumes = nil
		for _, vol := range v.Volumes {
			cv := vol
			if vol.Replication != nil {
				cv.Replication = map[string]linstor.ReplicationState{}
				for k, x := range vol.Replication {
					cv.Replication[k] = x
				}
			}
			c.Volumes = append(c.Volumes, cv)
		}
		out[i] = c
	}
	return out
}
