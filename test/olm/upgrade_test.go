package olm

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/bundle"
	"github.com/linstor-operator/linstor-operator/internal/runbundle"
	testenv "github.com/linstor-operator/linstor-operator/test/envtest"
)

// samplePool is the pool the samples give every node.
const samplePool = "file-thin"

// The upgrade OLM delivers: approving this tree's release replaces the CSV and applies its
// CRDs; the new operator upgrades LINSTOR to the version it pins, per docs/upgrades.md.
// Its OperatorCondition holds OLM exactly while the upgrade has changed something:
//   - Preflight waits for a replica that is not UpToDate (a resync under way). Nothing has
//     changed, so nothing is held: a release that arrives in the catalog now (0.3.1) is
//     installed, and its operator carries the same upgrade on (what lets a release that
//     fixes what Preflight waits on in).
//   - From Backup on the upgrade is held. Verify is made to wait (the replica falls behind
//     again once the new controller runs), a further release (0.3.2) arrives, and OLM keeps
//     its CSV Pending (OperatorConditionNotUpgradeable) until the upgrade succeeded, then
//     installs it.
func upgradeThroughOLM(t *testing.T) {
	requireInstalled(t)
	g := newG(t)
	c := world.client
	current, err := runbundle.ReadBundle(filepath.Join(world.root, "bundle"))
	g.Expect(err).NotTo(HaveOccurred())
	from := linstorVersionOf(g, installed.csv)
	to := current.CSV.Annotations[bundle.LinstorVersionAnnotation]
	g.Expect(to).NotTo(Equal(from), "this release upgrades LINSTOR")
	// The rollback step shortened the phase timeout to 30 s. This test holds Verify on
	// purpose while a release is published and OLM is watched (tens of seconds on a
	// loaded machine): a Verify past its timeout is stalled, which releases OLM by design
	// (lifecycle.Stalled), and the hold under test would end early. Back to the default.
	g.Expect(testenv.Update(ctx, c, clusterNow(g), func(cl *linstorv1.LinstorCluster) {
		if cl.Spec.Upgrade != nil {
			cl.Spec.Upgrade.PhaseTimeout = nil
		}
	})).To(Succeed())
	g.Expect(clusterNow(g).Spec.Upgrade).To(Or(BeNil(), HaveField("PhaseTimeout", BeNil())))

	// Data worth keeping, with one replica still resyncing: LINSTOR's preflight waits.
	g.Expect(linstor.emu.PlaceResource("pvc-data", "node-0", samplePool, true)).To(Succeed())
	g.Expect(linstor.emu.PlaceResource("pvc-data", "node-1", samplePool, true)).To(Succeed())
	g.Expect(linstor.emu.SetDiskState("pvc-data", "node-1", "Outdated")).To(Succeed())
	const behind = "pvc-data on node-1: volume 0 is Outdated"

	// OLM offered the next release as soon as the previous one was installed.
	waitInstallPlan(g, current.CSV.Name)
	crds := crdGenerations(g)
	phases := watchUpgradePhases(t)
	// Verify is held the same way, by the replica falling behind again. Not before the
	// upgrade's Satellites phase: the new controller loads the replicas' states from the
	// database when it starts (Controller), so only once it answers at the new version
	// does the change stick.
	holdVerify := make(chan error, 1)
	phases.onFirst(func(seen linstorv1.UpgradePhase) {
		if seen != linstorv1.UpgradeSatellites {
			phases.note("the watch missed Satellites: the replica fell behind in %s", seen)
		}
		holdVerify <- linstor.emu.SetDiskState("pvc-data", "node-1", "Outdated")
	}, linstorv1.UpgradeSatellites, linstorv1.UpgradeVerify, linstorv1.UpgradeSucceeded)
	addressesBefore := len(linstorAddresses())
	before := readLinstorDatabase(g)
	expectRowsInMigratedTables(g, before)
	approved := time.Now()
	rec := startRecorder(t, approved, "approving "+current.CSV.Name)
	defer rec.stop()
	t.Logf("approved InstallPlans %v", approveInstall(g, current.CSV.Name))
	csv := waitCSVSucceeded(g, current.CSV.Name)
	t.Logf("%6.1fs after the approval: CSV %s Succeeded; %s replaced", time.Since(approved).Seconds(), csv.Name, installed.csv)
	// The InstallPlan applied this release's CRDs, their conversion webhook now the new
	// CSV's (OLM writes its Service and CA into the CRD). Eventually: the InstallPlan's
	// apply can land after the CSV's write and put the bundle's Service back, and OLM then
	// installs the CSV's webhooks again (seen as a second InstallReady, Succeeded).
	var now map[string]int64
	g.Eventually(func(g Gomega) {
		now = crdGenerations(g)
		for _, name := range conversionCRDs {
			g.Expect(now[name]).To(BeNumerically(">", crds[name]), "OLM rewrote %s (its conversion webhook's CA)", name)
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(c.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
			g.Expect(crd.Spec.Conversion.Webhook.ClientConfig.Service.Name).To(Equal(installed.deployment.Name+"-service"), name)
			g.Expect(crd.Spec.Versions).To(ContainElement(And(HaveField("Name", "v1"), HaveField("Storage", true))), name)
		}
	}, timeout, tick).Should(Succeed())
	for name, gen := range now {
		t.Logf("CRD %s: generation %d -> %d", name, crds[name], gen)
	}
	op, dep := startRelease(t, csv)
	installed.csv, installed.deployment, installed.op = csv.Name, dep, op
	t.Logf("%6.1fs after the approval: the operator binary of %s runs as pod %s", time.Since(approved).Seconds(), csv.Name, op.pods[0].Name)

	// The new operator starts LINSTOR's upgrade; Preflight waits for the resync. Nothing
	// has changed, so the operator tells OLM that replacing it is fine.
	waitPreflightNotHolding(g, csv.Name, behind)
	preflight := clusterNow(g).Status.Upgrade.DeepCopy()
	t.Logf("%6.1fs after the approval: LINSTOR %s -> %s waits in Preflight; OperatorCondition %s Upgradeable=True (%s)",
		time.Since(approved).Seconds(), from, to, csv.Name, upgradeableMessage(g, csv.Name))

	// A release arrives in the catalog while Preflight waits, and its InstallPlan is
	// approved: OLM installs it at once. The resync still runs, so all of this happens
	// with the upgrade in Preflight.
	fix := publishTestRelease(g, "0.3.1")
	t.Logf("approved InstallPlans %v (test-only %s)", approveInstall(g, fix.CSV.Name), fix.CSV.Name)
	published := time.Now()
	fixCSV := &operatorsv1alpha1.ClusterServiceVersion{}
	g.Eventually(func(g Gomega) {
		if u := clusterNow(g).Status.Upgrade; u == nil || u.Phase != linstorv1.UpgradePreflight {
			StopTrying(fmt.Sprintf("the upgrade left Preflight while the resync runs: %+v", u)).Now()
		}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: fix.CSV.Name}, fixCSV)).To(Succeed())
		g.Expect(fixCSV.Status.Phase).To(Equal(operatorsv1alpha1.CSVPhaseSucceeded), "%s: %s", fixCSV.Status.Reason, fixCSV.Status.Message)
	}, timeout, tick).Should(Succeed())
	t.Logf("%6.1fs after %s was approved: its CSV Succeeded during Preflight, replacing %s", time.Since(published).Seconds(), fix.CSV.Name, csv.Name)
	op, dep = startRelease(t, fixCSV)
	installed.csv, installed.deployment, installed.op = fixCSV.Name, dep, op

	// Its operator plans the same target and carries the same upgrade on: still the
	// Preflight the previous operator began, never cancelled, and again not holding OLM.
	waitPreflightNotHolding(g, fixCSV.Name, behind)
	u := clusterNow(g).Status.Upgrade
	g.Expect(u.From).To(Equal(preflight.From))
	g.Expect(u.To).To(Equal(preflight.To))
	g.Expect(u.StartedAt.Time).To(BeTemporally("==", preflight.StartedAt.Time), "the same upgrade, not a new one")
	g.Expect(clusterEvents(g, "UpgradeCancelled")).To(BeEmpty())
	t.Logf("%6.1fs after %s was approved: its operator runs as pod %s and carries the upgrade started at %s on in Preflight; OperatorCondition %s Upgradeable=True",
		time.Since(published).Seconds(), fix.CSV.Name, op.pods[0].Name, u.StartedAt.Format(time.RFC3339), fixCSV.Name)

	// The resync ends: Backup, Controller, Satellites; then Verify waits for the replica
	// that fell behind again. From Backup on, the operator holds OLM.
	resynced := time.Now()
	g.Expect(linstor.emu.SetDiskState("pvc-data", "node-1", "UpToDate")).To(Succeed())
	g.Eventually(func(g Gomega) {
		cl := clusterNow(g)
		if cl.Status.Upgrade != nil && cl.Status.Upgrade.Phase == linstorv1.UpgradeSucceeded {
			StopTrying(fmt.Sprintf("the upgrade succeeded before Verify could be held (%s)", phases)).Now()
		}
		g.Expect(cl.Status.Upgrade).NotTo(BeNil())
		g.Expect(cl.Status.Upgrade.Phase).To(Equal(linstorv1.UpgradeVerify))
		g.Expect(cl.Status.Upgrade.Message).To(ContainSubstring(behind))
		own := meta.FindStatusCondition(cl.Status.Conditions, linstorv1.ConditionUpgradeable)
		g.Expect(own).NotTo(BeNil())
		g.Expect(own.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(own.Reason).To(Equal(linstorv1.ReasonUpgradeInProgress))
		g.Expect(operatorUpgradeable(g, fixCSV.Name).Status).To(Equal(metav1.ConditionFalse))
	}, timeout, tick).Should(Succeed())
	select {
	case err := <-holdVerify:
		g.Expect(err).NotTo(HaveOccurred(), "the replica falls behind in Satellites")
	case <-time.After(10 * time.Second):
		g.Expect(fmt.Errorf("the watch never ran the Satellites hook: %s", phases)).NotTo(HaveOccurred())
	}
	t.Logf("%6.1fs after the resync ended: LINSTOR runs %s, the upgrade waits in Verify; OperatorCondition %s Upgradeable=False (%s)",
		time.Since(resynced).Seconds(), clusterNow(g).Status.Version, fixCSV.Name, upgradeableMessage(g, fixCSV.Name))

	// The next release arrives and its InstallPlan is approved: OLM holds its CSV while
	// the LINSTOR upgrade runs.
	next := publishTestRelease(g, "0.3.2")
	t.Logf("approved InstallPlans %v (test-only %s)", approveInstall(g, next.CSV.Name), next.CSV.Name)
	published = time.Now()
	g.Eventually(func(g Gomega) {
		held := &operatorsv1alpha1.ClusterServiceVersion{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: next.CSV.Name}, held)).To(Succeed())
		g.Expect(held.Status.Phase).To(Equal(operatorsv1alpha1.CSVPhasePending))
		g.Expect(held.Status.Reason).To(Equal(operatorsv1alpha1.CSVReasonOperatorConditionNotUpgradeable))
	}, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		held := &operatorsv1alpha1.ClusterServiceVersion{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: next.CSV.Name}, held)).To(Succeed())
		g.Expect(held.Status.Phase).To(Equal(operatorsv1alpha1.CSVPhasePending))
		running := &operatorsv1alpha1.ClusterServiceVersion{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: fixCSV.Name}, running)).To(Succeed())
		// OLM marks the running CSV Replacing as soon as its successor exists, and keeps
		// its Deployment.
		g.Expect(running.Status.Phase).To(BeElementOf(operatorsv1alpha1.CSVPhaseSucceeded, operatorsv1alpha1.CSVPhaseReplacing))
		pods, err := runningPodsOf(ctx, dep)
		g.Expect(err).NotTo(HaveOccurred())
		for _, p := range pods {
			ctr, err := managerContainer(&p)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ctr.Image).To(Equal(op.image), "the operator of the release that holds still runs")
		}
		g.Expect(clusterNow(g).Status.Upgrade.Phase).To(Equal(linstorv1.UpgradeVerify))
	}, "10s", time.Second).Should(Succeed())
	t.Logf("%6.1fs after %s was approved: its CSV is still Pending (OperatorConditionNotUpgradeable), the operator of %s still runs",
		time.Since(published).Seconds(), next.CSV.Name, fixCSV.Name)

	// The replica catches up: the upgrade succeeds, and only then does OLM go on. Until
	// then the held CSV never leaves Pending (read before the cluster: OLM moves it only
	// after the operator saw the upgrade end).
	caughtUp := time.Now()
	g.Expect(linstor.emu.SetDiskState("pvc-data", "node-1", "UpToDate")).To(Succeed())
	availableAt := time.Duration(0)
	g.Eventually(func(g Gomega) {
		held := &operatorsv1alpha1.ClusterServiceVersion{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: next.CSV.Name}, held)).To(Succeed())
		cl := clusterNow(g)
		done := cl.Status.Upgrade != nil && cl.Status.Upgrade.Phase == linstorv1.UpgradeSucceeded
		if !done && held.Status.Phase != operatorsv1alpha1.CSVPhasePending {
			StopTrying(fmt.Sprintf("OLM moved %s to %s while the LINSTOR upgrade is %+v", next.CSV.Name, held.Status.Phase, cl.Status.Upgrade)).Now()
		}
		if availableAt == 0 && cl.Status.Version == to && meta.IsStatusConditionTrue(cl.Status.Conditions, linstorv1.ConditionAvailable) {
			availableAt = time.Since(approved)
		}
		g.Expect(done).To(BeTrue(), "upgrade %+v", cl.Status.Upgrade)
		g.Expect(cl.Status.Upgrade.From).To(Equal(from))
		g.Expect(cl.Status.Upgrade.StartedAt.Time).To(BeTemporally("==", preflight.StartedAt.Time))
		g.Expect(cl.Status.Deployed).To(Equal(&linstorv1.DeployedVersions{Controller: to, Satellites: to}))
	}, timeout, tick).Should(Succeed())
	t.Logf("%6.1fs after the replica caught up: the upgrade Succeeded; backup %s", time.Since(caughtUp).Seconds(), clusterNow(g).Status.Upgrade.BackupName)
	waitAvailable(g, to)
	if availableAt == 0 {
		availableAt = time.Since(approved)
	}
	t.Logf("LinstorCluster Available on LINSTOR %s: %.1fs after approving %s", to, availableAt.Seconds(), csv.Name)
	// LINSTOR's database is what migrations 29 and 30 make of the one before the hop.
	after := readLinstorDatabase(g)
	g.Expect(after.StoredVersion()).To(Equal(int64(31)), "%s ran migrations 29 and 30", to)
	g.Expect(testenv.MigrationProblems(before, after)).To(BeEmpty())
	t.Logf("the database after the hop: stored version %d (from %d); every resource definition has Linstor/Drbd/auto-block-size=False, no DrbdPrimarySetOn is left, each volume definition it named has InitialUptoDateOn and the DRBD_INIT flag",
		after.StoredVersion(), before.StoredVersion())

	// Every phase was seen, and OLM was held exactly from Backup on: the LinstorCluster's
	// Upgradeable (which the OperatorCondition aggregates) was never False in Preflight,
	// was False before Backup ended and in every write of the phases after it. (The write
	// that enters Backup may still carry Preflight's True: the condition follows in the
	// same pass, before the backup is taken; and the last Preflight write may already
	// carry False when the pass that decided Backup had to save its phase again.)
	g.Expect(phases.seen()).To(ContainElements(linstorv1.UpgradePreflight, linstorv1.UpgradeBackup, linstorv1.UpgradeController,
		linstorv1.UpgradeSatellites, linstorv1.UpgradeVerify, linstorv1.UpgradeSucceeded), "%s", phases)
	t.Logf("upgrade phases seen, with the LinstorCluster's Upgradeable: %s", phases)
	g.Expect(phases.upgradeableInPhaseBefore(linstorv1.UpgradePreflight, linstorv1.UpgradeBackup)).To(ConsistOf(metav1.ConditionTrue), "%s", phases)
	g.Expect(phases.upgradeable(linstorv1.UpgradeBackup)).To(ContainElement(metav1.ConditionFalse), "%s", phases)
	for _, p := range []linstorv1.UpgradePhase{linstorv1.UpgradeController, linstorv1.UpgradeSatellites, linstorv1.UpgradeVerify} {
		g.Expect(phases.upgradeable(p)).To(ConsistOf(metav1.ConditionFalse), "%s: %s", p, phases)
	}
	// The pass that saves Succeeded (a lifecycle save, Upgradeable still False) writes
	// Upgradeable=True in its status save right after: the test may look in between.
	g.Eventually(func() []metav1.ConditionStatus { return phases.upgradeable(linstorv1.UpgradeSucceeded) }, "20s", tick).
		Should(ContainElement(metav1.ConditionTrue), "%s", phases)
	addresses := linstorAddresses()
	g.Expect(len(addresses)).To(BeNumerically(">", addressesBefore), "the LINSTOR controller pod was replaced and served at its new address")
	t.Logf("LINSTOR served at %v", addresses)
	nextCSV := waitCSVSucceeded(g, next.CSV.Name)
	t.Logf("%6.1fs after the replica caught up: the held CSV %s Succeeded", time.Since(caughtUp).Seconds(), next.CSV.Name)
	op, dep = startRelease(t, nextCSV)
	installed.csv, installed.deployment, installed.op = nextCSV.Name, dep, op
	waitAvailable(g, to)

	// The data survived, and every served version reads every object.
	g.Expect(linstor.emu.ResourcePlaced("pvc-data", "node-1")).To(BeTrue())
	for _, kind := range []string{"LinstorCluster", "LinstorSatellite", "LinstorSatelliteConfiguration"} {
		counts := map[string]int{}
		for _, version := range []string{"v1alpha1", "v1"} {
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion("linstor.io/" + version)
			list.SetKind(kind + "List")
			g.Expect(c.List(ctx, list, client.InNamespace(namespace))).To(Succeed(), "%s %s", version, kind)
			counts[version] = len(list.Items)
		}
		g.Expect(counts["v1"]).To(BeNumerically(">", 0), kind)
		g.Expect(counts["v1alpha1"]).To(Equal(counts["v1"]), kind)
		t.Logf("%s: %d objects read in v1 and in v1alpha1", kind, counts["v1"])
	}
}

