package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	lapi "github.com/LINBIT/golinstor/client"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/linstorcluster"
	"github.com/linstor-operator/linstor-operator/internal/kwokcluster"
	"github.com/linstor-operator/linstor-operator/internal/sim"
	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

const upgradeTimeout = 3 * time.Minute

// freshLinstor replaces whatever LINSTOR held with a new installation: no database, no
// nodes. The kwok nodes stay.
func freshLinstor(t *testing.T) {
	g := NewWithT(t)
	var c linstorv1.LinstorCluster
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "linstor"}, &c); err == nil {
		g.Expect(env.Client.Delete(ctx, &c)).To(Succeed())
		g.Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "linstor"}, &linstorv1.LinstorCluster{})
		}, timeout, tick).ShouldNot(Succeed())
	}
	g.Eventually(func(g Gomega) {
		g.Expect(runningPodNodes(g, names.ControllerName)).To(BeEmpty())
	}, timeout, tick).Should(Succeed())
	g.Expect(dbbackup.Restore(ctx, env.Client, &dbbackup.Dump{})).To(Succeed()) // drops every table
	env.Emulator.Reset()
}

func updateLinstorCluster(g Gomega, mutate func(*linstorv1.LinstorCluster)) {
	key := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "linstor"}}
	g.Expect(envtest.Update(ctx, env.Client, key, mutate)).To(Succeed())
}

