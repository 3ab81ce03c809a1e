package controllers

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
)

// freshDatabase creates three LINSTOR tables with rows and waits until every row exists.
func freshDatabase(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{
		linstorTable("nodes", "Nodes"), linstorTable("resourcedefinitions", "ResourceDefinitions"), linstorTable("propscontainers", "PropsContainers"),
	} {
		g.Expect(env.Client.Create(ctx, crd)).To(Succeed())
	}
	t.Cleanup(func() { dropTables(ctx) })
	for i, name := range []string{"node-a", "node-b"} {
		g.Eventually(func() error {
			return env.Client.Create(ctx, row("Nodes", name, map[string]any{"node_name": name, "node_type": 2, "node_flags": i}))
		}, timeout, tick).Should(Succeed())
	}
	g.Eventually(func() error {
		return env.Client.Create(ctx, row("ResourceDefinitions", "pvc-1", map[string]any{"resource_name": "PVC-1"}))
	}, timeout, tick).Should(Succeed())
	for i := 0; i < 20; i++ {
		g.Eventually(func() error {
			return env.Client.Create(ctx, row("PropsContainers", fmt.Sprintf("prop-%02d", i), map[string]any{"key": fmt.Sprintf("Aux/k%d", i), "value": "v"}))
		}, timeout, tick).Should(Succeed())
	}
}

// storeBackup writes the database into chunk Secrets of a Completed LinstorBackup, as the
// backup controller does. The LinstorBackup lives only in memory: the restore reads its
// status and Secrets, and no backup controller should act on it.
func storeBackup(t *testing.T, ns, name string) *linstorv1.LinstorBackup {
	t.Helper()
	var buf bytes.Buffer
	counts, err := dbbackup.Write(context.Background(), env.Client, &buf)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return storeChunks(t, ns, name, buf.Bytes(), counts)
}

// storeBackupWithout is storeBackup of the database without one table.
func storeBackupWithout(t *testing.T, ns, name, plural string) *linstorv1.LinstorBackup {
	t.Helper()
	g := NewWithT(t)
	d, err := dbbackup.Take(context.Background(), env.Client)
	g.Expect(err).NotTo(HaveOccurred())
	out := &dbbackup.Dump{}
	kind := ""
	for _, crd := range d.CRDs {
		if crd.Spec.Names.Plural == plural {
			kind = crd.Spec.Names.Kind
			continue
		}
		out.CRDs = append(out.CRDs, crd)
	}
	g.Expect(kind).NotTo(BeEmpty())
	for _, o := range d.Objects {
		if o["kind"] != kind {
			out.Objects = append(out.Objects, o)
		}
	}
	data, err := out.Encode()
	g.Expect(err).NotTo(HaveOccurred())
	return storeChunks(t, ns, name, data, dbbackup.Counts{CRDs: len(out.CRDs), Objects: len(out.Objects)})
}

func storeChunks(t *testing.T, ns, name string, data []byte, counts dbbackup.Counts) *linstorv1.LinstorBackup {
	t.Helper()
	g := NewWithT(t)
	b := &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	b.Status.Phase = linstorv1.BackupCompleted
	b.Status.Checksum = dbbackup.Checksum(data)
	b.Status.CRDs, b.Status.Objects = int32(counts.CRDs), int32(counts.Objects)
	for i, chunk := range dbbackup.Split(data, 256) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dbbackup.ChunkName(b, i),
			Labels: map[string]string{names.LabelBackup: name}}, Data: map[string][]byte{dbbackup.ChunkKey: chunk}}
		g.Expect(env.Client.Create(context.Background(), s)).To(Succeed())
		b.Status.Secrets = append(b.Status.Secrets, s.Name)
	}
	g.Expect(len(b.Status.Secrets)).To(BeNumerically(">", 2), "the backup spans several chunks")
	return b
}

// linstorCRDs are the names of the CRDs of LINSTOR's group that exist now.
func linstorCRDs(g Gomega) []string {
	var list apiextensionsv1.CustomResourceDefinitionList
	g.Expect(env.Client.List(context.Background(), &list)).To(Succeed())
	var out []string
	for _, crd := range list.Items {
		if crd.Spec.Group == dbbackup.Group {
			out = append(out, crd.Name)
		}
	}
	return out
}

// encoded is the live database encoded as a backup.
func encoded(g Gomega) []byte {
	d, err := dbbackup.Take(context.Background(), env.Client)
	g.Expect(err).NotTo(HaveOccurred())
	data, err := d.Encode()
	g.Expect(err).NotTo(HaveOccurred())
	return data
}

