package olm

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/bundle"
	"github.com/linstor-operator/linstor-operator/internal/runbundle"
	"github.com/linstor-operator/linstor-operator/pkg/names"
	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
	testenv "github.com/linstor-operator/linstor-operator/test/envtest"
)

// The LINSTOR lines a cluster walks through OLM: 1.31 (release 0.1.0) → 1.32 (0.1.1, by
// switching the Subscription to stable-linstor-1.32, with a rollback on the way) → 1.33.3
// (this tree's release, by switching to stable: the next step). After each hop LINSTOR's
// database is what the server's migrations make of it, read and judged by the test
// (test/envtest MigrationProblems), not by the emulator's code.

// migratedTables are the tables LINSTOR's migrations 28, 29 and 30 read or write.
var migratedTables = []string{
	"layerdrbdresourcedefinitions", "layerresourceids", "layerdrbdresources", "resourceconnections",
	"resourcedefinitions", "volumedefinitions", "propscontainers",
}

// seedOldLineData gives the database rows in every table a migration touches, the way a
// cluster on the old line has them: replicated volumes made through LINSTOR (their DRBD
// layer data, volume definitions and the DrbdPrimarySetOn the initial sync set), a
// resource connection with a DRBD Proxy port and a snapshot's DRBD layer data (which the
// emulator does not make, written into the database as the user's LINSTOR had them).
func seedOldLineData(g Gomega) {
	for _, n := range []string{"node-0", "node-1"} {
		g.Expect(linstor.emu.PlaceResource("pvc-old", n, samplePool, n == "node-0")).To(Succeed())
		g.Expect(linstor.emu.PlaceResource("pvc-older", n, samplePool, false)).To(Succeed())
	}
	g.Expect(linstor.emu.SeedRow("resourceconnections", map[string]any{
		"uuid": "6b1e2a2c-0f4e-4a55-9b1d-3c2f9d7f0a11", "node_name_src": "NODE-0", "node_name_dst": "NODE-1",
		"resource_name": "PVC-OLD", "snapshot_name": "", "flags": int64(0), "tcp_port": int64(7870),
	})).To(Succeed())
	g.Expect(linstor.emu.SeedRow("layerresourceids", map[string]any{
		"layer_resource_id": int64(9000), "node_name": "NODE-0", "resource_name": "PVC-OLD", "snapshot_name": "SNAP-1",
		"layer_resource_kind": "DRBD", "layer_resource_parent_id": nil, "layer_resource_suffix": "", "layer_resource_suspended": false,
	})).To(Succeed())
	g.Expect(linstor.emu.SeedRow("layerdrbdresources", map[string]any{
		"layer_resource_id": int64(9000), "peer_slots": int64(7), "al_stripes": int64(1), "al_stripe_size": int64(32),
		"flags": int64(0), "node_id": int64(0),
	})).To(Succeed())
}

// readLinstorDatabase reads LINSTOR's database once no write is under way: two reads a
// moment apart that agree.
func readLinstorDatabase(g Gomega) *testenv.LinstorDatabase {
	var db *testenv.LinstorDatabase
	g.Eventually(func(g Gomega) {
		first, err := testenv.ReadLinstorDatabase(ctx, world.client)
		g.Expect(err).NotTo(HaveOccurred())
		time.Sleep(500 * time.Millisecond)
		second, err := testenv.ReadLinstorDatabase(ctx, world.client)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(second.Diff(first)).To(BeEmpty(), "LINSTOR's database still changes")
		db = second
	}, timeout, tick).Should(Succeed())
	return db
}

// expectRowsInMigratedTables: the database has something for each migration to act on.
func expectRowsInMigratedTables(g Gomega, db *testenv.LinstorDatabase) {
	for _, table := range migratedTables {
		g.Expect(db.Tables).To(HaveKey(table))
		g.Expect(db.Tables[table].Rows).NotTo(BeEmpty(), "table %s has no rows", table)
	}
	g.Expect(db.Select("propscontainers", map[string]any{"prop_key": "DrbdPrimarySetOn"})).NotTo(BeEmpty(),
		"LINSTOR before 1.33.2 marks the initial sync's source with DrbdPrimarySetOn")
}

// releaseOfLine is the frozen release that runs LINSTOR line (e.g. "1.32").
func releaseOfLine(g Gomega, line string) *runbundle.Bundle {
	dirs, err := filepath.Glob(filepath.Join(world.root, "bundles", "*"))
	g.Expect(err).NotTo(HaveOccurred())
	for _, dir := range dirs {
		b, err := runbundle.ReadBundle(dir)
		g.Expect(err).NotTo(HaveOccurred())
		if strings.HasPrefix(b.CSV.Annotations[bundle.LinstorVersionAnnotation], line+".") {
			return b
		}
	}
	g.Expect(fmt.Errorf("no frozen release runs LINSTOR %s", line)).NotTo(HaveOccurred())
	return nil
}