// installAt installs the samples pinned to a LINSTOR version with the Manual policy and
// places a replicated resource, so the database holds data worth keeping.
func installAt(t *testing.T, version string) {
	g := NewWithT(t)
	freshLinstor(t)
	ensureNodes(g)
	g.Expect(sim.ApplySamples(ctx, env.Client, envtest.RepoRoot(), namespace, func(u *unstructured.Unstructured) {
		if u.GetKind() == "LinstorCluster" {
			g.Expect(unstructured.SetNestedField(u.Object, version, "spec", "version")).To(Succeed())
			g.Expect(unstructured.SetNestedField(u.Object, string(linstorv1.UpgradeManual), "spec", "upgrade", "policy")).To(Succeed())
		}
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := cluster(g)
		g.Expect(conditionStatus(c.Status.Conditions, linstorv1.ConditionAvailable)).To(Equal(metav1.ConditionTrue), "%+v", c.Status.Conditions)
		g.Expect(c.Status.Version).To(Equal(version))
		g.Expect(c.Status.Satellites.Ready).To(Equal(int32(4)))
		poolsCreated(g)
	}, upgradeTimeout, tick).Should(Succeed())
	g.Expect(env.Emulator.PlaceResource("pvc-keep", "node-0", samplePool, true)).To(Succeed())
	g.Expect(env.Emulator.PlaceResource("pvc-keep", "node-1", samplePool, false)).To(Succeed())
}

// poolsCreated: every satellite reports the samples' pool with its capacity. A
// satellite is ONLINE (Ready) before its pools exist: LINSTOR accepts pools only then.
func poolsCreated(g Gomega) {
	var sats linstorv1.LinstorSatelliteList
	g.Expect(env.Client.List(ctx, &sats, client.InNamespace(namespace))).To(Succeed())
	g.Expect(sats.Items).NotTo(BeEmpty())
	for _, sat := range sats.Items {
		g.Expect(sat.Status.StoragePools).To(ContainElement(HaveField("Name", samplePool)), "satellite %s", sat.Name)
	}
}

// databaseChecksum is the checksum of the LINSTOR database as it is now.
func databaseChecksum(g Gomega) string {
	d, err := dbbackup.Take(ctx, env.Client)
	g.Expect(err).NotTo(HaveOccurred())
	data, err := d.Encode()
	g.Expect(err).NotTo(HaveOccurred())
	return dbbackup.Checksum(data)
}

// databaseDiff names the database objects that differ from backup b's.
func databaseDiff(g Gomega, b *linstorv1.LinstorBackup) string {
	want, err := dbbackup.Load(ctx, env.Client, b)
	g.Expect(err).NotTo(HaveOccurred())
	got, err := dbbackup.Take(ctx, env.Client)
	g.Expect(err).NotTo(HaveOccurred())
	key := func(o map[string]any) string {
		md, _ := o["metadata"].(map[string]any)
		return fmt.Sprintf("%v/%v", o["kind"], md["name"])
	}
	index := func(d *dbbackup.Dump) map[string]string {
		out := map[string]string{}
		for _, o := range d.Objects {
			raw, _ := json.Marshal(o)
			out[key(o)] = string(raw)
		}
		return out
	}
	w, h := index(want), index(got)
	var diff []string
	for k, v := range w {
		if h[k] == "" {
			diff = append(diff, "missing "+k)
		} else if h[k] != v {
			diff = append(diff, fmt.Sprintf("changed %s:\n  backup %s\n  now    %s", k, v, h[k]))
		}
	}
	for k, v := range h {
		if w[k] == "" {
			diff = append(diff, "added "+k+": "+v)
		}
	}
	sort.Strings(diff)
	return fmt.Sprintf("%d objects in the backup, %d now; %d differ:\n%s", len(w), len(h), len(diff), strings.Join(diff, "\n"))
}

// watchUpgrade waits until the upgrade reaches one of the final phases, calling onPhase
// once for every phase it sees.
func watchUpgrade(g Gomega, onPhase func(linstorv1.UpgradePhase), final ...linstorv1.UpgradePhase) *linstorv1.UpgradeStatus {
	// A watch sees every stored status, so no phase is missed however short it is
	// (polling could miss one that lasts less than its tick). It outlives operator
	// restarts: it is the API server's.
	wc, err := client.NewWithWatch(env.Cluster.Config, client.Options{Scheme: env.Client.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	var list linstorv1.LinstorClusterList
	w, err := wc.Watch(ctx, &list, client.InNamespace(namespace), client.MatchingFields{"metadata.name": "linstor"})
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()
	seen := map[linstorv1.UpgradePhase]bool{}
	var last *linstorv1.UpgradeStatus
	deadline := time.After(upgradeTimeout)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			g.Expect(ok).To(BeTrue(), "the watch ended")
			c, isCluster := ev.Object.(*linstorv1.LinstorCluster)
			if !isCluster || c.Status.Upgrade == nil {
				continue
			}
			last = c.Status.Upgrade
			if !seen[last.Phase] {
				seen[last.Phase] = true
				onPhase(last.Phase)
			}
			for _, f := range final {
				if last.Phase == f {
					return last
				}
			}
		case <-deadline:
			g.Expect(last).NotTo(BeNil(), "no upgrade status within %s", upgradeTimeout)
			g.Expect(final).To(ContainElement(last.Phase), last.Message)
			return last
		}
	}
}

// An upgrade waits for approval, then runs Preflight, Backup, Controller, Satellites and
// Verify. The operator is killed and restarted as each phase begins: it resumes.
func TestUpgradeWithApprovalSurvivesOperatorRestarts(t *testing.T) {
	g := NewWithT(t)
	installAt(t, "1.32.3")

	// Following the release (no pin) offers 1.33.3; the Manual policy waits.
	updateLinstorCluster(g, func(c *linstorv1.LinstorCluster) { c.Spec.Version = "" })
	g.Eventually(func(g Gomega) {
		st := cluster(g).Status.Upgrade
		g.Expect(st).NotTo(BeNil())
		g.Expect(st.Phase).To(Equal(linstorv1.UpgradeAwaitingApproval))
		g.Expect(st.Message).To(ContainSubstring("set spec.version to 1.33.3"))
	}, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(cluster(g).Status.Version).To(Equal("1.32.3"))
	}, "3s", tick).Should(Succeed())

	// A node registered as CONTROLLER has no satellite and is always OFFLINE; real LINSTOR
	// answers its type as "CONTROLLER". It must not hold the upgrade.
	lc, err := linstor.NewClient(env.LinstorURL, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(lc.Nodes.Create(ctx, lapi.Node{Name: "linstor-controller-0", Type: "Controller", NetInterfaces: []lapi.NetInterface{
		{Name: "default", Address: net.ParseIP("10.0.0.250"), SatellitePort: 3370, SatelliteEncryptionType: "PLAIN"}}})).To(Succeed())
	ctrlNode, _ := env.Emulator.Node("linstor-controller-0")
	g.Expect(ctrlNode.Type).To(Equal("CONTROLLER"))
	g.Expect(ctrlNode.ConnectionStatus).To(Equal("OFFLINE"))

	// Preflight holds the upgrade while a replica is degraded or a satellite is offline.
	g.Expect(env.Emulator.SetDiskState("pvc-keep", "node-1", "Outdated")).To(Succeed())
	taint := corev1.Taint{Key: "e2e.linstor.io/offline", Value: "yes", Effect: corev1.TaintEffectNoExecute}
	setTaints(g, "node-3", []corev1.Taint{taint}) // the real taint manager evicts its satellite pod
	updateLinstorCluster(g, func(c *linstorv1.LinstorCluster) { c.Spec.Version = "1.33.3" })
	g.Eventually(func(g Gomega) {
		st := cluster(g).Status.Upgrade
		g.Expect(st.Phase).To(Equal(linstorv1.UpgradePreflight))
		g.Expect(st.Message).To(ContainSubstring("resource pvc-keep on node-1: volume 0 is Outdated"))
		g.Expect(st.Message).To(ContainSubstring("satellite node-3 is OFFLINE"))
	}, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		c := cluster(g)
		g.Expect(c.Status.Upgrade.Phase).To(Equal(linstorv1.UpgradePreflight))
		g.Expect(c.Status.Deployed.Controller).To(Equal("1.32.3"))
	}, "3s", tick).Should(Succeed())

	start := time.Now()
	g.Expect(env.Emulator.SetDiskState("pvc-keep", "node-1", "UpToDate")).To(Succeed())
	setTaints(g, "node-3", nil)
	var phases []linstorv1.UpgradePhase
	upgradeableFalse := false
	st := watchUpgrade(g, func(p linstorv1.UpgradePhase) {
		phases = append(phases, p)
		if c := cluster(g); conditionStatus(c.Status.Conditions, linstorv1.ConditionUpgradeable) == metav1.ConditionFalse {
			upgradeableFalse = true
		}
		if p != linstorv1.UpgradeSucceeded && p != linstorv1.UpgradeAwaitingApproval {
			// Kill point: the operator stops right as the phase began, and comes back.
			g.Expect(env.StopOperator()).To(Succeed())
			g.Expect(env.StartOperator()).To(Succeed())
		}
	}, linstorv1.UpgradeSucceeded)
	t.Logf("1.32.3 -> 1.33.3 in %.1fs after preflight cleared, with %d operator restarts; phases %v", time.Since(start).Seconds(), len(phases)-1, phases)
	g.Expect(phases).To(ContainElements(linstorv1.UpgradePreflight, linstorv1.UpgradeBackup, linstorv1.UpgradeController,
		linstorv1.UpgradeSatellites, linstorv1.UpgradeVerify, linstorv1.UpgradeSucceeded))
	g.Expect(upgradeableFalse).To(BeTrue(), "the cluster stayed Upgradeable during its upgrade")

	g.Eventually(func(g Gomega) {
		c := cluster(g)
		g.Expect(c.Status.Version).To(Equal("1.33.3"))
		g.Expect(c.Status.Deployed).To(Equal(&linstorv1.DeployedVersions{Controller: "1.33.3", Satellites: "1.33.3"}))
		g.Expect(c.Status.Satellites.Ready).To(Equal(int32(4)))
		g.Expect(conditionStatus(c.Status.Conditions, linstorv1.ConditionUpgradeable)).To(Equal(metav1.ConditionTrue))
	}, timeout, tick).Should(Succeed())
	// The backup holds the 1.32.3 database exactly as it was.
	var b linstorv1.LinstorBackup
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: st.BackupName}, &b)).To(Succeed())
	g.Expect(b.Status.LinstorVersion).To(Equal("1.32.3"))
	g.Expect(b.Status.Checksum).NotTo(BeEmpty())
	_, err = dbbackup.Load(ctx, env.Client, &b)
	g.Expect(err).NotTo(HaveOccurred())
	// The data survived the migration.
	_, ok := env.Emulator.Node("node-0")
	g.Expect(ok).To(BeTrue())
	g.Expect(env.Emulator.ResourcePlaced("pvc-keep", "node-1")).To(BeTrue())

	// Downgrades are refused, and nothing changes.
	updateLinstorCluster(g, func(c *linstorv1.LinstorCluster) { c.Spec.Version = "1.32.3" })
	g.Eventually(func(g Gomega) {
		c := cluster(g)
		g.Expect(c.Status.Upgrade.Phase).To(Equal(linstorv1.UpgradeRefused))
		g.Expect(c.Status.Upgrade.Message).To(ContainSubstring("LINSTOR cannot downgrade"))
		d := conditionOf(c, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonUpgradeRefused))
	}, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		c := cluster(g)
		g.Expect(c.Status.Version).To(Equal("1.33.3"))
		g.Expect(c.Status.Deployed.Controller).To(Equal("1.33.3"))
	}, "3s", tick).Should(Succeed())
}

