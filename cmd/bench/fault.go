package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/linstor-operator/linstor-operator/internal/emulator"
)

// faultTaint takes a node away as a dead machine does: the NoExecute taint makes
// kube-controller-manager's taint eviction evict the satellite pod (it does not
// tolerate it) and keeps a new one from being scheduled; the emulator, which follows
// the pods, then reports the satellite OFFLINE. SetNodeOnline alone would not hold:
// the coupled emulator sets every node's state from its pod again each interval.
var faultTaint = corev1.Taint{Key: "bench.linstor.io/offline", Value: "fault", Effect: corev1.TaintEffectNoExecute}

// faultResult is the degrading fault played after the steady window: seconds from
// the taint to LINSTOR reporting the node OFFLINE and to the LinstorCluster counting a
// degraded resource; then from removing the taint to degraded 0 again. Nil: not reached.
type faultResult struct {
	Node                string   `json:"node"`
	OfflineAfter        *float64 `json:"offlineAfterSeconds"`
	DegradedShownAfter  *float64 `json:"degradedShownAfterSeconds"`
	DegradedShown       int64    `json:"degradedShown"`
	RecoveredShownAfter *float64 `json:"recoveredShownAfterSeconds"`
}

// replicaCount sums status.replicas.<field> over the namespace's LinstorClusters.
func replicaCount(ctx context.Context, c client.Client, namespace, field string) (int64, error) {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("linstor.io/v1")
	list.SetKind("LinstorClusterList")
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return 0, err
	}
	var sum int64
	for _, u := range list.Items {
		n, _, _ := unstructured.NestedInt64(u.Object, "status", "replicas", field)
		sum += n
	}
	return sum, nil
}

// setFaultTaint adds or removes faultTaint on node.
func setFaultTaint(ctx context.Context, c client.Client, node string, on bool) error {
	var n corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
		return err
	}
	before := n.DeepCopy()
	var taints []corev1.Taint
	for _, t := range n.Spec.Taints {
		if t.Key != faultTaint.Key {
			taints = append(taints, t)
		}
	}
	if on {
		taints = append(taints, faultTaint)
	}
	n.Spec.Taints = taints
	return c.Patch(ctx, &n, client.MergeFrom(before))
}

// playNodeFault takes node away (faultTaint), measures how long until LINSTOR reports
// it OFFLINE and the LinstorCluster counts a degraded resource, then brings it back and
// measures how long until degraded is 0 again. Each wait gives up after limit.
func playNodeFault(ctx context.Context, c client.Client, emu *emulator.Emulator, namespace, node string, limit time.Duration) (*faultResult, error) {
	res := &faultResult{Node: node}
	since := func(t time.Time) *float64 { s := time.Since(t).Seconds(); return &s }
	start := time.Now()
	if err := setFaultTaint(ctx, c, node, true); err != nil {
		return res, err
	}
	for res.DegradedShownAfter == nil && time.Since(start) < limit {
		if n, ok := emu.Node(node); res.OfflineAfter == nil && ok && n.ConnectionStatus != "ONLINE" {
			res.OfflineAfter = since(start)
		}
		degraded, err := replicaCount(ctx, c, namespace, "degraded")
		if err != nil {
			return res, err
		}
		if degraded > 0 {
			res.DegradedShownAfter, res.DegradedShown = since(start), degraded
			break
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return res, err
		}
	}
	back := time.Now()
	if err := setFaultTaint(ctx, c, node, false); err != nil {
		return res, err
	}
	for time.Since(back) < limit {
		degraded, err := replicaCount(ctx, c, namespace, "degraded")
		if err != nil {
			return res, err
		}
		if n, ok := emu.Node(node); degraded == 0 && ok && n.ConnectionStatus == "ONLINE" {
			res.RecoveredShownAfter = since(back)
			break
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return res, err
		}
	}
	return res, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// faultNote says what the fault showed, for the report's notes.
func faultNote(f *faultResult) string {
	return fmt.Sprintf("Degrading fault after the steady window: node %s tainted NoExecute (its satellite pod evicted). LINSTOR reported it OFFLINE after %s; "+
		"degraded shown after %s (%d resources; the observer reads LINSTOR every 30 s); taint removed: degraded 0 and the node ONLINE again after %s.",
		f.Node, fsecs(f.OfflineAfter), fsecs(f.DegradedShownAfter), f.DegradedShown, fsecs(f.RecoveredShownAfter))
}
