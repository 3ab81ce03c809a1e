package observer

import (
	"context"
	"fmt"
	"strings"
	"time"

	lapi "github.com/LINBIT/golinstor/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/replicahealth"
)

// ConnectorSource reads LINSTOR through the operator's connector.
type ConnectorSource struct {
	Connector *linstor.Connector
}

// Read runs one cycle: five list requests whatever the number of nodes (ReadHealth
// adds three every Interval). Storage pools are read from LINSTOR's cache unless
// queryPools: only then does LINSTOR ask every satellite with a thin pool.
func (s ConnectorSource) Read(ctx context.Context, cluster *linstorv1.LinstorCluster, queryPools bool) (*Snapshot, error) {
	conn, err := s.Connector.Connect(ctx, cluster)
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{nodes: map[string]lapi.Node{}, pools: map[string][]lapi.StoragePool{}}
	v, err := conn.Controller.GetVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %v", linstor.ErrUnreachable, conn.URL, err)
	}
	snap.Version = v.Version
	props, err := conn.Controller.GetProps(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading controller properties: %w", err)
	}
	snap.ControllerProps = props
	snap.Passphrase, snap.PassphraseErr = linstor.GetPassphraseStatus(ctx, conn.Client, conn.HTTP)
	nodes, err := conn.Nodes.GetAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing LINSTOR nodes: %w", err)
	}
	for _, n := range nodes {
		snap.nodes[strings.ToLower(n.Name)] = n
	}
	pools, queryErr, err := readPools(ctx, conn, queryPools)
	if err != nil {
		return nil, err
	}
	snap.PoolsQueryErr = queryErr
	for _, p := range pools {
		key := strings.ToLower(p.NodeName)
		snap.pools[key] = append(snap.pools[key], p)
	}
	return snap, nil
}

// maxPoolQuery bounds the uncached pool list: while it waits, the cycle (node states
// included) waits with it.
const maxPoolQuery = 10 * time.Second

// readPools lists the storage pools, uncached when query. LINSTOR puts no timeout on
// the satellites' free-space answers (FreeCapacityFetcherProto, one apiCall per node):
// one satellite whose lvs hangs hangs the uncached list. It gets half the cycle's time
// (at most maxPoolQuery); when it fails, the cached list answers the cycle and queryErr
// says why, so a hung satellite does not make LINSTOR look unreachable.
func readPools(ctx context.Context, conn *linstor.Connection, query bool) (pools []lapi.StoragePool, queryErr, err error) {
	if query {
		qctx, cancel := ctx, context.CancelFunc(func() {})
		if deadline, ok := ctx.Deadline(); ok {
			qctx, cancel = context.WithTimeout(ctx, min(time.Until(deadline)/2, maxPoolQuery))
		}
		pools, queryErr = conn.Nodes.GetStoragePoolView(qctx)
		cancel()
		switch {
		case queryErr == nil:
			return pools, nil, nil
		case ctx.Err() != nil:
			return nil, nil, fmt.Errorf("listing LINSTOR storage pools: %w", queryErr)
		}
		queryErr = fmt.Errorf("asking the satellites about their storage pools: %w", queryErr)
	}
	yes := true
	pools, err = conn.Nodes.GetStoragePoolView(ctx, &lapi.ListOpts{Cached: &yes})
	if err != nil {
		if queryErr != nil {
			return nil, nil, fmt.Errorf("listing LINSTOR storage pools: %w (and uncached: %v)", err, queryErr)
		}
		return nil, nil, fmt.Errorf("listing LINSTOR storage pools: %w", err)
	}
	return pools, queryErr, nil
}

// ReadHealth reads what classifying every resource needs: the resource groups (place
// counts), the resource definitions (uuids, groups) and the resource view, three
// requests whatever the size. A failure here leaves nodes and pools observed.
func (s ConnectorSource) ReadHealth(ctx context.Context, cluster *linstorv1.LinstorCluster) (*replicahealth.Input, error) {
	conn, err := s.Connector.Connect(ctx, cluster)
	if err != nil {
		return nil, err
	}
	in := &replicahealth.Input{Definitions: map[string]replicahealth.Definition{}, PlaceCounts: map[string]int{}}
	groups, err := conn.ResourceGroups.GetAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing LINSTOR resource groups: %w", err)
	}
	for _, g := range groups {
		if g.SelectFilter.PlaceCount > 0 {
			in.PlaceCounts[strings.ToLower(g.Name)] = int(g.SelectFilter.PlaceCount)
		}
	}
	defs, err := conn.ResourceDefinitions.GetAll(ctx, lapi.RDGetAllRequest{})
	if err != nil {
		return nil, fmt.Errorf("listing LINSTOR resource definitions: %w", err)
	}
	for _, d := range defs {
		in.Definitions[strings.ToLower(d.Name)] = replicahealth.Definition{Name: d.Name, UID: d.Uuid, ResourceGroup: d.ResourceGroupName}
	}
	err = linstor.ReadResourceViews(ctx, conn.HTTP, conn.URL, func(v linstor.ResourceView) error {
		in.Replicas = append(in.Replicas, v)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading LINSTOR's resource view: %w", err)
	}
	return in, nil
}

// Follow reads LINSTOR's node event stream (GET /v1/events/nodes).
func (s ConnectorSource) Follow(ctx context.Context, cluster *linstorv1.LinstorCluster, changed func(node string)) error {
	conn, err := s.Connector.Connect(ctx, cluster)
	if err != nil {
		return err
	}
	return conn.NodeEvents(ctx, nil, func(e linstor.NodeEvent) { changed(e.Node.Name) })
}

// NewSnapshot builds a snapshot from lists, for tests of the code that reads snapshots.
func NewSnapshot(version string, nodes []lapi.Node, pools []lapi.StoragePool) *Snapshot {
	snap := &Snapshot{Version: version, ok: true, nodes: map[string]lapi.Node{}, pools: map[string][]lapi.StoragePool{}}
	for _, n := range nodes {
		snap.nodes[strings.ToLower(n.Name)] = n
	}
	for _, p := range pools {
		key := strings.ToLower(p.NodeName)
		snap.pools[key] = append(snap.pools[key], p)
	}
	return snap
}