// A failed migration rolls back: the database is restored exactly from the backup and
// the old version runs again; a retry succeeds.
func TestFailedMigrationRollsBackToTheBackup(t *testing.T) {
	g := NewWithT(t)
	installAt(t, "1.31.3")
	before, err := envtest.ReadLinstorDatabase(ctx, env.Client)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(before.StoredVersion()).To(Equal(int64(28)))
	env.Emulator.FailNextMigration()
	updateLinstorCluster(g, func(c *linstorv1.LinstorCluster) { c.Spec.Version = "1.33.3" })
	var phases []linstorv1.UpgradePhase
	st := watchUpgrade(g, func(p linstorv1.UpgradePhase) {
		phases = append(phases, p)
		if p == linstorv1.UpgradeRollingBack { // kill point inside the rollback
			g.Expect(env.StopOperator()).To(Succeed())
			g.Expect(env.StartOperator()).To(Succeed())
		}
	}, linstorv1.UpgradeRolledBack)
	t.Logf("rollback phases %v", phases)
	g.Expect(phases).To(ContainElements(linstorv1.UpgradeController, linstorv1.UpgradeRollingBack, linstorv1.UpgradeRolledBack))
	g.Expect(st.Message).To(ContainSubstring("restored from " + st.BackupName))
	g.Expect(st.Message).To(ContainSubstring("Cause: the controller did not come up at 1.33.3"))

	var b linstorv1.LinstorBackup
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: st.BackupName}, &b)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := cluster(g)
		g.Expect(c.Status.Version).To(Equal("1.31.3"))
		g.Expect(c.Status.Satellites.Ready).To(Equal(int32(4)))
		g.Expect(conditionOf(c, linstorv1.ConditionDegraded).Reason).To(Equal(linstorv1.ReasonUpgradeFailed))
	}, upgradeTimeout, tick).Should(Succeed())
	// Restored byte for byte: the database as the old controller wrote it back equals the backup.
	g.Expect(env.StopOperator()).To(Succeed()) // nothing may write while comparing
	g.Eventually(func(g Gomega) {
		g.Expect(databaseChecksum(g)).To(Equal(b.Status.Checksum), func() string { return databaseDiff(g, &b) })
	}, timeout, tick).Should(Succeed())
	g.Expect(env.StartOperator()).To(Succeed())
	// LINSTOR holds the replica placed before the upgrade (the emulated controller may be
	// loading the restored database again when the operator comes back).
	g.Eventually(func() bool { return env.Emulator.ResourcePlaced("pvc-keep", "node-1") }, timeout, tick).Should(BeTrue())

	// Not retried on its own; retried when asked.
	g.Consistently(func(g Gomega) {
		g.Expect(cluster(g).Status.Upgrade.Phase).To(Equal(linstorv1.UpgradeRolledBack))
	}, "3s", tick).Should(Succeed())

	// The retry migrates the database (28 gives every table schema v1-31-1 as its storage
	// version and rewrites the DRBD resources' rows, 29 and 30 add and move properties),
	// then the controller fails: the rollback undoes the migrations too, the CRDs' versions
	// included (the checksum covers them).
	env.Emulator.FailNextStartAfterMigration()
	updateLinstorCluster(g, func(c *linstorv1.LinstorCluster) {
		c.Annotations = map[string]string{linstorcluster.AnnotationRetryUpgrade: "1.33.3"}
	})
	g.Eventually(func(g Gomega) {
		g.Expect(cluster(g).Status.Upgrade.BackupName).NotTo(Equal(st.BackupName))
	}, upgradeTimeout, tick).Should(Succeed())
	st = watchUpgrade(g, func(linstorv1.UpgradePhase) {}, linstorv1.UpgradeRolledBack)
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: st.BackupName}, &b)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := cluster(g)
		g.Expect(c.Status.Version).To(Equal("1.31.3"))
		g.Expect(c.Status.Satellites.Ready).To(Equal(int32(4)))
	}, upgradeTimeout, tick).Should(Succeed())
	g.Expect(env.StopOperator()).To(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(databaseChecksum(g)).To(Equal(b.Status.Checksum)) }, timeout, tick).Should(Succeed())
	g.Expect(env.StartOperator()).To(Succeed())
	// The retry used up the annotation: no new attempt starts on its own.
	g.Expect(cluster(g).Annotations).NotTo(HaveKey(linstorcluster.AnnotationRetryUpgrade))
	g.Consistently(func(g Gomega) {
		g.Expect(cluster(g).Status.Upgrade.Phase).To(Equal(linstorv1.UpgradeRolledBack))
	}, "3s", tick).Should(Succeed())

	updateLinstorCluster(g, func(c *linstorv1.LinstorCluster) {
		c.Annotations = map[string]string{linstorcluster.AnnotationRetryUpgrade: "1.33.3"}
	})
	watchUpgrade(g, func(linstorv1.UpgradePhase) {}, linstorv1.UpgradeSucceeded)
	g.Eventually(func(g Gomega) { g.Expect(cluster(g).Status.Version).To(Equal("1.33.3")) }, timeout, tick).Should(Succeed())
	// One hop from 1.31.3 ran 28, 29 and 30: the database is what they make of the one
	// the cluster had before the first attempt (the rollbacks restored it each time).
	after, err := envtest.ReadLinstorDatabase(ctx, env.Client)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after.StoredVersion()).To(Equal(int64(31)))
	g.Expect(envtest.MigrationProblems(before, after)).To(BeEmpty())
}