// waitPreflightNotHolding waits for the upgrade to wait in Preflight for the replica
// that is behind, with the LinstorCluster saying it holds no operator upgrade and the
// OperatorCondition of csv, as OLM read it, Upgradeable=True.
func waitPreflightNotHolding(g Gomega, csv, behind string) {
	g.Eventually(func(g Gomega) {
		cl := clusterNow(g)
		st := cl.Status.Upgrade
		g.Expect(st).NotTo(BeNil())
		g.Expect(st.Phase).To(Equal(linstorv1.UpgradePreflight))
		g.Expect(st.Message).To(ContainSubstring(behind))
		own := meta.FindStatusCondition(cl.Status.Conditions, linstorv1.ConditionUpgradeable)
		g.Expect(own).NotTo(BeNil())
		g.Expect(own.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(own.Message).To(ContainSubstring("nothing has changed yet"))
		g.Expect(operatorUpgradeable(g, csv).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, tick).Should(Succeed())
}

// clusterEvents are the messages of the LinstorCluster's Events with reason.
func clusterEvents(g Gomega, reason string) []string {
	var events corev1.EventList
	g.Expect(world.client.List(ctx, &events, client.InNamespace(namespace))).To(Succeed())
	var out []string
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "LinstorCluster" && e.InvolvedObject.Name == "linstor" && e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}

// A Degraded cluster whose cause has nothing to do with upgrades does not hold a
// fix-forward release: here an admin narrowed spec.nodeSelector to one of three nodes by
// mistake, and the operator holds the mass removal (RemovalHeld) instead of removing two
// satellites. It keeps Upgradeable=True, says why the cluster is degraded, and OLM
// installs the next release.
func fixForwardWhileDegraded(t *testing.T) {
	requireInstalled(t)
	g := newG(t)
	version := clusterNow(g).Status.Version
	before := satelliteUIDs(g)
	g.Expect(before).To(HaveLen(3))
	const keep = "olm-e2e.linstor.io/keep"
	setLabel(g, "node-0", keep, "yes")
	g.Expect(testenv.Update(ctx, world.client, clusterNow(g), func(cl *linstorv1.LinstorCluster) { cl.Spec.NodeSelector = map[string]string{keep: "yes"} })).To(Succeed())
	g.Eventually(func(g Gomega) {
		conds := clusterNow(g).Status.Conditions
		d := meta.FindStatusCondition(conds, linstorv1.ConditionDegraded)
		g.Expect(d).NotTo(BeNil())
		g.Expect(d.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonRemovalHeld))
		own := meta.FindStatusCondition(conds, linstorv1.ConditionUpgradeable)
		g.Expect(own).NotTo(BeNil())
		g.Expect(own.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(own.Message).To(ContainSubstring("Degraded (RemovalHeld), which holds no operator upgrade"))
		g.Expect(operatorUpgradeable(g, installed.csv).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, tick).Should(Succeed())
	conds := clusterNow(g).Status.Conditions
	t.Logf("LinstorCluster Degraded (%s); its Upgradeable: %s; OperatorCondition %s: Upgradeable=True (%s)",
		meta.FindStatusCondition(conds, linstorv1.ConditionDegraded).Message, meta.FindStatusCondition(conds, linstorv1.ConditionUpgradeable).Message,
		installed.csv, upgradeableMessage(g, installed.csv))

	next := publishTestRelease(g, "0.3.3")
	approved := time.Now()
	rec := startRecorder(t, approved, "approving "+next.CSV.Name)
	t.Logf("approved InstallPlans %v (test-only %s)", approveInstall(g, next.CSV.Name), next.CSV.Name)
	csv := waitCSVSucceeded(g, next.CSV.Name)
	rec.stop()
	t.Logf("%6.1fs after the approval: the test-only fix-forward CSV %s Succeeded on the degraded cluster", time.Since(approved).Seconds(), csv.Name)
	op, dep := startRelease(t, csv)
	installed.csv, installed.deployment, installed.op = csv.Name, dep, op

	// Still held under the new operator: the same satellites, every LINSTOR node there.
	g.Consistently(func(g Gomega) {
		d := meta.FindStatusCondition(clusterNow(g).Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d).NotTo(BeNil())
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonRemovalHeld))
		g.Expect(satelliteUIDs(g)).To(Equal(before))
		for node := range before {
			_, ok := linstor.emu.Node(node)
			g.Expect(ok).To(BeTrue(), "LINSTOR node %s", node)
		}
	}, "3s", tick).Should(Succeed())
	// The admin undoes the mistake.
	g.Expect(testenv.Update(ctx, world.client, clusterNow(g), func(cl *linstorv1.LinstorCluster) { cl.Spec.NodeSelector = nil })).To(Succeed())
	waitAvailable(g, version)
	g.Eventually(func(g Gomega) {
		g.Expect(meta.IsStatusConditionFalse(clusterNow(g).Status.Conditions, linstorv1.ConditionDegraded)).To(BeTrue())
	}, timeout, tick).Should(Succeed())
	g.Expect(satelliteUIDs(g)).To(Equal(before), "the satellites were never removed and recreated")
	t.Logf("%6.1fs after the approval: the selection undone, the LinstorCluster Available under %s with the same 3 satellites", time.Since(approved).Seconds(), csv.Name)
}

// conversionCRDs are the CRDs with a v1alpha1 and a v1, joined by the operator's webhook.
var conversionCRDs = []string{"linstorclusters.linstor.io", "linstorsatelliteconfigurations.linstor.io", "linstorsatellites.linstor.io"}

func clusterNow(g Gomega) *linstorv1.LinstorCluster {
	cl := &linstorv1.LinstorCluster{}
	g.Expect(world.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "linstor"}, cl)).To(Succeed())
	return cl
}

func linstorVersionOf(g Gomega, csvName string) string {
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	g.Expect(world.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: csvName}, csv)).To(Succeed())
	v := csv.Annotations[bundle.LinstorVersionAnnotation]
	g.Expect(v).NotTo(BeEmpty(), csvName)
	return v
}

