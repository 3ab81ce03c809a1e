package controllers

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/emulator"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/volumebackup"
)

// bucketListReads counts the reads of one remote's backup list in the emulator's
// request log (the remote is in the path: other schedules read their own).
func bucketListReads(remote string) int {
	n := 0
	for _, r := range emu.Requests() {
		if r.Method == http.MethodGet && r.Path == "/v1/remotes/"+remote+"/backups" {
			n++
		}
	}
	return n
}

// remoteWrites counts the operator's modifications of one S3 remote in LINSTOR: each
// one makes the kept backup list stale.
func remoteWrites(remote string) int {
	n := 0
	for _, r := range emu.Requests() {
		if r.Method == http.MethodPut && r.Path == "/v1/remotes/s3/"+remote {
			n++
		}
	}
	return n
}

// viewReads counts the schedules-by-resource views read by anyone (the request log
// does not keep the query that names the schedule): for the log only.
func viewReads() int {
	n := 0
	for _, r := range emu.Requests() {
		if r.Method == http.MethodGet && r.Path == "/v1/view/schedules-by-resource" {
			n++
		}
	}
	return n
}

// The remote's backup list, for which LINSTOR lists the whole bucket, is read when the
// schedules-by-resource view says a shipment started or ended, and otherwise once per
// volumebackup.BucketListInterval; the view is read every pass. Idle passes keep the
// list; a failing shipment reads it again and shows the failure; the next shipment
// succeeds, reads it again and clears the failure; the interval passing reads it once.
func TestVolumeBackupListCadence(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cluster, proxy := shippingCluster(t, "volcad", "cadence", "volcad-a")
	lc := emulatorClient(t)
	// Its own resource group: the shared emulator's other resources are not scheduled.
	g.Expect(emu.SetResourceGroup("cadence-rg", 1, "")).To(Succeed())
	for _, rd := range []string{"pvc-cadok", "pvc-cadbad"} {
		g.Expect(emu.PlaceResources([]emulator.Placement{{Resource: rd, Node: "volcad-a", Pool: "thin", ResourceGroup: "cadence-rg"}})).To(Succeed())
		g.Expect(emu.WriteVolumeData(rd, 0, []byte("the data of "+rd))).To(Succeed())
		t.Cleanup(func() { _ = lc.ResourceDefinitions.Delete(ctx, rd) })
	}
	// LINSTOR's scheduler on the emulator's clock: hourly at :30, so the shipments of
	// other tests' schedules (at 02:00) are not due at the same minute.
	clock := time.Date(2026, 12, 10, 4, 0, 0, 0, time.UTC)
	emu.SetClock(func() time.Time { return clock })
	t.Cleanup(func() { emu.SetClock(nil) })

	// suspend: no database backup when the test moves the operator's clock.
	s := &linstorv1.LinstorBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "cadence-volumes", Namespace: ns}, Spec: linstorv1.LinstorBackupScheduleSpec{
		ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}, TargetRef: &linstorv1.BackupTargetReference{Name: "cadence"}, Schedule: "0 3 * * *", Suspend: true,
		Volumes: &linstorv1.VolumeBackupSpec{FullSchedule: "30 * * * *", ResourceGroups: []string{"cadence-rg"}}}}
	g.Expect(env.Client.Create(ctx, s)).To(Succeed())
	t.Cleanup(func() {
		// LINSTOR's schedule goes with it, so no later test ships these resources.
		_ = env.Client.Delete(ctx, s)
		NewWithT(t).Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(s), &linstorv1.LinstorBackupSchedule{}))
		}, timeout, tick).Should(BeTrue())
	})
	status := func(g Gomega) *linstorv1.VolumeBackupStatus {
		st := get(g, ns, "cadence-volumes", &linstorv1.LinstorBackupSchedule{}).Status
		g.Expect(st.Volumes).NotTo(BeNil())
		return st.Volumes
	}
	rowOf := func(v *linstorv1.VolumeBackupStatus, name string) linstorv1.ResourceBackupStatus {
		for _, r := range v.Resources {
			if r.Name == name {
				return r
			}
		}
		return linstorv1.ResourceBackupStatus{}
	}
	g.Eventually(func(g Gomega) {
		st := get(g, ns, "cadence-volumes", &linstorv1.LinstorBackupSchedule{}).Status
		c := condition(st.Conditions, linstorv1.ConditionConfigured)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		g.Expect(st.Volumes.Scheduled).To(Equal(int32(2)))
	}, timeout, tick).Should(Succeed())

	// An idle cycle: a resource definition LINSTOR does not schedule, which the view
	// lists with its reason (status.volumes.notScheduled counts it) and which is not the
	// list's business; the status counting it shows a pass read the view after it.
	conn := &linstor.Connection{Client: lc, HTTP: http.DefaultClient, URL: emulatorURL}
	idle, ownViews := 0, 0
	idleCycle := func() {
		t.Helper()
		idle++
		name := fmt.Sprintf("pvc-cadidle-%d", idle)
		g.Expect(lc.ResourceDefinitions.Create(ctx, lapi.ResourceDefinitionCreate{ResourceDefinition: lapi.ResourceDefinition{Name: name}})).To(Succeed())
		t.Cleanup(func() { _ = lc.ResourceDefinitions.Delete(ctx, name) })
		g.Eventually(func(g Gomega) {
			rows, err := linstor.ScheduledResources(ctx, conn, "cadence", "cadence-volumes")
			ownViews++
			g.Expect(err).NotTo(HaveOccurred())
			var want int32
			for _, r := range rows {
				if r.Reason != "" {
					want++
				}
			}
			wake(g, ns, "cadence-volumes")
			g.Expect(status(g).NotScheduled).To(Equal(want))
		}, timeout, tick).Should(Succeed())
	}
	// idleCyclesKeepTheList runs idle cycles: the view is read in each, the list in none.
	const idleCycles = 5
	idleCyclesKeepTheList := func(what string) {
		t.Helper()
		before, views, own := bucketListReads("cadence"), viewReads(), ownViews
		for range idleCycles {
			idleCycle()
		}
		reads := bucketListReads("cadence") - before
		// The views the operator read for every schedule in the shared emulator: only
		// logged.
		t.Logf("%s: %d idle cycles (each seen in the status), %d bucket list reads; %d views read by the operator meanwhile (all schedules)",
			what, idleCycles, reads, viewReads()-views-(ownViews-own))
		g.Expect(reads).To(BeZero(), "%s: the bucket list is read again while nothing ships", what)
	}

	// clockReadsOnce moves the operator's clock on by d: the list is read once, then
	// kept again.
	clockReadsOnce := func(d time.Duration, what string) {
		t.Helper()
		before := bucketListReads("cadence")
		scheduleClock.Advance(d)
		g.Eventually(func(g Gomega) {
			wake(g, ns, "cadence-volumes")
			g.Expect(bucketListReads("cadence") - before).To(BeNumerically(">=", 1))
		}, timeout, tick).Should(Succeed())
		g.Expect(bucketListReads("cadence")-before).To(Equal(1), "%s reads the bucket list once", what)
		idleCyclesKeepTheList("after " + what + "'s read")
	}

	// Nothing ships: the first pass read the list; the passes after it keep it. (A pass
	// that read the status before the first one's write sends the credentials again:
	// then the list is read again too.)
	g.Expect(bucketListReads("cadence")).To(Equal(1+remoteWrites("cadence")), "the first pass reads the bucket list once")
	idleCyclesKeepTheList("before any shipment")

	// 04:30: the S3 server refuses pvc-cadbad's objects; pvc-cadok ships.
	refused := func(r *http.Request) bool {
		return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/pvc-cadbad_")
	}
	g.Expect(proxy.FailNext(1000, http.StatusForbidden, "AccessDenied", refused)).To(Succeed())
	before := bucketListReads("cadence")
	clock = time.Date(2026, 12, 10, 4, 30, 0, 0, time.UTC)
	failedAt := clock
	g.Expect(emu.RunDueSchedules(ctx)).To(BeNumerically(">=", 2))
	g.Expect(emu.WaitForBackups(ctx)).To(Succeed())
	g.Eventually(func(g Gomega) {
		wake(g, ns, "cadence-volumes")
		v := status(g)
		g.Expect(v.Failed).To(Equal(int32(1)), "%+v", v.Resources)
		bad := rowOf(v, "pvc-cadbad")
		g.Expect(bad.LastFailed).NotTo(BeNil())
		g.Expect(bad.LastFailed.Time).To(BeTemporally("==", failedAt))
		g.Expect(bad.LastFailure).To(ContainSubstring("neither in the bucket nor shipping"))
		ok := rowOf(v, "pvc-cadok")
		g.Expect(ok.LastShipped).NotTo(BeNil())
		g.Expect(ok.LastShipped.Time).To(BeTemporally("==", failedAt))
	}, timeout, tick).Should(Succeed())
	// One read for the view's change, and one more for each pass that fell within the
	// shipment (the view moved twice, or the list showed it shipping); the idle cycles
	// after it show the reads stop once it is over.
	reads := bucketListReads("cadence") - before
	t.Logf("a failing shipment: %d bucket list reads", reads)
	g.Expect(reads).To(BeNumerically(">=", 1), "the failing shipment's end reads the bucket list again")
	idleCyclesKeepTheList("after the failure")
	// While a failure shows, the list is read again every volumebackup.FailingRecheck
	// (a manual backup fixes it without moving the view): once per recheck.
	clockReadsOnce(volumebackup.FailingRecheck, "the failure's recheck")

	// 05:30: the S3 server takes everything, both ship: the failure clears.
	g.Expect(proxy.PassThrough()).To(Succeed())
	before = bucketListReads("cadence")
	clock = time.Date(2026, 12, 10, 5, 30, 0, 0, time.UTC)
	g.Expect(emu.RunDueSchedules(ctx)).To(BeNumerically(">=", 2))
	g.Expect(emu.WaitForBackups(ctx)).To(Succeed())
	g.Eventually(func(g Gomega) {
		wake(g, ns, "cadence-volumes")
		v := status(g)
		g.Expect(v.Failed).To(BeZero(), "%+v", v.Resources)
		for _, name := range []string{"pvc-cadbad", "pvc-cadok"} {
			r := rowOf(v, name)
			g.Expect(r.LastFailed).To(BeNil(), name)
			g.Expect(r.LastFailure).To(BeEmpty(), name)
			g.Expect(r.LastShipped).NotTo(BeNil(), name)
			g.Expect(r.LastShipped.Time).To(BeTemporally("==", clock), name)
		}
	}, timeout, tick).Should(Succeed())
	reads = bucketListReads("cadence") - before
	t.Logf("a succeeding shipment: %d bucket list reads", reads)
	g.Expect(reads).To(BeNumerically(">=", 1), "the shipment's end reads the bucket list again")
	idleCyclesKeepTheList("after the success")

	// The interval passes on the operator's clock: one read, then the list is kept again.
	clockReadsOnce(volumebackup.BucketListInterval, "the interval")
}
