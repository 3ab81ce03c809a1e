package olm

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/runbundle"
	"github.com/linstor-operator/linstor-operator/pkg/bundle"
)

// samplePool is the pool the samples give every node.
const samplePool = "file-thin"

// The upgrade OLM delivers: approving this tree's release replaces the CSV and applies its
// CRDs; the new operator upgrades LINSTOR to the version it pins, per docs/upgrades.md.
// The LINSTOR upgrade is held in Preflight by a replica that is not UpToDate (a resync
// under way), and while it is held a further release arrives in the catalog: its
// InstallPlan is approved, and OLM keeps its CSV Pending because the running operator's
// OperatorCondition says Upgradeable=False. When the resync ends, LINSTOR upgrades, the
// cluster is Available on the new version, and OLM lets the held release through.
func upgradeThroughOLM(t *testing.T) {
	requireInstalled(t)
	g := NewWithT(t)
	c := world.client
	current, err := runbundle.ReadBundle(filepath.Join(world.root, "bundle"))
	g.Expect(err).NotTo(HaveOccurred())
	from := linstorVersionOf(g, installed.csv)
	to := current.CSV.Annotations[bundle.LinstorVersionAnnotation]
	g.Expect(to).NotTo(Equal(from), "this release upgrades LINSTOR")

	// Data worth keeping, with one replica still resyncing: LINSTOR's preflight waits.
	g.Expect(linstor.emu.PlaceResource("pvc-data", "node-0", samplePool, true)).To(Succeed())
	g.Expect(linstor.emu.PlaceResource("pvc-data", "node-1", samplePool, true)).To(Succeed())
	g.Expect(linstor.emu.SetDiskState("pvc-data", "node-1", "Outdated")).To(Succeed())

	// OLM offered the next release as soon as the previous one was installed.
	ip := waitInstallPlan(g, current.CSV.Name)
	crds := crdGenerations(g)
	approve(g, ip)
	approved := time.Now()
	rec := startRecorder(t, approved, "approving "+current.CSV.Name)
	defer rec.stop()
	csv := waitCSVSucceeded(g, current.CSV.Name)
	t.Logf("%6.1fs after the approval: CSV %s Succeeded; %s replaced", time.Since(approved).Seconds(), csv.Name, installed.csv)
	// The InstallPlan applied this release's CRDs, their conversion webhook now the new
	// CSV's (OLM writes its Service and CA into the CRD).
	for name, gen := range crdGenerations(g) {
		t.Logf("CRD %s: generation %d -> %d", name, crds[name], gen)
	}
	for _, name := range conversionCRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
		g.Expect(crd.Spec.Conversion.Webhook.ClientConfig.Service.Name).To(Equal(installed.deployment.Name+"-service"), name)
		g.Expect(crd.Spec.Versions).To(ContainElement(And(HaveField("Name", "v1"), HaveField("Storage", true))), name)
	}
	op, dep := startRelease(t, csv)
	installed.csv, installed.deployment, installed.op = csv.Name, dep, op
	t.Logf("%6.1fs after the approval: the operator binary of %s runs as pod %s", time.Since(approved).Seconds(), csv.Name, op.pods[0].Name)

	// The new operator starts LINSTOR's upgrade; Preflight waits for the resync, and the
	// operator tells OLM that replacing it now is unsafe.
	g.Eventually(func(g Gomega) {
		st := clusterNow(g).Status.Upgrade
		g.Expect(st).NotTo(BeNil())
		g.Expect(st.Phase).To(Equal(linstorv1.UpgradePreflight))
		g.Expect(st.Message).To(ContainSubstring("pvc-data on node-1: volume 0 is Outdated"))
		up := operatorUpgradeable(g, csv.Name)
		g.Expect(up.Status).To(Equal(metav1.ConditionFalse))
	}, timeout, tick).Should(Succeed())
	t.Logf("%6.1fs after the approval: LINSTOR %s -> %s held in Preflight; OperatorCondition %s Upgradeable=False (%s)",
		time.Since(approved).Seconds(), from, to, csv.Name, operatorUpgradeable(g, csv.Name).Message)

	// The next release arrives in the catalog and its InstallPlan is approved: OLM holds
	// its CSV while the LINSTOR upgrade runs.
	next := publishTestRelease(g, "0.3.1")
	approve(g, waitInstallPlan(g, next.CSV.Name))
	published := time.Now()
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
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: csv.Name}, running)).To(Succeed())
		// OLM marks the running CSV Replacing as soon as its successor exists, and keeps
		// its Deployment.
		g.Expect(running.Status.Phase).To(BeElementOf(operatorsv1alpha1.CSVPhaseSucceeded, operatorsv1alpha1.CSVPhaseReplacing))
		pods, err := runningPods(ctx, dep)
		g.Expect(err).NotTo(HaveOccurred())
		for _, p := range pods {
			ctr, err := managerContainer(&p)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ctr.Image).To(Equal(op.image), "the held release's operator runs")
		}
	}, "10s", time.Second).Should(Succeed())
	t.Logf("%6.1fs after %s was approved: its CSV is still Pending (OperatorConditionNotUpgradeable), the operator of %s still runs",
		time.Since(published).Seconds(), next.CSV.Name, csv.Name)

	// The resync ends: LINSTOR upgrades, and then OLM goes on.
	resynced := time.Now()
	g.Expect(linstor.emu.SetDiskState("pvc-data", "node-1", "UpToDate")).To(Succeed())
	waitAvailable(g, to)
	t.Logf("LinstorCluster Available on LINSTOR %s: %.1fs after approving %s (%.1fs after the resync ended)",
		to, time.Since(approved).Seconds(), csv.Name, time.Since(resynced).Seconds())
	// Verification ends the upgrade once the cluster answers at the new version.
	g.Eventually(func(g Gomega) {
		cl := clusterNow(g)
		g.Expect(cl.Status.Upgrade).NotTo(BeNil())
		g.Expect(cl.Status.Upgrade.Phase).To(Equal(linstorv1.UpgradeSucceeded), cl.Status.Upgrade.Message)
		g.Expect(cl.Status.Upgrade.From).To(Equal(from))
		g.Expect(cl.Status.Deployed).To(Equal(&linstorv1.DeployedVersions{Controller: to, Satellites: to}))
	}, timeout, tick).Should(Succeed())
	t.Logf("%6.1fs after the resync ended: the upgrade Succeeded; backup %s", time.Since(resynced).Seconds(), clusterNow(g).Status.Upgrade.BackupName)
	nextCSV := waitCSVSucceeded(g, next.CSV.Name)
	t.Logf("%6.1fs after the resync ended: the held CSV %s Succeeded", time.Since(resynced).Seconds(), next.CSV.Name)
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