// publishTestRelease serves the catalog that also holds the test-only release version,
// as a catalog update would deliver it, and returns that release's bundle.
func publishTestRelease(g Gomega, version string) *runbundle.Bundle {
	b, err := runbundle.ReadBundle(testBundleDir(world.work, version))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.CSV.Annotations).To(HaveKey(TestOnlyAnnotation))
	opts := runBundleOptions(nil)
	opts.CatalogDir = testCatalogDir(world.work, version)
	published := time.Now()
	g.Expect(runbundle.Publish(ctx, opts)).To(Succeed())
	// OLM reads the catalog again once its connection to the server is READY again.
	g.Eventually(func(g Gomega) {
		cs := &operatorsv1alpha1.CatalogSource{}
		g.Expect(world.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: runbundle.CatalogSourceName}, cs)).To(Succeed())
		st := cs.Status.GRPCConnectionState
		g.Expect(st).NotTo(BeNil())
		g.Expect(st.LastObservedState).To(Equal("READY"))
		g.Expect(st.LastConnectTime.Time).To(BeTemporally(">=", published.Truncate(time.Second)))
	}, timeout, tick).Should(Succeed())
	return b
}

// waitInstallPlan waits for an InstallPlan of the Subscription that installs csv and
// awaits approval (the newest, should OLM have resolved again).
func waitInstallPlan(g Gomega, csv string) *operatorsv1alpha1.InstallPlan {
	var found *operatorsv1alpha1.InstallPlan
	g.Eventually(func(g Gomega) {
		var plans operatorsv1alpha1.InstallPlanList
		g.Expect(world.client.List(ctx, &plans, client.InNamespace(namespace))).To(Succeed())
		found = runbundle.InstallPlanToApprove(plans.Items, subscription(g).UID, csv)
		g.Expect(found).NotTo(BeNil(), "no InstallPlan of %s awaiting approval", csv)
		g.Expect(found.Status.Phase).To(Equal(operatorsv1alpha1.InstallPlanPhaseRequiresApproval))
	}, timeout, tick).Should(Succeed())
	return found
}

