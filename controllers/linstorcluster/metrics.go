package linstorcluster

import (
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
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
	// poolErrors: LINSTOR's REST storage-pool view carries a pool's error reports; its
	// own /metrics (linstor_storage_pool_error_count) never does (it lists the pools from
	// its cache, whose assembleList clears them: docs/alerts.md#linstorstoragepoolerrors).
	poolErrors = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "linstor_operator_storage_pool_errors",
		Help: "Error reports of a storage pool in LINSTOR's storage-pool list (its State column shows Error), as the LinstorSatellite's status.storagePools[].errors; 0 when there are none.",
	}, []string{"namespace", "node", "pool"})
	// poolQueryFailing: LINSTOR's uncached storage pool list (the only one carrying the
	// pools' errors and the thin pools' live space) fails while its cache answers: a
	// satellite whose free-space query hangs hangs that list (observer.readPools).
	poolQueryFailing = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "linstor_operator_storage_pool_query_failing",
		Help: "1 while LINSTOR's uncached storage pool list fails (a satellite does not answer its free-space query), so pool errors and thin pools' free space are as of the last list that worked; 0 otherwise.",
	}, []string{"namespace", "cluster"})
	resourcesGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "linstor_operator_resources",
		Help: "LINSTOR resources of a LinstorCluster by replica health (Healthy, Syncing, Degraded, Outdated, UnintentionallyDiskless, QuorumLost, SplitBrain, Unknown).",
	}, []string{"namespace", "cluster", "state"})
	conditionGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "linstor_operator_cluster_condition",
		Help: "The LinstorCluster's status conditions: 1 for each condition type's current status and reason.",
	}, []string{"namespace", "cluster", "type", "status", "reason"})
	certificateExpiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "linstor_operator_certificate_expiry_timestamp_seconds",
		Help: "When each TLS certificate the LinstorCluster uses expires (status.certificates notAfter), in Unix seconds.",
	}, []string{"namespace", "cluster", "secret"})
	backupCompleted = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "linstor_operator_backup_last_completed_timestamp_seconds",
		Help: "When the newest Completed LinstorBackup of the LinstorCluster completed, in Unix seconds; 0: none exists. Absent when the operator cannot back up the database (external database or controller).",
	}, []string{"namespace", "cluster"})
	upgradePhaseStarted = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "linstor_operator_upgrade_phase_started_timestamp_seconds",
		Help: "When the current phase of the LinstorCluster's LINSTOR upgrade (status.upgrade) started, in Unix seconds; absent without an upgrade.",
	}, []string{"namespace", "cluster", "phase"})
	upgradePhaseTimeout = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "linstor_operator_upgrade_phase_timeout_seconds",
		Help: "The upgrade phase timeout in effect for the LinstorCluster (spec.upgrade.phaseTimeout, or the default).",
	}, []string{"namespace", "cluster"})
)

func init() {
	metrics.Registry.MustRegister(satellitesGauge, poolCapacity, poolErrors, poolQueryFailing, resourcesGauge,
		conditionGauge, certificateExpiry, backupCompleted, upgradePhaseStarted, upgradePhaseTimeout)
}

// recordMetrics replaces the cluster's series with what this pass observed, so series
// of removed satellites and pools disappear. The satellite counts keep their series
// from pass to pass (an alert on them waits 10 minutes).
func recordMetrics(c *linstorv1.LinstorCluster, sats []linstorv1.LinstorSatellite) {
	poolCapacity.DeletePartialMatch(prometheus.Labels{"namespace": c.Namespace})
	errorCounts := map[[2]string]float64{}
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
			// Every listed pool has the series, 0 when healthy, so the alert resolves.
			errorCounts[[2]string{s.Name, p.Name}] = float64(len(p.Errors))
		}
	}
	var counts []series
	for state, n := range states {
		counts = append(counts, series{labels: []string{state}, value: n})
	}
	exported.set(satellitesGauge, types.NamespacedName{Namespace: c.Namespace, Name: c.Name}, counts)
	exportedPoolErrors.set(c.Namespace, errorCounts)
}

// exportedPoolErrors remembers each namespace's linstor_operator_storage_pool_errors
// series (node, pool): a pass sets the pools it saw and removes only those that are
// gone, without a moment in which a pool's series is missing (a scrape then would end
// the alert's for: timer), as exported does for the series of a cluster.
var exportedPoolErrors = poolErrorSeries{last: map[string]map[[2]string]bool{}}

type poolErrorSeries struct {
	mu   sync.Mutex
	last map[string]map[[2]string]bool
}

func (e *poolErrorSeries) set(namespace string, counts map[[2]string]float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := map[[2]string]bool{}
	for k, v := range counts {
		poolErrors.WithLabelValues(namespace, k[0], k[1]).Set(v)
		now[k] = true
	}
	for k := range e.last[namespace] {
		if !now[k] {
			poolErrors.DeleteLabelValues(namespace, k[0], k[1])
		}
	}
	if len(now) == 0 {
		delete(e.last, namespace)
		return
	}
	e.last[namespace] = now
}

// recordPoolQuery exports whether the cluster's last uncached pool list failed, or no
// series when LINSTOR's state is not known (known false).
func recordPoolQuery(c *linstorv1.LinstorCluster, known, failing bool) {
	var want []series
	switch {
	case known && failing:
		want = []series{{value: 1}}
	case known:
		want = []series{{value: 0}}
	}
	exported.set(poolQueryFailing, types.NamespacedName{Namespace: c.Namespace, Name: c.Name}, want)
}

