package linstorbackupschedule

import (
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

var (
	lastRun = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "linstor_operator_backup_schedule_last_run_timestamp_seconds",
		Help: "The scheduled time of the LinstorBackupSchedule's last run (status.lastScheduleTime), in Unix seconds; 0: none yet.",
	}, []string{"namespace", "schedule", "cluster"})
	lastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "linstor_operator_backup_schedule_last_success_timestamp_seconds",
		Help: "When the LinstorBackupSchedule's last backup completed (status.lastSuccessfulTime), in Unix seconds; 0: none yet.",
	}, []string{"namespace", "schedule", "cluster"})
	volumeResources = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "linstor_operator_volume_backup_resources",
		Help: "Resources of a LinstorBackupSchedule's LINSTOR volume shipping by state: shipped, waiting (scheduled, nothing shipped yet), not_scheduled (LINSTOR gives a reason), failed (its last shipment failed; it may also count as shipped).",
	}, []string{"namespace", "schedule", "state"})
)

func init() {
	metrics.Registry.MustRegister(lastRun, lastSuccess, volumeResources)
}

// recordMetrics sets the schedule's series from its status.
func recordMetrics(s *linstorv1.LinstorBackupSchedule) {
	forgetMetrics(types.NamespacedName{Namespace: s.Namespace, Name: s.Name})
	st := s.Status
	lastRun.WithLabelValues(s.Namespace, s.Name, s.Spec.ClusterRef.Name).Set(unixOrZero(st.LastScheduleTime))
	lastSuccess.WithLabelValues(s.Namespace, s.Name, s.Spec.ClusterRef.Name).Set(unixOrZero(st.LastSuccessfulTime))
	if v := st.Volumes; v != nil {
		volumeResources.WithLabelValues(s.Namespace, s.Name, "shipped").Set(float64(v.Shipped))
		volumeResources.WithLabelValues(s.Namespace, s.Name, "waiting").Set(float64(v.Scheduled - v.Shipped))
		volumeResources.WithLabelValues(s.Namespace, s.Name, "not_scheduled").Set(float64(v.NotScheduled))
		volumeResources.WithLabelValues(s.Namespace, s.Name, "failed").Set(float64(v.Failed))
	}
}

// forgetMetrics drops the schedule's series (deleted, or about to be set anew).
func forgetMetrics(key types.NamespacedName) {
	match := prometheus.Labels{"namespace": key.Namespace, "schedule": key.Name}
	lastRun.DeletePartialMatch(match)
	lastSuccess.DeletePartialMatch(match)
	volumeResources.DeletePartialMatch(match)
}

func unixOrZero(t *metav1.Time) float64 {
	if t == nil {
		return 0
	}
	return float64(t.Unix())
}