// approveInstall approves the Subscription's InstallPlan of csv, and any plan OLM makes
// for it again before it ran, until the CSV exists. It returns the plans it approved.
func approveInstall(g Gomega, csv string) []string {
	var approved []string
	g.Eventually(func(g Gomega) {
		err := world.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: csv}, &operatorsv1alpha1.ClusterServiceVersion{})
		if err == nil && len(approved) > 0 {
			return
		}
		var plans operatorsv1alpha1.InstallPlanList
		g.Expect(world.client.List(ctx, &plans, client.InNamespace(namespace))).To(Succeed())
		if ip := runbundle.InstallPlanToApprove(plans.Items, subscription(g).UID, csv); ip != nil {
			approve(g, ip)
			approved = append(approved, ip.Name)
		}
		g.Expect(approved).NotTo(BeEmpty(), "no InstallPlan of %s to approve", csv)
		g.Expect(world.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: csv}, &operatorsv1alpha1.ClusterServiceVersion{})).To(Succeed(), "CSV %s not created yet", csv)
	}, timeout, tick).Should(Succeed())
	return approved
}

// satelliteUIDs are the LinstorSatellites by name, with their UIDs: a satellite removed
// and made again has another.
func satelliteUIDs(g Gomega) map[string]types.UID {
	var sats linstorv1.LinstorSatelliteList
	g.Expect(world.client.List(ctx, &sats, client.InNamespace(namespace))).To(Succeed())
	out := map[string]types.UID{}
	for _, s := range sats.Items {
		out[s.Name] = s.UID
	}
	return out
}

