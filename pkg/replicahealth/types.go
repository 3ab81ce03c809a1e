// Package replicahealth classifies every LINSTOR resource from one read of LINSTOR's
// resource view (GET /v1/view/resources) and its definitions: healthy, syncing,
// degraded, outdated, unintentionally diskless, quorum lost, split brain. It is pure:
// the observer feeds it what one cycle read, the controllers show the report.
package replicahealth

import (
	"strings"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/linstor"
)

// State is a resource's health as its replicas show it.
type State string

// The states, worst first (Severity).
const (
	// SplitBrain: two replicas refuse to connect after both changed apart (DRBD
	// StandAlone). Never resolved without a user's confirmation.
	SplitBrain State = "SplitBrain"
	// QuorumLost: no replica reaches a majority of the resource's voters.
	QuorumLost State = "QuorumLost"
	// UnintentionallyDiskless: a replica that should have a disk reports Diskless
	// (its backing disk failed or was detached).
	UnintentionallyDiskless State = "UnintentionallyDiskless"
	// Degraded: fewer UpToDate diskful replicas than placed.
	Degraded State = "Degraded"
	// Outdated: a diskful replica is Outdated (it missed writes and waits for a peer).
	Outdated State = "Outdated"
	// Syncing: a replica resyncs from a peer.
	Syncing State = "Syncing"
	// Unknown: LINSTOR knows no replica's state (no satellite of it is ONLINE).
	Unknown State = "Unknown"
	// Healthy: every placed replica is UpToDate and connected to its peers.
	Healthy State = "Healthy"
)

// States lists every state, worst first.
var States = []State{SplitBrain, QuorumLost, UnintentionallyDiskless, Degraded, Outdated, Syncing, Unknown, Healthy}

// Definition is what the classification needs of a resource definition.
type Definition struct {
	Name string
	// UID is LINSTOR's uuid of the resource definition: a split-brain resolution must
	// name it, so a confirmation cannot apply to a re-created resource of that name.
	UID           string
	ResourceGroup string
}

// Input is one observer cycle's read.
type Input struct {
	// Replicas as GET /v1/view/resources lists them.
	Replicas []linstor.ResourceView
	// Definitions by lower-case resource name (GET /v1/resource-definitions).
	Definitions map[string]Definition
	// PlaceCounts by lower-case resource group name (GET /v1/resource-groups,
	// select_filter.place_count); a group without one places 2 (LINSTOR's default).
	PlaceCounts map[string]int
	// Previous is the last report, for how long a state has lasted and sync rates; nil
	// on the first cycle.
	Previous *Report
	Now      time.Time
}

// Replica is one node's replica of a resource as the report keeps it.
type Replica struct {
	Node    string
	Diskful bool
	// Pool is the storage pool of the replica's first volume ("" when diskless).
	Pool      string
	DiskState string // "" when unknown (the node's satellite is not ONLINE)
	// InUse is true while the replica is Primary (mounted); nil when unknown.
	InUse *bool
	// LastInUse is when the replica was last seen in use (zero: never seen).
	LastInUse time.Time
	// Toggling: LINSTOR is adding or removing the replica's disk (toggle-disk). It sets
	// DRBD_DISKLESS with DISK_REMOVING before the satellite acts and does not roll the
	// flags back when the removal fails (CtrlRscToggleDiskApiCallHandler@v1.33.3), so
	// while toggling, Diskful says what LINSTOR intends, not what DRBD has.
	Toggling bool
}

// Pair names two replicas whose connection is StandAlone.
type Pair struct{ A, B string }

// Resource is one resource's health.
type Resource struct {
	Name  string
	UID   string
	State State
	// Since is when the resource entered State (as far as the reports saw).
	Since time.Time
	// Placed is the number of diskful replicas wanted; UpToDate how many are.
	Placed, UpToDate int
	Replicas         []Replica
	// SyncPercent is the least done_percentage of a resync in progress; SyncETA its
	// estimate from the progress since the last report (nil until it can be told).
	SyncPercent *float64
	SyncETA     *time.Duration
	// StandAlone lists the connections refused after a split brain.
	StandAlone []Pair
	// Connected lists the replicas' Connected connections (as either side reports
	// them), only for a resource in SplitBrain: which replicas share a side of it.
	Connected []Pair
	// Message explains the state in one sentence naming nodes.
	Message string
}

// Hold is a resource that a node holds: draining the node would cost its data or its
// quorum.
type Hold struct {
	Resource string
	Reason   string
}

// Report is the health of every resource one cycle read.
type Report struct {
	Now       time.Time
	Resources map[string]*Resource // by lower-case name
	Counts    map[State]int
	holds     map[string][]Hold // by lower-case node name
}

// Holding lists the resources node holds, sorted by name.
func (r *Report) Holding(node string) []Hold {
	if r == nil {
		return nil
	}
	return r.holds[strings.ToLower(node)]
}
