package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/backupschedule"
	"github.com/linstor-operator/linstor-operator/pkg/names"
)

// wake makes the schedule's controller look again (the test moved the clock).
func wake(g Gomega, ns, name string) {
	s := get(g, ns, name, &linstorv1.LinstorBackupSchedule{})
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations["test.linstor.io/wake"] = fmt.Sprint(time.Now().UnixNano())
	g.Expect(env.Client.Update(context.Background(), s)).To(Succeed())
}

func scheduledBackups(g Gomega, ns, schedule string) []linstorv1.LinstorBackup {
	var list linstorv1.LinstorBackupList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{names.LabelBackupSchedule: schedule})).To(Succeed())
	return list.Items
}

// A schedule of hourly backups to a bucket, on a clock the test moves: each run is one
// backup, named by its time, sent encrypted and read back; a run missed while a backup
// is under way, or hours missed at once, are counted, not taken twice; retention keeps
// the newest two in the cluster and in the bucket; suspend stops the runs.
func TestBackupScheduleRunsRetainsAndCounts(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := s3Bucket(t, "linstor-sched")
	ns, cluster := offsiteCluster(t, srv, "linstor-sched", "sched", "sched-a", "10.62.0.1")

	// A schedule with a bad time zone says which field.
	bad := &linstorv1.LinstorBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns}, Spec: linstorv1.LinstorBackupScheduleSpec{
		ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}, Schedule: "0 * * * *", TimeZone: "Mars/Olympus"}}
	g.Expect(env.Client.Create(ctx, bad)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := condition(get(g, ns, "bad", &linstorv1.LinstorBackupSchedule{}).Status.Conditions, linstorv1.ConditionAvailable)
		g.Expect(c.Reason).To(Equal(linstorv1.ReasonInvalidSpec))
		g.Expect(c.Message).To(ContainSubstring("spec.timeZone"))
	}, timeout, tick).Should(Succeed())

	s := &linstorv1.LinstorBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "hourly", Namespace: ns}, Spec: linstorv1.LinstorBackupScheduleSpec{
		ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}, TargetRef: &linstorv1.BackupTargetReference{Name: "offsite"},
		Schedule: "0 * * * *", Retention: &linstorv1.BackupRetention{KeepLast: ptr.To[int32](2)}}}
	g.Expect(env.Client.Create(ctx, s)).To(Succeed())
	g.Eventually(func(g Gomega) {
		st := get(g, ns, "hourly", &linstorv1.LinstorBackupSchedule{}).Status
		g.Expect(condition(st.Conditions, linstorv1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(st.NextScheduleTime).NotTo(BeNil())
	}, timeout, tick).Should(Succeed())
	g.Expect(scheduledBackups(g, ns, "hourly")).To(BeEmpty(), "a backup before the first run")

	prev := ""
	completedRun := func(n int) linstorv1.LinstorBackup {
		scheduleClock.Advance(time.Hour)
		var got linstorv1.LinstorBackup
		g.Eventually(func(g Gomega) {
			wake(g, ns, "hourly")
			st := get(g, ns, "hourly", &linstorv1.LinstorBackupSchedule{}).Status
			g.Expect(st.LastScheduleTime).NotTo(BeNil())
			g.Expect(st.LastBackup).NotTo(BeEmpty())
			g.Expect(st.LastBackup).NotTo(Equal(prev))
			got = *get(g, ns, st.LastBackup, &linstorv1.LinstorBackup{})
			g.Expect(got.Status.Phase).To(Equal(linstorv1.BackupCompleted), got.Status.Message)
			g.Expect(got.Name).To(Equal(backupschedule.BackupName("hourly", st.LastScheduleTime.Time)))
		}, timeout, tick).Should(Succeed(), "run %d", n)
		prev = got.Name
		return got
	}
	var names []string
	for i := 1; i <= 3; i++ {
		b := completedRun(i)
		g.Expect(names).NotTo(ContainElement(b.Name), "a run was taken twice")
		names = append(names, b.Name)
		g.Expect(b.Status.Stored).NotTo(BeNil())
		g.Expect(b.Spec.TargetRef.Name).To(Equal("offsite"))
		time.Sleep(1100 * time.Millisecond) // completion times have seconds
	}
	// Retention: the newest two remain, in the cluster and in the bucket.
	g.Eventually(func(g Gomega) {
		wake(g, ns, "hourly")
		var left []string
		for _, b := range scheduledBackups(g, ns, "hourly") {
			left = append(left, b.Name)
		}
		slices.Sort(left)
		g.Expect(left).To(Equal(names[1:]))
		st := get(g, ns, "offsite", &linstorv1.LinstorBackupTarget{}).Status
		var ids []string
		for _, b := range st.Backups {
			ids = append(ids, b.Backup)
		}
		slices.Sort(ids)
		g.Expect(ids).To(Equal(names[1:]))
	}, timeout, tick).Should(Succeed())
	st := get(g, ns, "hourly", &linstorv1.LinstorBackupSchedule{}).Status
	g.Expect(st.LastSuccessfulTime).NotTo(BeNil())
	g.Expect(st.LastControllerStopped).NotTo(BeNil())
	// LinstorBackupScheduleFailing reads these.
	g.Eventually(func(g Gomega) {
		st := get(g, ns, "hourly", &linstorv1.LinstorBackupSchedule{}).Status
		labels := map[string]string{"namespace": ns, "schedule": "hourly", "cluster": cluster.Name}
		g.Expect(gauge(g, "linstor_operator_backup_schedule_last_success_timestamp_seconds", labels)).To(Equal(float64(st.LastSuccessfulTime.Unix())))
		g.Expect(gauge(g, "linstor_operator_backup_schedule_last_run_timestamp_seconds", labels)).To(Equal(float64(st.LastScheduleTime.Unix())))
	}, timeout, tick).Should(Succeed())

	// Five hours pass at once (the operator was down): one backup, four runs missed.
	missedBefore := st.Missed
	scheduleClock.Advance(4 * time.Hour)
	b := completedRun(4)
	g.Expect(strings.HasPrefix(b.Name, "hourly-")).To(BeTrue())
	g.Expect(get(g, ns, "hourly", &linstorv1.LinstorBackupSchedule{}).Status.Missed - missedBefore).To(Equal(int32(4)))

	// Suspended: no run, however late.
	s = get(g, ns, "hourly", &linstorv1.LinstorBackupSchedule{})
	s.Spec.Suspend = true
	g.Expect(env.Client.Update(ctx, s)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := condition(get(g, ns, "hourly", &linstorv1.LinstorBackupSchedule{}).Status.Conditions, linstorv1.ConditionAvailable)
		g.Expect(c.Reason).To(Equal(linstorv1.ReasonSuspended))
	}, timeout, tick).Should(Succeed())
	count := len(scheduledBackups(g, ns, "hourly"))
	scheduleClock.Advance(3 * time.Hour)
	g.Consistently(func(g Gomega) {
		wake(g, ns, "hourly")
		g.Expect(scheduledBackups(g, ns, "hourly")).To(HaveLen(count))
	}, "2s", 500*time.Millisecond).Should(Succeed())
}
