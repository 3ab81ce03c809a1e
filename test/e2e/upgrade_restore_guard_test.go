package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	lapi "github.com/LINBIT/golinstor/client"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/linstorcluster"
	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
)

// This file runs after the scenario (scenario_test.go needs an empty cluster, and
// tests run in file order); like the upgrade tests, it starts from installAt.

// linstorTables names the CRDs of LINSTOR's group that exist now.
func linstorTables(g Gomega) []string {
	var list apiextensionsv1.CustomResourceDefinitionList
	g.Expect(env.Client.List(ctx, &list)).To(Succeed())
	var out []string
	for _, crd := range list.Items {
		if crd.Spec.Group == dbbackup.Group {
			out = append(out, crd.Name)
		}
	}
	return out
}

// markerGone: no ConfigMap records a replacement of the database of LinstorCluster "linstor".
func markerGone() bool {
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: linstorcluster.MarkerName("linstor")}, &corev1.ConfigMap{})
	return apierrors.IsNotFound(err)
}

// Disaster recovery into an empty cluster (issue #29, item 2): a cluster with data is
// backed up; the LinstorCluster is deleted, and with it every CRD of LINSTOR's group
// (the whole database) and everything the LINSTOR controller knew. A new LinstorCluster
// naming the backup in spec.database.restoreFrom creates the tables from the backup,
// restores every object, and LINSTOR starts on it and answers with the resources.
func TestFreshClusterRestoresEveryObjectOfTheBackup(t *testing.T) {
	g := NewWithT(t)
	installAt(t, "1.33.3")
	const backupName = "disaster"
	b := &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: backupName, Namespace: namespace},
		Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: "linstor"}}}
	g.Expect(env.Client.Create(ctx, b)).To(Succeed())
	t.Cleanup(func() {
		got := &linstorv1.LinstorBackup{}
		if env.Client.Get(ctx, client.ObjectKeyFromObject(b), got) == nil {
			if controllerutil.RemoveFinalizer(got, names.FinalizerBackupInUse) {
				_ = env.Client.Update(ctx, got)
			}
			_ = env.Client.Delete(ctx, got)
		}
	})
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
		g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupCompleted), b.Status.Message)
	}, upgradeTimeout, tick).Should(Succeed())
	t.Logf("backup %s: %s (%d CRDs, %d objects, %s)", backupName, b.Status.Message, b.Status.CRDs, b.Status.Objects, b.Status.Checksum)
	g.Eventually(func(g Gomega) {
		c := cluster(g)
		g.Expect(c.Status.Satellites.Ready).To(Equal(int32(4)))
		g.Expect(conditionStatus(c.Status.Conditions, linstorv1.ConditionAvailable)).To(Equal(metav1.ConditionTrue))
	}, upgradeTimeout, tick).Should(Succeed())

	// The disaster: the LinstorCluster goes, then LINSTOR's whole database and what its
	// controller held in memory.
	old := cluster(g)
	g.Expect(env.Client.Delete(ctx, old)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(old), &linstorv1.LinstorCluster{}))
	}, timeout, tick).Should(BeTrue())
	g.Eventually(func(g Gomega) {
		g.Expect(runningPodNodes(g, names.ControllerName)).To(BeEmpty())
	}, timeout, tick).Should(Succeed())
	before, err := dbbackup.Take(ctx, env.Client)
	g.Expect(err).NotTo(HaveOccurred())
	beforeCRDs, beforeObjects := before.Counts()
	beforeBytes, err := before.Encode()
	g.Expect(err).NotTo(HaveOccurred())
	beforeSum := dbbackup.Checksum(beforeBytes)
	t.Logf("database before the deletion: %d CRDs, %d objects, %s (the backup's checksum %s)", beforeCRDs, beforeObjects, beforeSum, b.Status.Checksum)
	g.Expect(beforeObjects).To(BeNumerically(">", 0))

	var crds apiextensionsv1.CustomResourceDefinitionList
	g.Expect(env.Client.List(ctx, &crds)).To(Succeed())
	for i := range crds.Items {
		if crds.Items[i].Spec.Group == dbbackup.Group {
			g.Expect(env.Client.Delete(ctx, &crds.Items[i])).To(Succeed())
		}
	}
	g.Eventually(linstorTables, timeout, tick).Should(BeEmpty())
	env.Emulator.Reset()
	empty, err := dbbackup.Empty(ctx, env.Client)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(empty).To(BeTrue())
	g.Expect(env.Emulator.ResourcePlaced("pvc-keep", "node-1")).To(BeFalse())
	g.Expect(markerGone()).To(BeTrue(), "a replacement marker is left")

	// A new LinstorCluster naming the backup: the database is empty, so no confirmation
	// is needed.
	again := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: old.Name, Namespace: old.Namespace, Labels: old.Labels}, Spec: *old.Spec.DeepCopy()}
	if again.Spec.Database == nil {
		again.Spec.Database = &linstorv1.DatabaseSpec{}
	}
	again.Spec.Database.RestoreFrom = backupName
	start := time.Now()
	var timeline []string
	mark := func(what string) {
		line := fmt.Sprintf("%5.1fs %s", time.Since(start).Seconds(), what)
		timeline = append(timeline, line)
		t.Log("timeline: " + line)
	}
	// A watch sees every stored status, so no phase is missed however short it is.
	wc, err := client.NewWithWatch(env.Cluster.Config, client.Options{Scheme: env.Client.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	var list linstorv1.LinstorClusterList
	w, err := wc.Watch(ctx, &list, client.InNamespace(namespace), client.MatchingFields{"metadata.name": "linstor"})
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()
	g.Expect(env.Client.Create(ctx, again)).To(Succeed())
	mark("LinstorCluster created with spec.database.restoreFrom=" + backupName)

	var phases []string
	var final *linstorv1.RestoreStatus
	deadline := time.After(upgradeTimeout)
watch:
	for {
		select {
		case ev, ok := <-w.ResultChan():
			g.Expect(ok).To(BeTrue(), "the watch ended")
			c, isCluster := ev.Object.(*linstorv1.LinstorCluster)
			if !isCluster || c.Status.Restore == nil {
				continue
			}
			r := c.Status.Restore
			if len(phases) == 0 || phases[len(phases)-1] != r.Phase {
				phases = append(phases, r.Phase)
				mark("status.restore " + r.Phase + ": " + r.Message)
			}
			if r.Phase == lifecycle.RestoreRestored || r.Phase == lifecycle.RestoreFailed {
				final = r
				break watch
			}
		case <-deadline:
			c := cluster(g)
			t.Fatalf("the restore did not end within %s; phases %v; status.restore %+v; conditions %+v", upgradeTimeout, phases, c.Status.Restore, c.Status.Conditions)
		}
	}
	g.Expect(final.Phase).To(Equal(lifecycle.RestoreRestored), final.Message)
	g.Expect(phases).NotTo(ContainElement(lifecycle.RestoreAwaitingConfirmation), "an empty database asked for a confirmation")
	g.Expect(phases).To(ContainElement(lifecycle.RestoreRestoring))
	g.Expect(linstorTables(g)).To(HaveLen(int(b.Status.CRDs)), "the backup's tables are not all back")

	// LINSTOR starts on the restored database and answers with what it held.
	lc, err := linstor.NewClient(env.LinstorURL, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		g.Expect(runningPodNodes(g, names.ControllerName)).NotTo(BeEmpty())
	}, upgradeTimeout, tick).Should(Succeed())
	mark("LINSTOR controller pod running")
	g.Eventually(func(g Gomega) {
		rds, err := lc.ResourceDefinitions.GetAll(ctx, lapi.RDGetAllRequest{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rds).To(ContainElement(HaveField("Name", "pvc-keep")))
		g.Expect(env.Emulator.ResourcePlaced("pvc-keep", "node-0")).To(BeTrue())
		g.Expect(env.Emulator.ResourcePlaced("pvc-keep", "node-1")).To(BeTrue())
		nodes, err := lc.Nodes.GetAll(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(nodes).To(HaveLen(4))
	}, upgradeTimeout, tick).Should(Succeed())
	mark("LINSTOR answers: pvc-keep on node-0 and node-1, 4 nodes")
	g.Eventually(func(g Gomega) {
		c := cluster(g)
		g.Expect(c.Status.Version).To(Equal("1.33.3"))
		g.Expect(c.Status.Satellites.Ready).To(Equal(int32(4)))
		g.Expect(conditionStatus(c.Status.Conditions, linstorv1.ConditionAvailable)).To(Equal(metav1.ConditionTrue), "%+v", c.Status.Conditions)
	}, upgradeTimeout, tick).Should(Succeed())
	mark("LinstorCluster Available, 4 satellites Ready")
	g.Expect(markerGone()).To(BeTrue(), "the replacement marker outlived the restore")

	// Every object is back: the database as LINSTOR runs on it equals the one deleted.
	g.Expect(env.StopOperator()).To(Succeed()) // nothing of the operator writes while comparing
	defer func() { g.Expect(env.StartOperator()).To(Succeed()) }()
	var afterCRDs, afterObjects int
	var afterSum string
	g.Eventually(func(g Gomega) {
		after, err := dbbackup.Take(ctx, env.Client)
		g.Expect(err).NotTo(HaveOccurred())
		afterCRDs, afterObjects = after.Counts()
		data, err := after.Encode()
		g.Expect(err).NotTo(HaveOccurred())
		afterSum = dbbackup.Checksum(data)
		g.Expect([]int{afterCRDs, afterObjects}).To(Equal([]int{beforeCRDs, beforeObjects}))
		g.Expect(afterSum).To(Equal(beforeSum), func() string { return databaseDiff(g, b) })
	}, timeout, tick).Should(Succeed())
	t.Logf("compared: before the deletion %d CRDs, %d objects, %s; after the restore %d CRDs, %d objects, %s; the backup %d CRDs, %d objects, %s",
		beforeCRDs, beforeObjects, beforeSum, afterCRDs, afterObjects, afterSum, b.Status.CRDs, b.Status.Objects, b.Status.Checksum)
	t.Logf("fresh-cluster restore timeline:\n%s", strings.Join(timeline, "\n"))
}
