package controllers

import (
	"context"
	"os"
	"path/filepath"
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