// phaseWatch collects, from a watch, every phase the LinstorCluster's upgrade status
// takes, however short (polling could miss one), with the LinstorCluster's Upgradeable
// condition in each write, and runs a hook when a phase is first seen.
type phaseWatch struct {
	mu     sync.Mutex
	phases []linstorv1.UpgradePhase
	// states are the (phase, Upgradeable) pairs in order, each change once.
	states []phaseState
	hooks  []phaseHook
	events []string // what else the watch said: errors, restarts
	// since: statuses of an upgrade that started before the watch (an earlier hop's
	// Succeeded) are not this upgrade's phases.
	since time.Time
}

type phaseHook struct {
	phases []linstorv1.UpgradePhase
	run    func(seen linstorv1.UpgradePhase)
}

type phaseState struct {
	phase       linstorv1.UpgradePhase
	upgradeable metav1.ConditionStatus
}

func (p *phaseWatch) seen() []linstorv1.UpgradePhase {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.phases)
}

// upgradeable are the statuses of the LinstorCluster's Upgradeable condition seen in
// writes with the upgrade in phase ("" where the condition was missing).
func (p *phaseWatch) upgradeable(phase linstorv1.UpgradePhase) []metav1.ConditionStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []metav1.ConditionStatus
	for _, s := range p.states {
		if s.phase == phase && !slices.Contains(out, s.upgradeable) {
			out = append(out, s.upgradeable)
		}
	}
	return out
}