// Switching the Subscription to the next line's channel brings that line's release
// (0.1.1); its operator upgrades LINSTOR 1.31.3 → 1.32.3, and the new controller fails
// to start after its migration (28) changed the schema. The operator rolls back: the
// database is again exactly what it was before the hop (every CRD's versions, every row,
// the stored version). Retried, the upgrade succeeds, and the database is what migration
// 28 makes of the one before the hop.
func nextLineWithARollback(t *testing.T) {
	requireInstalled(t)
	g := newG(t)
	next := releaseOfLine(g, "1.32")
	from := linstorVersionOf(g, installed.csv)
	to := next.CSV.Annotations[bundle.LinstorVersionAnnotation]
	g.Expect(from).To(HavePrefix("1.31."))

	before := readLinstorDatabase(g)
	expectRowsInMigratedTables(g, before)
	g.Expect(before.StoredVersion()).To(Equal(int64(28)), "LINSTOR 1.31 stamps its last migration (27) + 1")
	t.Logf("the database before the hop: stored version %d, %d tables, layerdrbdresources stored as %s",
		before.StoredVersion(), len(before.Tables), before.Tables["layerdrbdresources"].Storage)

	// A controller that does not come up is rolled back after the phase timeout: the
	// default 10 minutes is shortened, as an admin would for a small database.
	g.Expect(testenv.Update(ctx, world.client, clusterNow(g), func(cl *linstorv1.LinstorCluster) {
		if cl.Spec.Upgrade == nil {
			cl.Spec.Upgrade = &linstorv1.UpgradeSpec{}
		}
		cl.Spec.Upgrade.PhaseTimeout = &metav1.Duration{Duration: 30 * time.Second}
	})).To(Succeed())
	linstor.emu.FailNextStartAfterMigration()
	phases := watchUpgradePhases(t)
	setChannel(g, bundle.LineChannel(upgrade.MustParse(to)))
	switched := time.Now()
	t.Logf("approved InstallPlans %v", approveInstall(g, next.CSV.Name))
	csv := waitCSVSucceeded(g, next.CSV.Name)
	op, dep := startRelease(t, csv)
	installed.csv, installed.deployment, installed.op = csv.Name, dep, op
	t.Logf("%6.1fs after switching to %s: the operator of %s runs", time.Since(switched).Seconds(), bundle.LineChannel(upgrade.MustParse(to)), csv.Name)

	g.Eventually(func(g Gomega) {
		cl := clusterNow(g)
		g.Expect(cl.Status.Upgrade).NotTo(BeNil())
		g.Expect(cl.Status.Upgrade.Phase).To(Equal(linstorv1.UpgradeRolledBack), "%+v", cl.Status.Upgrade)
		g.Expect(cl.Status.Version).To(Equal(from))
	}, timeout, tick).Should(Succeed())
	rolledBack := readLinstorDatabase(g)
	g.Expect(rolledBack.Diff(before)).To(BeEmpty(), "the rollback restores the database of before the hop exactly")
	t.Logf("%6.1fs after switching: rolled back to %s (phases %s); the database equals the one before the hop: %d tables, their CRD versions and rows, stored version %d",
		time.Since(switched).Seconds(), from, phases, len(rolledBack.Tables), rolledBack.StoredVersion())

	retried := time.Now()
	cl := clusterNow(g)
	g.Expect(testenv.Update(ctx, world.client, cl, func(cl *linstorv1.LinstorCluster) {
		if cl.Annotations == nil {
			cl.Annotations = map[string]string{}
		}
		cl.Annotations[names.AnnotationRetryUpgrade] = to
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		cl := clusterNow(g)
		g.Expect(cl.Status.Upgrade).NotTo(BeNil())
		g.Expect(cl.Status.Upgrade.Phase).To(Equal(linstorv1.UpgradeSucceeded), "%+v", cl.Status.Upgrade)
		g.Expect(meta.IsStatusConditionTrue(cl.Status.Conditions, linstorv1.ConditionAvailable)).To(BeTrue())
	}, timeout, tick).Should(Succeed())
	waitAvailable(g, to)
	after := readLinstorDatabase(g)
	g.Expect(after.StoredVersion()).To(Equal(int64(29)), "1.32 ran migration 28 only")
	g.Expect(testenv.MigrationProblems(before, after)).To(BeEmpty())
	t.Logf("%6.1fs after the retry: LINSTOR %s Available; the database is migration 28's result: stored version %d, layerdrbdresources stored as %s, every DRBD resource's tcp_port_list and the resource connection's src/dst ports as the server's migration writes them",
		time.Since(retried).Seconds(), to, after.StoredVersion(), after.Tables["layerdrbdresources"].Storage)

	// On to the newest line: stable offers this tree's release, which skips every older one.
	setChannel(g, bundle.StableChannel)
}