// recordReplicaMetrics exports the count of resources in every state, zeros included:
// an alert on a state must see it go back to 0.
func recordReplicaMetrics(c *linstorv1.LinstorCluster, report *replicahealth.Report) {
	for _, state := range replicahealth.States {
		resourcesGauge.WithLabelValues(c.Namespace, c.Name, string(state)).Set(float64(report.Counts[state]))
	}
}

// series is one sample: its label values after namespace and cluster, and its value.
type series struct {
	labels []string
	value  float64
}

// statusSeries are the series the cluster's status says, per gauge: conditions,
// certificate expiry and the upgrade's phase (the timeout is in effect whether or not
// an upgrade runs, so alerts can compare with it).
func statusSeries(c *linstorv1.LinstorCluster, phaseTimeout time.Duration) map[*prometheus.GaugeVec][]series {
	if phaseTimeout <= 0 {
		phaseTimeout = lifecycle.DefaultPhaseTimeout
	}
	out := map[*prometheus.GaugeVec][]series{
		conditionGauge:      nil,
		certificateExpiry:   nil,
		upgradePhaseStarted: nil,
		upgradePhaseTimeout: {{value: phaseTimeout.Seconds()}},
	}
	for _, cond := range c.Status.Conditions {
		out[conditionGauge] = append(out[conditionGauge], series{labels: []string{cond.Type, string(cond.Status), cond.Reason}, value: 1})
	}
	for _, cert := range c.Status.Certificates {
		if cert.NotAfter != nil {
			out[certificateExpiry] = append(out[certificateExpiry], series{labels: []string{cert.SecretName}, value: float64(cert.NotAfter.Unix())})
		}
	}
	if u := c.Status.Upgrade; u != nil && u.PhaseStartedAt != nil {
		out[upgradePhaseStarted] = []series{{labels: []string{string(u.Phase)}, value: float64(u.PhaseStartedAt.Unix())}}
	}
	return out
}

// lastBackupCompleted is when the newest Completed backup of the cluster among backups
// completed, in Unix seconds (0: none). ok is false when the operator cannot back up
// this cluster's database at all: no age means anything then.
func lastBackupCompleted(c *linstorv1.LinstorCluster, backups []linstorv1.LinstorBackup) (seconds float64, ok bool) {
	if dbbackup.Unsupported(c) != "" {
		return 0, false
	}
	var newest time.Time
	for i := range backups {
		b := &backups[i]
		if b.Spec.ClusterRef.Name != c.Name || b.DeletionTimestamp != nil || b.Status.Phase != linstorv1.BackupCompleted || b.Status.CompletedAt == nil {
			continue
		}
		if t := b.Status.CompletedAt.Time; t.After(newest) {
			newest = t
		}
	}
	if newest.IsZero() {
		return 0, true
	}
	return float64(newest.Unix()), true
}

// recordStatusMetrics exports what the status just written says.
func recordStatusMetrics(c *linstorv1.LinstorCluster, phaseTimeout time.Duration) {
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	for vec, want := range statusSeries(c, phaseTimeout) {
		exported.set(vec, key, want)
	}
}

// recordBackupMetric exports the age of the cluster's newest backup from the backups
// the pass listed.
func recordBackupMetric(c *linstorv1.LinstorCluster, backups []linstorv1.LinstorBackup) {
	var want []series
	if seconds, ok := lastBackupCompleted(c, backups); ok {
		want = []series{{value: seconds}}
	}
	exported.set(backupCompleted, types.NamespacedName{Namespace: c.Namespace, Name: c.Name}, want)
}

// forgetMetrics removes every series of a deleted cluster.
func forgetMetrics(c *linstorv1.LinstorCluster) {
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	for _, vec := range []*prometheus.GaugeVec{satellitesGauge, conditionGauge, certificateExpiry, backupCompleted, upgradePhaseStarted, upgradePhaseTimeout, poolQueryFailing} {
		exported.set(vec, key, nil)
	}
	resourcesGauge.DeletePartialMatch(prometheus.Labels{"namespace": c.Namespace, "cluster": c.Name})
	exportedPoolErrors.set(c.Namespace, nil)
}

// exported remembers each cluster's series per gauge, so a pass removes only those
// that are gone. Deleting everything and setting it again would leave a moment
// without the series, and a scrape then ends it: an alert's for: timer restarts.
var exported = exportedSeries{last: map[*prometheus.GaugeVec]map[types.NamespacedName]map[string]bool{}}

type exportedSeries struct {
	mu   sync.Mutex
	last map[*prometheus.GaugeVec]map[types.NamespacedName]map[string]bool
}

// labelSeparator cannot occur in a label value the operator sets.
const labelSeparator = "\xff"

func (e *exportedSeries) set(vec *prometheus.GaugeVec, key types.NamespacedName, want []series) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := map[string]bool{}
	for _, s := range want {
		labels := append([]string{key.Namespace, key.Name}, s.labels...)
		vec.WithLabelValues(labels...).Set(s.value)
		now[strings.Join(labels, labelSeparator)] = true
	}
	if e.last[vec] == nil {
		e.last[vec] = map[types.NamespacedName]map[string]bool{}
	}
	for joined := range e.last[vec][key] {
		if !now[joined] {
			vec.DeleteLabelValues(strings.Split(joined, labelSeparator)...)
		}
	}
	if len(now) == 0 {
		delete(e.last[vec], key)
		return
	}
	e.last[vec][key] = now
}
