package controllers

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/s3server"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
)

// Volume backups through LINSTOR: the schedule's spec.volumes registers the target's
// bucket as LINSTOR's S3 remote, declares LINSTOR's backup schedule and enables it; a
// scheduled shipment writes the volume to the real bucket, the status lists it per
// resource, the volume restores from it with the same bytes; deleting the
// LinstorBackupSchedule deletes LINSTOR's schedule and keeps the bucket's backups.
func TestVolumeBackupsShipThroughLinstor(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := s3Bucket(t, "linstor-volumes")
	ns, cluster := availableCluster(t, "volbk", linstorv1.LinstorSatelliteConfigurationSpec{StoragePools: []linstorv1.StoragePool{thinPool}}, "volbk-a", "volbk-b")
	backupSecrets(t, ns, srv, newIdentity(t))
	g.Expect(env.Client.Create(ctx, backupTarget(ns, "offsite", srv, "linstor-volumes"))).To(Succeed())
	availableTarget(g, ns, "offsite")
	g.Expect(emu.PlaceResource("pvc-vol", "volbk-a", "thin", true)).To(Succeed())
	g.Expect(emu.WriteVolumeData("pvc-vol", 0, []byte("the data of pvc-vol"))).To(Succeed())
	// LINSTOR's scheduler runs on the emulator's clock: 01:59 on a day, then 02:00.
	clock := time.Date(2026, 12, 1, 1, 59, 0, 0, time.UTC)
	emu.SetClock(func() time.Time { return clock })
	t.Cleanup(func() { emu.SetClock(nil) })

	s := &linstorv1.LinstorBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "with-volumes", Namespace: ns}, Spec: linstorv1.LinstorBackupScheduleSpec{
		ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}, TargetRef: &linstorv1.BackupTargetReference{Name: "offsite"}, Schedule: "0 3 * * *",
		Volumes: &linstorv1.VolumeBackupSpec{FullSchedule: "0 2 * * *", KeepRemote: ptr.To[int32](3)}}}
	g.Expect(env.Client.Create(ctx, s)).To(Succeed())
	lc := emulatorClient(t)
	g.Eventually(func(g Gomega) {
		remotes, err := lc.Remote.GetAllS3(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(remotes).To(ContainElement(HaveField("RemoteName", "offsite")))
		props, err := lc.Controller.GetProps(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(props).To(HaveKeyWithValue(linstor.ScheduleEnabledProp("offsite", "with-volumes"), "true"))
		st := get(g, ns, "with-volumes", &linstorv1.LinstorBackupSchedule{}).Status
		g.Expect(st.Volumes).NotTo(BeNil())
		c := condition(st.Conditions, linstorv1.ConditionConfigured)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		g.Expect(st.Volumes.Scheduled).To(BeNumerically(">=", 1))
	}, timeout, tick).Should(Succeed())

	// 02:00: LINSTOR ships pvc-vol to the bucket.
	clock = clock.Add(time.Minute)
	g.Expect(emu.RunDueSchedules(ctx)).To(BeNumerically(">=", 1))
	g.Expect(emu.WaitForBackups(ctx)).To(Succeed())
	var stored []string
	g.Expect(filepath.Walk(filepath.Join(srv.Dir, "linstor-volumes"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && strings.HasPrefix(filepath.Base(p), "pvc-vol_") {
			stored = append(stored, filepath.Base(p))
		}
		return err
	})).To(Succeed())
	g.Expect(stored).To(ContainElement(HaveSuffix(".meta")), "the bucket holds %v", stored)
	g.Eventually(func(g Gomega) {
		wake(g, ns, "with-volumes")
		st := get(g, ns, "with-volumes", &linstorv1.LinstorBackupSchedule{}).Status
		g.Expect(st.Volumes.Shipped).To(BeNumerically(">=", 1))
		var row *linstorv1.ResourceBackupStatus
		for i := range st.Volumes.Resources {
			if st.Volumes.Resources[i].Name == "pvc-vol" {
				row = &st.Volumes.Resources[i]
			}
		}
		g.Expect(row).NotTo(BeNil())
		g.Expect(row.LastShipped).NotTo(BeNil())
		g.Expect(row.LastShipped.Time).To(BeTemporally("==", clock))
	}, timeout, tick).Should(Succeed())

	// The volume restores from its shipped backup, with its bytes.
	g.Expect(lc.Backup.Restore(ctx, "offsite", lapi.BackupRestoreRequest{SrcRscName: "pvc-vol", LastBackup: "", TargetRscName: "pvc-vol-restored", NodeName: "volbk-b"})).To(Succeed())
	g.Expect(emu.WaitForBackups(ctx)).To(Succeed())
	data, err := emu.ReadVolumeData("volbk-b", "pvc-vol-restored", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(Equal("the data of pvc-vol"))

	// Deleting the LinstorBackupSchedule deletes LINSTOR's schedule; the bucket keeps the backup.
	g.Expect(env.Client.Delete(ctx, get(g, ns, "with-volumes", &linstorv1.LinstorBackupSchedule{}))).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "with-volumes"}, &linstorv1.LinstorBackupSchedule{}))
	}, timeout, tick).Should(BeTrue())
	props, err := lc.Controller.GetProps(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(props).NotTo(HaveKeyWithValue(linstor.ScheduleEnabledProp("offsite", "with-volumes"), "true"))
	backups, err := lc.Backup.GetAll(ctx, "offsite", "pvc-vol", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(backups.Linstor).NotTo(BeEmpty(), "deleting the schedule deleted a backup")
}

// A shipment that fails shows per resource, from a real fault: the S3 server refuses
// LINSTOR's writes of two resources' objects (one of them only its second volume, so
// its first volume's object is in the bucket without a meta file). The status names
// each failed resource, when and why, the Degraded condition counts them and names
// them, the good resource shows its backup; the LINSTOR requests per pass do not
// grow with the resources (one view; the backup list once for the shipments' end). The
// next day, with the fault gone, the shipments succeed and the failures are cleared.
func TestVolumeBackupFailuresShowPerResource(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cluster, proxy := shippingCluster(t, "volfl", "flaky", "volfl-a")
	lc := emulatorClient(t)
	for _, rd := range []string{"pvc-shipok", "pvc-shipbad", "pvc-shiptwo"} {
		g.Expect(emu.PlaceResource(rd, "volfl-a", "thin", true)).To(Succeed())
		g.Expect(emu.WriteVolumeData(rd, 0, []byte("the data of "+rd))).To(Succeed())
	}
	g.Expect(lc.ResourceDefinitions.CreateVolumeDefinition(ctx, "pvc-shiptwo", lapi.VolumeDefinitionCreate{VolumeDefinition: lapi.VolumeDefinition{SizeKib: 4096}})).To(Succeed())
	g.Expect(emu.WriteVolumeData("pvc-shiptwo", 1, []byte("the second volume"))).To(Succeed())
	clock := time.Date(2026, 12, 5, 1, 59, 0, 0, time.UTC)
	emu.SetClock(func() time.Time { return clock })
	t.Cleanup(func() { emu.SetClock(nil) })

	s := &linstorv1.LinstorBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "flaky-volumes", Namespace: ns}, Spec: linstorv1.LinstorBackupScheduleSpec{
		ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}, TargetRef: &linstorv1.BackupTargetReference{Name: "flaky"}, Schedule: "0 3 * * *",
		Volumes: &linstorv1.VolumeBackupSpec{FullSchedule: "0 2 * * *"}}}
	g.Expect(env.Client.Create(ctx, s)).To(Succeed())
	g.Eventually(func(g Gomega) {
		st := get(g, ns, "flaky-volumes", &linstorv1.LinstorBackupSchedule{}).Status
		c := condition(st.Conditions, linstorv1.ConditionConfigured)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		g.Expect(st.Volumes.Scheduled).To(BeNumerically(">=", 3))
	}, timeout, tick).Should(Succeed())

	// 02:00: the S3 server refuses pvc-shipbad's objects and pvc-shiptwo's second volume.
	refused := func(r *http.Request) bool {
		return r.Method == http.MethodPut && (strings.Contains(r.URL.Path, "/pvc-shipbad_") || strings.Contains(r.URL.Path, "/pvc-shiptwo_00001_"))
	}
	g.Expect(proxy.FailNext(1000, http.StatusForbidden, "AccessDenied", refused)).To(Succeed())
	clock = clock.Add(time.Minute)
	shippedAt := clock
	g.Expect(emu.RunDueSchedules(ctx)).To(BeNumerically(">=", 3))
	g.Expect(emu.WaitForBackups(ctx)).To(Succeed())
	emu.ResetRequests()
	rowOf := func(st linstorv1.LinstorBackupScheduleStatus, name string) linstorv1.ResourceBackupStatus {
		for _, r := range st.Volumes.Resources {
			if r.Name == name {
				return r
			}
		}
		return linstorv1.ResourceBackupStatus{}
	}
	g.Eventually(func(g Gomega) {
		wake(g, ns, "flaky-volumes")
		st := get(g, ns, "flaky-volumes", &linstorv1.LinstorBackupSchedule{}).Status
		g.Expect(st.Volumes.Failed).To(Equal(int32(2)), "%+v", st.Volumes.Resources)
		bad := rowOf(st, "pvc-shipbad")
		g.Expect(bad.LastFailed).NotTo(BeNil())
		g.Expect(bad.LastFailed.Time).To(BeTemporally("==", shippedAt))
		g.Expect(bad.LastFailure).To(ContainSubstring("neither in the bucket nor shipping"))
		g.Expect(bad.LastShipped).To(BeNil())
		two := rowOf(st, "pvc-shiptwo")
		g.Expect(two.LastFailed).NotTo(BeNil())
		g.Expect(two.LastFailure).To(ContainSubstring("LINSTOR lists backup pvc-shiptwo_back_20261205_020000 as failed"))
		ok := rowOf(st, "pvc-shipok")
		g.Expect(ok.LastFailed).To(BeNil())
		g.Expect(ok.LastShipped).NotTo(BeNil())
		g.Expect(ok.LastShipped.Time).To(BeTemporally("==", shippedAt))
		g.Expect(ok.LastBackup).To(Equal("pvc-shipok_back_20261205_020000"))
		// Failed resources come before shipped ones (after those LINSTOR does not ship,
		// which other tests' resources in the shared emulator are).
		index := func(name string) int {
			return slices.IndexFunc(st.Volumes.Resources, func(r linstorv1.ResourceBackupStatus) bool { return r.Name == name })
		}
		g.Expect(index("pvc-shipbad")).To(BeNumerically("<", index("pvc-shipok")), "failed resources are listed before shipped ones")
		g.Expect(index("pvc-shiptwo")).To(BeNumerically("<", index("pvc-shipok")), "failed resources are listed before shipped ones")
		c := condition(st.Conditions, linstorv1.ConditionDegraded)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		g.Expect(c.Reason).To(Equal(linstorv1.ReasonVolumeShipmentsFailed))
		g.Expect(c.Message).To(And(ContainSubstring("2 resources"), ContainSubstring("pvc-shipbad"), ContainSubstring("pvc-shiptwo")))
	}, timeout, tick).Should(Succeed())
	counts := emu.RequestCounts()
	views, lists := counts["GET /v1/view/schedules-by-resource"], bucketListReads("flaky")
	g.Expect(views).To(BeNumerically(">=", 1))
	// The view changed once since the shipments ended: one read of this remote's backup
	// list, whatever the number of resources and passes (none when a pass read it
	// before the counts were reset; two when a pass read the view during the shipments
	// and the list after them). The views are every schedule's.
	g.Expect(lists).To(BeNumerically("<=", 2), "the backup list is read for the shipments' end, not every pass: %v", counts)
	g.Expect(counts).NotTo(HaveKey("GET /v1/view/schedules-by-resource/{rd}"))
	t.Logf("LINSTOR requests until the status showed the failures: %d views (all schedules), %d backup lists of remote flaky", views, lists)

	// The next day the S3 server takes everything: the shipments succeed, the failures clear.
	g.Expect(proxy.PassThrough()).To(Succeed())
	clock = time.Date(2026, 12, 6, 2, 0, 0, 0, time.UTC)
	g.Expect(emu.RunDueSchedules(ctx)).To(BeNumerically(">=", 3))
	g.Expect(emu.WaitForBackups(ctx)).To(Succeed())
	g.Eventually(func(g Gomega) {
		wake(g, ns, "flaky-volumes")
		st := get(g, ns, "flaky-volumes", &linstorv1.LinstorBackupSchedule{}).Status
		g.Expect(st.Volumes.Failed).To(BeZero(), "%+v", st.Volumes.Resources)
		for _, name := range []string{"pvc-shipbad", "pvc-shiptwo", "pvc-shipok"} {
			r := rowOf(st, name)
			g.Expect(r.LastFailed).To(BeNil(), name)
			g.Expect(r.LastFailure).To(BeEmpty(), name)
			g.Expect(r.LastShipped).NotTo(BeNil(), name)
			g.Expect(r.LastShipped.Time).To(BeTemporally("==", clock), name)
		}
		c := condition(st.Conditions, linstorv1.ConditionDegraded)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse), c.Message)
	}, timeout, tick).Should(Succeed())
}

// shippingCluster is an Available cluster on node with a thin pool, and an Available
// LinstorBackupTarget named target whose bucket (linstor-<target>) is reached through
// a fault proxy.
func shippingCluster(t *testing.T, prefix, target, node string) (string, *linstorv1.LinstorCluster, *s3server.Faults) {
	t.Helper()
	g := NewWithT(t)
	bucket := "linstor-" + target
	srv := s3Bucket(t, bucket)
	proxy, err := s3server.StartFaults(srv)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(proxy.Close)
	ns, cluster := availableCluster(t, prefix, linstorv1.LinstorSatelliteConfigurationSpec{StoragePools: []linstorv1.StoragePool{thinPool}}, node)
	backupSecrets(t, ns, srv, newIdentity(t))
	tg := backupTarget(ns, target, srv, bucket)
	tg.Spec.S3.Endpoint = proxy.Endpoint
	g.Expect(env.Client.Create(context.Background(), tg)).To(Succeed())
	availableTarget(g, ns, target)
	return ns, cluster, proxy
}