// upgradeableInPhaseBefore is upgradeable(phase) without a last write of phase saying
// False that directly precedes the first write of next: a pass that decided next but lost the
// race to save its phase (a conflict, decided again) already holds OLM in its
// condition write, which is the safe side of the window.
func (p *phaseWatch) upgradeableInPhaseBefore(phase, next linstorv1.UpgradePhase) []metav1.ConditionStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	states := p.states
	for i := 1; i < len(states); i++ {
		if states[i].phase == next && states[i-1].phase == phase && states[i-1].upgradeable == metav1.ConditionFalse {
			states = append(slices.Clone(states[:i-1]), states[i:]...)
			break
		}
	}
	var out []metav1.ConditionStatus
	for _, s := range states {
		if s.phase == phase && !slices.Contains(out, s.upgradeable) {
			out = append(out, s.upgradeable)
		}
	}
	return out
}

// onFirst runs hook once, on the watch's goroutine, when the first of phases is seen
// (a later one stands in for a phase a restarted watch missed).
func (p *phaseWatch) onFirst(hook func(seen linstorv1.UpgradePhase), phases ...linstorv1.UpgradePhase) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hooks = append(p.hooks, phaseHook{phases: phases, run: hook})
}

func (p *phaseWatch) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var states []string
	for _, s := range p.states {
		states = append(states, fmt.Sprintf("%s(Upgradeable=%s)", s.phase, s.upgradeable))
	}
	return fmt.Sprintf("phases %v, watch events %v", states, p.events)
}