func conditionOf(c *linstorv1.LinstorCluster, typ string) metav1.Condition {
	for _, cond := range c.Status.Conditions {
		if cond.Type == typ {
			return cond
		}
	}
	return metav1.Condition{}
}

func setTaints(g Gomega, node string, taints []corev1.Taint) {
	g.Expect(envtest.Update(ctx, env.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, func(n *corev1.Node) { n.Spec.Taints = taints })).To(Succeed())
}

// The operator upgrade OLM performs: the previous operator release (0.2.0, LINSTOR 1.33.2)
// runs the cluster; it is replaced by this release, which upgrades LINSTOR on its own
// (Automatic policy) to the version it pins.
func TestNewOperatorReleaseUpgradesLinstor(t *testing.T) {
	g := NewWithT(t)
	// Release 0.2.0's table (commit 2addb3d, bundles/0.2.0): LINSTOR 1.33.2 only.
	previous := &upgrade.Release{Target: upgrade.MustParse("1.33.2"), Runnable: []upgrade.Version{upgrade.MustParse("1.33.2")}, Oldest: upgrade.MustParse("1.29.0")}
	freshLinstor(t)
	ensureNodes(g)
	g.Expect(env.StopOperator()).To(Succeed())
	g.Expect(env.StartOperatorRelease(previous)).To(Succeed())
	g.Expect(sim.ApplySamples(ctx, env.Client, envtest.RepoRoot(), namespace)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := cluster(g)
		g.Expect(c.Status.Version).To(Equal("1.33.2"))
		g.Expect(c.Status.Satellites.Ready).To(Equal(int32(4)))
		poolsCreated(g)
	}, upgradeTimeout, tick).Should(Succeed())
	g.Expect(env.Emulator.PlaceResource("pvc-old", "node-2", samplePool, true)).To(Succeed())

	start := time.Now()
	g.Expect(env.StopOperator()).To(Succeed()) // OLM replaces the operator Deployment
	g.Expect(env.StartOperator()).To(Succeed())
	st := watchUpgrade(g, func(linstorv1.UpgradePhase) {}, linstorv1.UpgradeSucceeded)
	g.Expect(st.From).To(Equal("1.33.2"))
	g.Eventually(func(g Gomega) {
		c := cluster(g)
		g.Expect(c.Status.Version).To(Equal("1.33.3"))
		g.Expect(c.Status.Satellites.Ready).To(Equal(int32(4)))
		g.Expect(conditionStatus(c.Status.Conditions, linstorv1.ConditionAvailable)).To(Equal(metav1.ConditionTrue))
	}, upgradeTimeout, tick).Should(Succeed())
	t.Logf("operator 0.2.0 -> 0.3.0: LINSTOR 1.33.2 -> 1.33.3 Available again %.1fs after the new operator started", time.Since(start).Seconds())
	g.Expect(env.Emulator.ResourcePlaced("pvc-old", "node-2")).To(BeTrue())
}

