package linstorcluster

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/replicahealth"
)

var (
	satellitesGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "linstor_operator_satellites",
		Help: "Satellites of a LinstorCluster by LINSTOR connection state (ONLINE, OFFLINE, VERSION_MISMATCH, ...).",
	}, []string{"namespace", "cluster", "state"})
	poolCapacity = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "linstor_operator_storage_pool_capacity_bytes",
		Help: "Storage pool capacity as LINSTOR reports it; type is free or total.",
	}, []string{"namespace", "node", "pool", "type"})
	resourcesGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "linstor_operator_resources",
		Help: "LINSTOR resources of a LinstorCluster by replica health (Healthy, Syncing, Degraded, Outdated, UnintentionallyDiskless, QuorumLost, SplitBrain, Unknown).",
	}, []string{"namespace", "cluster", "state"})
)

func init() {
	metrics.Registry.MustRegister(satellitesGauge, poolCapacity, resourcesGauge)
}

// recordMetrics replaces the cluster's series with what this pass observed, so series
// of removed satellites and pools disappear.
func recordMetrics(c *linstorv1.LinstorCluster, sats []linstorv1.LinstorSatellite) {
	satellitesGauge.DeletePartialMatch(prometheus.Labels{"namespace": c.Namespace, "cluster": c.Name})
	poolCapacity.DeletePartialMatch(prometheus.Labels{"namespace": c.Namespace})
	states := map[string]float64{}
	for _, s := range sats {
		state := s.Status.ConnectionStatus
		if state == "" {
			state = "UNKNOWN"
		}
		states[state]++
		for _, p := range s.Status.StoragePools {
			if p.TotalCapacity != nil {
				poolCapacity.WithLabelValues(c.Namespace, s.Name, p.Name, "total").Set(float64(p.TotalCapacity.Value()))
			}
			if p.FreeCapacity != nil {
				poolCapacity.WithLabelValues(c.Namespace, s.Name, p.Name, "free").Set(float64(p.FreeCapacity.Value()))
			}
		}
	}
	for state, n := range states {
		satellitesGauge.WithLabelValues(c.Namespace, c.Name, state).Set(n)
	}
}

// recordReplicaMetrics exports the count of resources in every state, zeros included:
// an alert on a state must see it go back to 0.
func recordReplicaMetrics(c *linstorv1.LinstorCluster, report *replicahealth.Report) {
	for _, state := range replicahealth.States {
		resourcesGauge.WithLabelValues(c.Namespace, c.Name, string(state)).Set(float64(report.Counts[state]))
	}
}