func (p *phaseWatch) note(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, fmt.Sprintf(format, args...))
}

// record notes the cluster's phase and Upgradeable, and returns the hooks the phase
// is the first of.
func (p *phaseWatch) record(cl *linstorv1.LinstorCluster) []func(linstorv1.UpgradePhase) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if started := cl.Status.Upgrade.StartedAt; started != nil && started.Time.Before(p.since) {
		return nil
	}
	phase := cl.Status.Upgrade.Phase
	st := phaseState{phase: phase}
	if up := meta.FindStatusCondition(cl.Status.Conditions, linstorv1.ConditionUpgradeable); up != nil {
		st.upgradeable = up.Status
	}
	if n := len(p.states); n == 0 || p.states[n-1] != st {
		p.states = append(p.states, st)
	}
	if n := len(p.phases); n > 0 && p.phases[n-1] == phase {
		return nil
	}
	p.phases = append(p.phases, phase)
	var run []func(linstorv1.UpgradePhase)
	p.hooks = slices.DeleteFunc(p.hooks, func(h phaseHook) bool {
		if slices.Contains(h.phases, phase) {
			run = append(run, h.run)
			return true
		}
		return false
	})
	return run
}

// watchUpgradePhases watches the LinstorCluster until the test ends. Should the API
// server end a watch, it watches again from the last version seen, so no write is
// missed; only when that version is too old (410 Gone) from the current state, and
// what happened between is not seen.
func watchUpgradePhases(t *testing.T) *phaseWatch {
	t.Helper()
	wc, err := client.NewWithWatch(world.cluster.Config, client.Options{Scheme: world.client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	// StartedAt has whole seconds: an upgrade that starts this second is the watch's.
	p := &phaseWatch{since: time.Now().Add(-time.Second).Truncate(time.Second)}
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		resourceVersion := ""
		for {
			// Bookmarks keep the version fresh while the cluster does not change.
			from := &client.ListOptions{Namespace: namespace, Raw: &metav1.ListOptions{ResourceVersion: resourceVersion, AllowWatchBookmarks: true}}
			w, err := wc.Watch(ctx, &linstorv1.LinstorClusterList{}, from)
			if err != nil {
				p.note("watch: %v", err)
				select {
				case <-done:
					return
				case <-time.After(time.Second):
					continue
				}
			}
			for open := true; open; {
				select {
				case <-done:
					w.Stop()
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						p.note("the watch ended")
						open = false
						continue
					}
					cl, isCluster := ev.Object.(*linstorv1.LinstorCluster)
					if !isCluster {
						p.note("%s %T %v", ev.Type, ev.Object, ev.Object)
						resourceVersion = "" // an error (410 Gone): from the current state
						continue
					}
					resourceVersion = cl.ResourceVersion
					if ev.Type == watch.Bookmark || cl.Status.Upgrade == nil {
						continue
					}
					for _, hook := range p.record(cl) {
						hook(cl.Status.Upgrade.Phase)
					}
				}
			}
		}
	}()
	return p
}