// A Degraded cluster whose cause has nothing to do with upgrades does not hold a
// fix-forward release: here an admin narrowed spec.nodeSelector to one of three nodes by
// mistake, and the operator holds the mass removal (RemovalHeld) instead of removing two
// satellites. It keeps Upgradeable=True, says why the cluster is degraded, and OLM
// installs the next release.
func fixForwardWhileDegraded(t *testing.T) {
	requireInstalled(t)
	g := NewWithT(t)
	version := clusterNow(g).Status.Version
	const keep = "olm-e2e.linstor.io/keep"
	setLabel(g, "node-0", keep, "yes")
	updateCluster(g, func(cl *linstorv1.LinstorCluster) { cl.Spec.NodeSelector = map[string]string{keep: "yes"} })
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
		installed.csv, operatorUpgradeable(g, installed.csv).Message)

	next := publishTestRelease(g, "0.3.2")
	ip := waitInstallPlan(g, next.CSV.Name)
	approve(g, ip)
	approved := time.Now()
	rec := startRecorder(t, approved, "approving "+next.CSV.Name)
	csv := waitCSVSucceeded(g, next.CSV.Name)
	rec.stop()
	t.Logf("%6.1fs after the approval: the fix-forward CSV %s Succeeded on the degraded cluster", time.Since(approved).Seconds(), csv.Name)
	op, dep := startRelease(t, csv)
	installed.csv, installed.deployment, installed.op = csv.Name, dep, op

	// Still held under the new operator: nothing was removed. The admin undoes the mistake.
	g.Expect(meta.FindStatusCondition(clusterNow(g).Status.Conditions, linstorv1.ConditionDegraded).Reason).To(Equal(linstorv1.ReasonRemovalHeld))
	updateCluster(g, func(cl *linstorv1.LinstorCluster) { cl.Spec.NodeSelector = nil })
	waitAvailable(g, version)
	g.Eventually(func(g Gomega) {
		g.Expect(meta.IsStatusConditionFalse(clusterNow(g).Status.Conditions, linstorv1.ConditionDegraded)).To(BeTrue())
	}, timeout, tick).Should(Succeed())
	t.Logf("%6.1fs after the approval: the selection undone, the LinstorCluster Available under %s with its 3 satellites", time.Since(approved).Seconds(), csv.Name)
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
	opts := runBundleOptions(nil)
	opts.CatalogDir = testCatalogDir(world.work, version)
	g.Expect(runbundle.Publish(ctx, opts)).To(Succeed())
	return b
}

// waitInstallPlan waits for the Subscription's InstallPlan of csv, awaiting approval.
func waitInstallPlan(g Gomega, csv string) *operatorsv1alpha1.InstallPlan {
	var found *operatorsv1alpha1.InstallPlan
	g.Eventually(func(g Gomega) {
		var plans operatorsv1alpha1.InstallPlanList
		g.Expect(world.client.List(ctx, &plans, client.InNamespace(namespace))).To(Succeed())
		found = nil
		for i, ip := range plans.Items {
			if slices.Contains(ip.Spec.ClusterServiceVersionNames, csv) {
				found = &plans.Items[i]
			}
		}
		g.Expect(found).NotTo(BeNil(), "no InstallPlan for %s", csv)
		g.Expect(found.Status.Phase).To(Equal(operatorsv1alpha1.InstallPlanPhaseRequiresApproval))
	}, timeout, tick).Should(Succeed())
	return found
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
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := world.client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return err
		}
		n.Labels[key] = value
		return world.client.Update(ctx, n)
	})).To(Succeed())
}

func updateCluster(g Gomega, mutate func(*linstorv1.LinstorCluster)) {
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cl := clusterNow(g)
		mutate(cl)
		return world.client.Update(ctx, cl)
	})).To(Succeed())
}

// The Subscription's channel decides the LINSTOR line: on stable-linstor-1.33 a release of
// the 1.34 line is never offered; switching the Subscription to stable-linstor-1.34 is how
// an admin asks for it, and OLM offers it at once, from the installed release (the line
// channel's way in). The 1.34 release is the channel probe (see channelProbe): it is left
// unapproved, so it never runs.
func channelSwitchMovesTheLine(t *testing.T) {
	requireInstalled(t)
	g := NewWithT(t)
	lineNow, lineNext := "stable-linstor-1.33", "stable-linstor-1.34"
	g.Expect(linstorVersionOf(g, installed.csv)).To(HavePrefix("1.33."))
	setChannel(g, lineNow)
	probe := publishTestRelease(g, channelProbe)
	published := time.Now()
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
	t.Logf("%.1fs after the catalog offered %s (LINSTOR %s): the Subscription on %s is %s at %s, with no InstallPlan for it",
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