// Disaster recovery: the backup is restored into an API server where no LINSTOR CRD
// exists at all (a new cluster, before LINSTOR ever started).
func TestRestoreIntoAnEmptyClusterCreatesTheTables(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	freshDatabase(t)
	want := encoded(g)
	b := storeBackup(t, ns, "fresh")

	dropTables(ctx)
	g.Expect(linstorCRDs(g)).To(BeEmpty())

	res, err := dbbackup.Check(ctx, env.Client, b)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Create).To(Equal([]string{"nodes." + dbbackup.Group, "propscontainers." + dbbackup.Group, "resourcedefinitions." + dbbackup.Group}))
	g.Expect(res.Update).To(BeEmpty())
	g.Expect(res.Delete).To(BeEmpty())
	g.Expect(res.Objects).To(Equal(23))
	g.Expect(linstorCRDs(g)).To(BeEmpty(), "Check writes nothing")

	res, err = dbbackup.RestoreBackup(ctx, env.Client, b)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Objects).To(Equal(23))
	g.Expect(linstorCRDs(g)).To(HaveLen(3))
	g.Expect(dbbackup.VerifyRestored(ctx, env.Client, b.Status.Checksum)).To(Succeed())
	restored, err := dbbackup.Take(ctx, env.Client)
	g.Expect(err).NotTo(HaveOccurred())
	crds, objects := restored.Counts()
	g.Expect([]int{crds, objects}).To(Equal([]int{int(b.Status.CRDs), int(b.Status.Objects)}))
	g.Expect([]int{crds, objects}).To(Equal([]int{3, 23}))
	g.Expect(encoded(g)).To(Equal(want), "tables and rows byte for byte as before")
	// The tables are what LINSTOR created: cluster-scoped, its names and versions.
	nodes := &apiextensionsv1.CustomResourceDefinition{}
	g.Expect(env.Client.Get(ctx, ptrKey("nodes."+dbbackup.Group), nodes)).To(Succeed())
	g.Expect(nodes.Spec.Scope).To(Equal(apiextensionsv1.ClusterScoped))
	g.Expect(nodes.Spec.Names.Kind).To(Equal("Nodes"))
	g.Expect(nodes.Status.StoredVersions).To(Equal([]string{"v1-27-1"}))

	// A change after the restore is seen by VerifyRestored, both checksums named.
	changed := row("Nodes", "node-a", nil)
	g.Expect(env.Client.Get(ctx, ptrKey("node-a"), changed)).To(Succeed())
	changed.Object["spec"].(map[string]any)["node_flags"] = int64(7)
	g.Expect(env.Client.Update(ctx, changed)).To(Succeed())
	err = dbbackup.VerifyRestored(ctx, env.Client, b.Status.Checksum)
	g.Expect(err).To(MatchError(dbbackup.ErrRestoredDiffers))
	g.Expect(err).To(MatchError(ContainSubstring(b.Status.Checksum)))
	g.Expect(err).To(MatchError(ContainSubstring(dbbackup.Checksum(encoded(g)))))
}

// A migration after the backup dropped a table (BaseK8sCrdMigration deletes the CRDs of
// dropped tables): the restore creates it again, and replaces the others.
func TestRestoreRecreatesADroppedTable(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	freshDatabase(t)
	want := encoded(g)
	b := storeBackup(t, ns, "dropped")

	g.Eventually(func() error {
		return env.Client.Create(ctx, row("Nodes", "node-new", map[string]any{"node_name": "node-new"}))
	}, timeout, tick).Should(Succeed())
	rd := &apiextensionsv1.CustomResourceDefinition{}
	g.Expect(env.Client.Get(ctx, ptrKey("resourcedefinitions."+dbbackup.Group), rd)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, rd)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(linstorCRDs(g)).To(HaveLen(2))
	}, timeout, tick).Should(Succeed())

	res, err := dbbackup.Check(ctx, env.Client, b)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Create).To(Equal([]string{"resourcedefinitions." + dbbackup.Group}))
	g.Expect(res.Update).To(ConsistOf("nodes."+dbbackup.Group, "propscontainers."+dbbackup.Group))
	g.Expect(res.Delete).To(BeEmpty())

	_, err = dbbackup.RestoreBackup(ctx, env.Client, b)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dbbackup.VerifyRestored(ctx, env.Client, b.Status.Checksum)).To(Succeed())
	g.Expect(encoded(g)).To(Equal(want))
}