func approve(g Gomega, ip *operatorsv1alpha1.InstallPlan) {
	patch := client.MergeFrom(ip.DeepCopy())
	ip.Spec.Approved = true
	g.Expect(world.client.Patch(ctx, ip, patch)).To(Succeed())
}

func waitCSVSucceeded(g Gomega, name string) *operatorsv1alpha1.ClusterServiceVersion {
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	g.Eventually(func(g Gomega) {
		g.Expect(world.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, csv)).To(Succeed())
		g.Expect(csv.Status.Phase).To(Equal(operatorsv1alpha1.CSVPhaseSucceeded), "%s: %s", csv.Status.Reason, csv.Status.Message)
	}, timeout, tick).Should(Succeed())
	return csv
}

// crdGenerations are the linstor.io CRDs' generations: an update that changes a spec
// moves them.
func crdGenerations(g Gomega) map[string]int64 {
	var crds apiextensionsv1.CustomResourceDefinitionList
	g.Expect(world.client.List(ctx, &crds)).To(Succeed())
	out := map[string]int64{}
	for _, crd := range crds.Items {
		if crd.Spec.Group == "linstor.io" {
			out[crd.Name] = crd.Generation
		}
	}
	return out
}

func setLabel(g Gomega, node, key, value string) {
	g.Expect(testenv.Update(ctx, world.client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, func(n *corev1.Node) { n.Labels[key] = value })).To(Succeed())
}

// The Subscription's channel decides the LINSTOR line: on stable-linstor-1.33 a release of
// the 1.34 line is never offered; switching the Subscription to stable-linstor-1.34 is how
// an admin asks for it, and OLM offers it at once, from the installed release (the line
// channel's way in). The 1.34 release is the channel probe (see channelProbe): it is left
// unapproved, so it never runs.
func channelSwitchMovesTheLine(t *testing.T) {
	requireInstalled(t)
	g := newG(t)
	lineNow, lineNext := "stable-linstor-1.33", "stable-linstor-1.34"
	g.Expect(linstorVersionOf(g, installed.csv)).To(HavePrefix("1.33."))
	setChannel(g, lineNow)
	probe := publishTestRelease(g, channelProbe)
	published := time.Now()
	g.Expect(probe.CSV.Annotations).To(HaveKey(TestOnlyAnnotation))
	g.Consistently(func(g Gomega) {
		sub := subscription(g)
		g.Expect(sub.Status.InstalledCSV).To(Equal(installed.csv))
		var plans operatorsv1alpha1.InstallPlanList
		g.Expect(world.client.List(ctx, &plans, client.InNamespace(namespace))).To(Succeed())
		for _, ip := range plans.Items {
			g.Expect(ip.Spec.ClusterServiceVersionNames).NotTo(ContainElement(probe.CSV.Name), "offered on %s", lineNow)
		}
	}, "10s", time.Second).Should(Succeed())
	sub := subscription(g)
	t.Logf("%.1fs after OLM read the catalog offering the test-only probe %s (LINSTOR %s): the Subscription on %s is %s at %s, with no InstallPlan for it",
		time.Since(published).Seconds(), probe.CSV.Name, probeLinstor, lineNow, sub.Status.State, sub.Status.InstalledCSV)

	setChannel(g, lineNext)
	switched := time.Now()
	ip := waitInstallPlan(g, probe.CSV.Name)
	sub = subscription(g)
	t.Logf("%.1fs after switching the Subscription to %s: InstallPlan %s offers %s (Subscription %s); left unapproved",
		time.Since(switched).Seconds(), lineNext, ip.Name, probe.CSV.Name, sub.Status.State)
	g.Expect(ip.Spec.Approved).To(BeFalse())
	g.Expect(sub.Status.InstalledCSV).To(Equal(installed.csv))
}

// upgradeableMessage is the OperatorCondition's Upgradeable message once OLM copied the
// operator's latest spec (for logs: the operator may write it again at any moment).
func upgradeableMessage(g Gomega, csv string) string {
	var msg string
	g.Eventually(func(g Gomega) { msg = operatorUpgradeable(g, csv).Message }, timeout, tick).Should(Succeed())
	return msg
}

func subscription(g Gomega) *operatorsv1alpha1.Subscription {
	var subs operatorsv1alpha1.SubscriptionList
	g.Expect(world.client.List(ctx, &subs, client.InNamespace(namespace))).To(Succeed())
	g.Expect(subs.Items).To(HaveLen(1))
	return &subs.Items[0]
}

func setChannel(g Gomega, channel string) {
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sub := subscription(g)
		sub.Spec.Channel = channel
		return world.client.Update(ctx, sub)
	})).To(Succeed())
}