// ensureNodes makes node-0 … node-3 exist: the ones the lifecycle scenario left, or new.
func ensureNodes(g Gomega) {
	for i := 0; i < 4; i++ {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: fmt.Sprintf("node-%d", i)}, &corev1.Node{}); apierrors.IsNotFound(err) {
			g.Expect(kwokcluster.AddNodes(ctx, env.Client, "node", i, i+1)).To(Succeed())
		}
	}
}

// A user's backup and restore round-trip LINSTOR's state: what changed after the backup
// is undone, what existed comes back.
func TestUserBackupAndRestoreRoundTrip(t *testing.T) {
	g := NewWithT(t)
	installAt(t, "1.33.3")
	b := &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: "snap", Namespace: namespace},
		Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: "linstor"}}}
	g.Expect(env.Client.Create(ctx, b)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
		g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupCompleted), b.Status.Message)
	}, upgradeTimeout, tick).Should(Succeed())
	t.Logf("backup: %s", b.Status.Message)
	g.Eventually(func(g Gomega) {
		g.Expect(cluster(g).Status.Satellites.Ready).To(Equal(int32(4)))
		g.Expect(conditionStatus(cluster(g).Status.Conditions, linstorv1.ConditionAvailable)).To(Equal(metav1.ConditionTrue))
	}, upgradeTimeout, tick).Should(Succeed())

	// After the backup: pvc-keep loses its replica on node-1, pvc-new is created.
	lc, err := linstor.NewClient(env.LinstorURL, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(lc.Resources.Delete(ctx, "pvc-keep", "node-1")).To(Succeed())
	g.Expect(env.Emulator.ResourcePlaced("pvc-keep", "node-1")).To(BeFalse())
	g.Expect(env.Emulator.PlaceResource("pvc-new", "node-2", samplePool, false)).To(Succeed())
	time.Sleep(2 * time.Second) // the controller writes its database

	// Naming the backup does not replace a live database on its own: the restore waits
	// for a confirmation naming this very LinstorCluster, and LINSTOR keeps running.
	updateLinstorCluster(g, func(c *linstorv1.LinstorCluster) { c.Spec.Database = &linstorv1.DatabaseSpec{RestoreFrom: "snap"} })
	confirm := ""
	g.Eventually(func(g Gomega) {
		c := cluster(g)
		g.Expect(c.Status.Restore).NotTo(BeNil())
		g.Expect(c.Status.Restore.Phase).To(Equal(lifecycle.RestoreAwaitingConfirmation), c.Status.Restore.Message)
		confirm = "snap/" + string(c.UID)
		g.Expect(c.Status.Restore.Message).To(ContainSubstring(names.AnnotationConfirmRestore + "=" + confirm))
		g.Expect(conditionOf(c, linstorv1.ConditionDegraded).Reason).To(Equal(linstorv1.ReasonRestoreNeedsConfirmation))
	}, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(env.Emulator.ResourcePlaced("pvc-new", "node-2")).To(BeTrue())
		g.Expect(runningPodNodes(g, names.ControllerName)).NotTo(BeEmpty())
	}, "3s", tick).Should(Succeed())

	start := time.Now()
	updateLinstorCluster(g, func(c *linstorv1.LinstorCluster) {
		c.Annotations = map[string]string{names.AnnotationConfirmRestore: confirm}
	})
	g.Eventually(func(g Gomega) {
		c := cluster(g)
		g.Expect(c.Status.Restore).NotTo(BeNil())
		g.Expect(c.Status.Restore.Phase).To(Equal(lifecycle.RestoreRestored), c.Status.Restore.Message)
		g.Expect(c.Status.Version).To(Equal("1.33.3"))
		g.Expect(c.Status.Satellites.Ready).To(Equal(int32(4)))
		g.Expect(env.Emulator.ResourcePlaced("pvc-keep", "node-1")).To(BeTrue(), "the backed-up resource is not back")
		g.Expect(env.Emulator.ResourcePlaced("pvc-new", "node-2")).To(BeFalse(), "a resource created after the backup survived the restore")
	}, upgradeTimeout, tick).Should(Succeed())
	t.Logf("restore: LINSTOR answering on the restored database %.1fs after the restore was confirmed", time.Since(start).Seconds())
	g.Expect(cluster(g).Annotations).NotTo(HaveKey(names.AnnotationConfirmRestore), "the confirmation is used up")

	// Restored once only: a change made now survives while the field still names the backup.
	g.Expect(env.Emulator.PlaceResource("pvc-after", "node-2", samplePool, false)).To(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(cluster(g).Status.Restore.Phase).To(Equal(lifecycle.RestoreRestored))
		g.Expect(env.Emulator.ResourcePlaced("pvc-after", "node-2")).To(BeTrue())
	}, "3s", tick).Should(Succeed())

	// GitOps prune and re-apply: the recreated LinstorCluster still names the backup, and
	// even carries the old confirmation; it must not replace the live database.
	old := cluster(g)
	g.Expect(env.Client.Delete(ctx, old)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(old), &linstorv1.LinstorCluster{}))
	}, timeout, tick).Should(BeTrue())
	again := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: old.Name, Namespace: old.Namespace, Labels: old.Labels,
		Annotations: map[string]string{names.AnnotationConfirmRestore: confirm}}, Spec: old.Spec}
	g.Expect(env.Client.Create(ctx, again)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := cluster(g)
		g.Expect(c.Status.Restore).NotTo(BeNil())
		g.Expect(c.Status.Restore.Phase).To(Equal(lifecycle.RestoreAwaitingConfirmation), c.Status.Restore.Message)
		g.Expect(c.Status.Restore.ClusterUID).To(Equal(string(c.UID)))
	}, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(env.Emulator.ResourcePlaced("pvc-after", "node-2")).To(BeTrue(), "a recreated LinstorCluster restored an old backup over live data")
	}, "3s", tick).Should(Succeed())

	// Clearing the field clears the record, so the backup can be named again.
	updateLinstorCluster(g, func(c *linstorv1.LinstorCluster) { c.Spec.Database.RestoreFrom = "" })
	g.Eventually(func(g Gomega) { g.Expect(cluster(g).Status.Restore).To(BeNil()) }, timeout, tick).Should(Succeed())
}