// A damaged chunk Secret: Check and the restore fail before anything is written, and
// say so.
func TestRestoreOfADamagedBackupWritesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	freshDatabase(t)
	b := storeBackup(t, ns, "damaged")
	// The database changed since the backup, so a restore would have to write.
	g.Eventually(func() error {
		return env.Client.Create(ctx, row("Nodes", "node-new", map[string]any{"node_name": "node-new"}))
	}, timeout, tick).Should(Succeed())
	before := encoded(g)

	chunk := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: b.Status.Secrets[1]}, chunk)).To(Succeed())
	chunk.Data[dbbackup.ChunkKey][5] ^= 0xff
	g.Expect(env.Client.Update(ctx, chunk)).To(Succeed())

	_, err := dbbackup.Check(ctx, env.Client, b)
	g.Expect(err).To(MatchError(dbbackup.ErrNothingWritten))
	g.Expect(err).NotTo(MatchError(dbbackup.ErrPartlyRestored))
	g.Expect(err).To(MatchError(ContainSubstring("LinstorBackup damaged cannot be restored: it is damaged")))
	g.Expect(err).To(MatchError(dbbackup.ErrBackupUnusable), "no retry changes a damaged chunk: the restore ends Failed")
	g.Expect(err).To(MatchError(ContainSubstring(b.Status.Checksum)))
	g.Expect(encoded(g)).To(Equal(before))

	_, err = dbbackup.RestoreBackup(ctx, env.Client, b)
	g.Expect(err).To(MatchError(dbbackup.ErrNothingWritten))
	g.Expect(encoded(g)).To(Equal(before), "nothing touched")

	// A chunk Secret gone: the same.
	g.Expect(env.Client.Delete(ctx, chunk)).To(Succeed())
	_, err = dbbackup.RestoreBackup(ctx, env.Client, b)
	g.Expect(err).To(MatchError(dbbackup.ErrNothingWritten))
	g.Expect(err).To(MatchError(ContainSubstring("reading backup chunk " + chunk.Name)))
	g.Expect(err).To(MatchError(dbbackup.ErrBackupUnusable))
	g.Expect(encoded(g)).To(Equal(before))
}

// A table the operator does not know, in the backup or in the live database, is
// refused before anything is written: the operator may not change it (RBAC), and
// would find that out halfway.
func TestRestoreRefusesUnknownTablesWritingNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	freshDatabase(t)
	unknown := linstorTable("frobnicators", "Frobnicators")
	g.Expect(env.Client.Create(ctx, unknown)).To(Succeed())
	g.Eventually(func() error {
		return env.Client.Create(ctx, row("Frobnicators", "f1", map[string]any{"x": "y"}))
	}, timeout, tick).Should(Succeed())

	// In the live database.
	known := storeBackup(t, ns, "known") // holds the unknown table too; only used below once it is gone
	before := encoded(g)
	other := storeBackupWithout(t, ns, "without", "frobnicators")
	_, err := dbbackup.Check(ctx, env.Client, other)
	g.Expect(err).To(MatchError(dbbackup.ErrNothingWritten))
	g.Expect(err).To(MatchError(ContainSubstring("frobnicators." + dbbackup.Group)))
	g.Expect(err).To(MatchError(ContainSubstring("unknown to this operator release")))
	g.Expect(err).To(MatchError(dbbackup.ErrBackupUnusable))
	_, err = dbbackup.RestoreBackup(ctx, env.Client, other)
	g.Expect(err).To(MatchError(dbbackup.ErrNothingWritten))
	g.Expect(encoded(g)).To(Equal(before))

	// In the backup only.
	g.Expect(env.Client.Delete(ctx, unknown)).To(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(linstorCRDs(g)).To(HaveLen(3)) }, timeout, tick).Should(Succeed())
	before = encoded(g)
	_, err = dbbackup.Check(ctx, env.Client, known)
	g.Expect(err).To(MatchError(dbbackup.ErrNothingWritten))
	g.Expect(err).To(MatchError(ContainSubstring("frobnicators." + dbbackup.Group)))
	_, err = dbbackup.RestoreBackup(ctx, env.Client, known)
	g.Expect(err).To(MatchError(dbbackup.ErrNothingWritten))
	g.Expect(linstorCRDs(g)).To(HaveLen(3), "the unknown table is not created")
	g.Expect(encoded(g)).To(Equal(before))
}
