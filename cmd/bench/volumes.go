package main

import (
	"context"
	"fmt"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/linstor-operator/linstor-operator/internal/emulator"
)

// replicasPerVolume: each bench volume is placed as a CSI StorageClass with
// placementCount 3 would place it.
const replicasPerVolume = 3

// benchResourceGroup holds the bench volumes, as a StorageClass's resource group.
const benchResourceGroup = "bench-sc"

// placeVolumes places n resources of replicasPerVolume diskful replicas each through
// the emulator (not the operator: it creates no volumes), resource i on nodes
// prefix-i, prefix-(i+1), … in their first storage pool that holds data, so every node
// holds about the same number, in one batch (Emulator.PlaceResources). It returns how
// many replicas it placed, or the error of the first placement that failed.
func placeVolumes(emu *emulator.Emulator, prefix string, nodes, n int) (int, error) {
	pools := make([]string, nodes)
	for i := range pools {
		name := fmt.Sprintf("%s-%d", prefix, i)
		list, err := emu.StoragePools(name)
		if err != nil {
			return 0, fmt.Errorf("node %s: %w", name, err)
		}
		for _, p := range list {
			if p.ProviderKind != lapi.DISKLESS {
				pools[i] = p.StoragePoolName
				break
			}
		}
		if pools[i] == "" {
			return 0, fmt.Errorf("node %s has no storage pool for data", name)
		}
	}
	replicas := min(replicasPerVolume, nodes)
	// In their own group placing 3, as a StorageClass's: in DfltRscGrp (place count 2)
	// a third replica lost would not count as degraded.
	if err := emu.SetResourceGroup(benchResourceGroup, int32(replicas), ""); err != nil {
		return 0, err
	}
	ps := make([]emulator.Placement, 0, n*replicas)
	for v := range n {
		rd := fmt.Sprintf("pvc-bench-%06d", v)
		for r := range replicas {
			i := (v + r) % nodes
			ps = append(ps, emulator.Placement{Resource: rd, Node: fmt.Sprintf("%s-%d", prefix, i), Pool: pools[i], ResourceGroup: benchResourceGroup})
		}
	}
	// One batch, one database commit for all of them: one by one, each placement is a
	// transaction that renders every row (37 minutes for 30,000 replicas).
	if err := emu.PlaceResources(ps); err != nil {
		return 0, err
	}
	return len(ps), nil
}

// volumesNote says what was placed and how long it took, for the report's notes.
func volumesNote(volumes, replicas int, took time.Duration) string {
	return fmt.Sprintf("%d volumes (%d diskful replicas) placed through the emulator after convergence in %s (the volumes phase); the steady window runs with them.",
		volumes, replicas, took.Round(100*time.Millisecond))
}

// awaitVolumesSeen waits until every LinstorCluster of namespace counts at least
// volumes resources in status.replicas.total (the operator's next LINSTOR cycle has
// read them and its reconcilers reacted), and then settle more, so that the steady
// window measures the state with volumes, not the one-time reaction to them. It
// returns how long it waited.
func awaitVolumesSeen(ctx context.Context, c client.Client, namespace string, volumes int, limit, settle time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("linstor.io/v1")
		list.SetKind("LinstorClusterList")
		if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
			return time.Since(start), err
		}
		seen := len(list.Items) > 0
		for _, u := range list.Items {
			total, _, _ := unstructured.NestedInt64(u.Object, "status", "replicas", "total")
			seen = seen && total >= int64(volumes)
		}
		if seen {
			break
		}
		if time.Since(start) > limit {
			return time.Since(start), fmt.Errorf("the LinstorCluster does not count %d resources after %s", volumes, limit)
		}
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-time.After(time.Second):
		}
	}
	select {
	case <-ctx.Done():
		return time.Since(start), ctx.Err()
	case <-time.After(settle):
	}
	return time.Since(start), nil
}
