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
	waitInstallPlan(g, current.CSV.Name)
	crds := crdGenerations(g)
	phases := watchUpgradePhases(t)
	addressesBefore := len(linstorAddresses())
	approved := time.Now()
	rec := startRecorder(t, approved, "approving "+current.CSV.Name)
	defer rec.stop()
	t.Logf("approved InstallPlans %v", approveInstall(g, current.CSV.Name))
	csv := waitCSVSucceeded(g, current.CSV.Name)
	t.Logf("%6.1fs after the approval: CSV %s Succeeded; %s replaced", time.Since(approved).Seconds(), csv.Name, installed.csv)
	// The InstallPlan applied this release's CRDs, their conversion webhook now the new
	// CSV's (OLM writes its Service and CA into the CRD).
	now := crdGenerations(g)
	for name, gen := range now {
		t.Logf("CRD %s: generation %d -> %d", name, crds[name], gen)
	}
	for _, name := range conversionCRDs {
		g.Expect(now[name]).To(BeNumerically(">", crds[name]), "OLM rewrote %s (its conversion webhook's CA)", name)
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
	t.Logf("approved InstallPlans %v (test-only %s)", approveInstall(g, next.CSV.Name), next.CSV.Name)
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
			g.Expect(ctr.Image).To(Equal(op.image), "the operator of the release that holds still runs")
		}
	}, "10s", time.Second).Should(Succeed())
	t.Logf("%6.1fs after %s was approved: its CSV is still Pending (OperatorConditionNotUpgradeable), the operator of %s still runs",
		time.Since(published).Seconds(), next.CSV.Name, csv.Name)

	// The resync ends: LINSTOR upgrades, and only then does OLM go on. Until the upgrade
	// succeeded, the held CSV never leaves Pending (read before the cluster: OLM moves it
	// only after the operator saw the upgrade end).
	resynced := time.Now()
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
			availableAt = time.Since(resynced)
		}
		g.Expect(done).To(BeTrue(), "upgrade %+v", cl.Status.Upgrade)
		g.Expect(cl.Status.Upgrade.From).To(Equal(from))
		g.Expect(cl.Status.Deployed).To(Equal(&linstorv1.DeployedVersions{Controller: to, Satellites: to}))
	}, timeout, tick).Should(Succeed())
	waitAvailable(g, to)
	if availableAt == 0 {
		availableAt = time.Since(resynced)
	}
	t.Logf("LinstorCluster Available on LINSTOR %s: %.1fs after approving %s (%.1fs after the resync ended)",
		to, (availableAt + resynced.Sub(approved)).Seconds(), csv.Name, availableAt.Seconds())
	g.Expect(phases.seen()).To(ContainElements(linstorv1.UpgradePreflight, linstorv1.UpgradeBackup, linstorv1.UpgradeController,
		linstorv1.UpgradeSatellites, linstorv1.UpgradeVerify, linstorv1.UpgradeSucceeded), "%s", phases)
	t.Logf("upgrade phases seen: %v", phases.seen())
	addresses := linstorAddresses()
	g.Expect(len(addresses)).To(BeNumerically(">", addressesBefore), "the LINSTOR controller pod was replaced and served at its new address")
	t.Logf("LINSTOR served at %v", addresses)
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
	before := satelliteUIDs(g)
	g.Expect(before).To(HaveLen(3))
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
	updateCluster(g, func(cl *linstorv1.LinstorCluster) { cl.Spec.NodeSelector = nil })
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
// takes, however short (polling could miss one).
type phaseWatch struct {
	mu     sync.Mutex
	phases []linstorv1.UpgradePhase
	events []string // what else the watch said: errors, restarts
}

func (p *phaseWatch) seen() []linstorv1.UpgradePhase {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.phases)
}

func (p *phaseWatch) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("phases %v, watch events %v", p.phases, p.events)
}

func (p *phaseWatch) note(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, fmt.Sprintf(format, args...))
}

// watchUpgradePhases watches the LinstorCluster until the test ends, watching again
// should the API server end a watch.
func watchUpgradePhases(t *testing.T) *phaseWatch {
	t.Helper()
	wc, err := client.NewWithWatch(world.cluster.Config, client.Options{Scheme: world.client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	p := &phaseWatch{}
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for {
			w, err := wc.Watch(ctx, &linstorv1.LinstorClusterList{}, client.InNamespace(namespace))
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
						p.note("%s %T", ev.Type, ev.Object)
						continue
					}
					if cl.Status.Upgrade == nil {
						continue
					}
					p.mu.Lock()
					if n := len(p.phases); n == 0 || p.phases[n-1] != cl.Status.Upgrade.Phase {
						p.phases = append(p.phases, cl.Status.Upgrade.Phase)
					}
					p.mu.Unlock()
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