// The rehearsal runs the new LINSTOR's migrations on a copy first. A database the
// migration chokes on (a DRBD resource row whose layer id has no LayerResourceIds row:
// Migration_28 throws "LayerResourceId N not found!") fails the rehearsal: the upgrade
// ends before anything changed, LINSTOR 1.31.3 runs again on its untouched database, and
// the status quotes LINSTOR's exception. A healthy database passes the rehearsal and
// upgrades.
func TestRehearsalFailureLeavesTheDatabaseUntouched(t *testing.T) {
	g := NewWithT(t)
	installAt(t, "1.31.3")
	g.Expect(env.Emulator.SeedRow("layerdrbdresources", map[string]any{
		"layer_resource_id": int64(4242), "peer_slots": int64(7), "al_stripes": int64(1), "al_stripe_size": int64(32),
		"flags": int64(0), "node_id": int64(0),
	})).To(Succeed())
	before, err := envtest.ReadLinstorDatabase(ctx, env.Client)
	g.Expect(err).NotTo(HaveOccurred())
	updateLinstorCluster(g, func(c *linstorv1.LinstorCluster) { c.Spec.Version = "1.33.3" })
	var phases []linstorv1.UpgradePhase
	started := time.Now()
	st := watchUpgrade(g, func(p linstorv1.UpgradePhase) { phases = append(phases, p) }, linstorv1.UpgradeRolledBack, linstorv1.UpgradeSucceeded)
	t.Logf("%.1fs: phases %v; %s", time.Since(started).Seconds(), phases, st.Message)
	g.Expect(st.Phase).To(Equal(linstorv1.UpgradeRolledBack))
	g.Expect(phases).To(ContainElement(linstorv1.UpgradeRehearsal))
	g.Expect(phases).NotTo(ContainElement(linstorv1.UpgradeController), "the real migration never started")
	g.Expect(st.Message).To(ContainSubstring("LayerResourceId 4242 not found!"))
	g.Expect(st.Message).To(ContainSubstring("nothing was changed"))
	g.Eventually(func(g Gomega) {
		c := cluster(g)
		g.Expect(c.Status.Version).To(Equal("1.31.3"))
		g.Expect(conditionStatus(c.Status.Conditions, linstorv1.ConditionAvailable)).To(Equal(metav1.ConditionTrue))
	}, upgradeTimeout, tick).Should(Succeed())
	after, err := envtest.ReadLinstorDatabase(ctx, env.Client)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after.Diff(before)).To(BeEmpty(), "the live database was never migrated")
	g.Expect(after.StoredVersion()).To(Equal(int64(28)))
	// The failed Job is kept for its logs; its pod says what LINSTOR said.
	var pods corev1.PodList
	g.Expect(env.Client.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{names.LabelComponent: names.RehearsalComponent})).To(Succeed())
	g.Expect(pods.Items).NotTo(BeEmpty())
}
