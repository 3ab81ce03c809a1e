package controllers

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
)

// linstorTable is a CRD shaped like the ones LINSTOR's k8s backend creates: one per
// table, cluster-scoped, versioned by database schema.
func linstorTable(plural, kind string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + dbbackup.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: dbbackup.Group, Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1-27-1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
}

func row(kind, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(dbbackup.Group + "/v1-27-1")
	u.SetKind(kind)
	u.SetName(name)
	return u
}

// A backup restores the database exactly: after arbitrary damage, a restore makes the
// encoded dump equal to the backup byte for byte.
func TestDatabaseBackupRestoresExactly(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := env.Client
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{linstorTable("nodes", "Nodes"), linstorTable("resourcedefinitions", "ResourceDefinitions")} {
		g.Expect(c.Create(ctx, crd)).To(Succeed())
		g.Eventually(func(g Gomega) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(c.Get(ctx, ptrKey(crd.Name), got)).To(Succeed())
			g.Expect(got.Status.Conditions).To(ContainElement(HaveField("Type", apiextensionsv1.Established)))
		}, timeout, tick).Should(Succeed())
	}
	t.Cleanup(func() { dropTables(ctx) })
	// Discovery of the new kinds may lag behind Established.
	for i, name := range []string{"node-a", "node-b", "node-c"} {
		g.Eventually(func() error {
			return c.Create(ctx, row("Nodes", name, map[string]any{"node_name": name, "node_type": 2, "node_flags": i}))
		}, timeout, tick).Should(Succeed())
	}
	g.Eventually(func() error {
		return c.Create(ctx, row("ResourceDefinitions", "pvc-1", map[string]any{"resource_name": "PVC-1", "layer_stack": `["DRBD","STORAGE"]`}))
	}, timeout, tick).Should(Succeed())

	dump, err := dbbackup.Take(ctx, c)
	g.Expect(err).NotTo(HaveOccurred())
	tables, objects := dump.Counts()
	g.Expect([]int{tables, objects}).To(Equal([]int{2, 4}))
	backup, err := dump.Encode()
	g.Expect(err).NotTo(HaveOccurred())
	// Chunked and joined again, as Secrets store it.
	chunks := dbbackup.Split(backup, 100)
	g.Expect(len(chunks)).To(BeNumerically(">", 1))
	g.Expect(bytes.Join(chunks, nil)).To(Equal(backup))

	// Damage: a row deleted, a row changed, a new table with a row.
	g.Expect(c.Delete(ctx, row("Nodes", "node-b", nil))).To(Succeed())
	changed := row("Nodes", "node-a", nil)
	g.Expect(c.Get(ctx, ptrKey("node-a"), changed)).To(Succeed())
	changed.Object["spec"].(map[string]any)["node_flags"] = int64(99)
	g.Expect(c.Update(ctx, changed)).To(Succeed())
	extra := linstorTable("rollback", "Rollback")
	g.Expect(c.Create(ctx, extra)).To(Succeed())
	g.Eventually(func() error { return c.Create(ctx, row("Rollback", "r1", map[string]any{"x": "y"})) }, timeout, tick).Should(Succeed())
	// A migration: the table gets a newer storage version and its rows are rewritten
	// in it, so the apiserver records the new version in status.storedVersions.
	nodes := &apiextensionsv1.CustomResourceDefinition{}
	g.Expect(c.Get(ctx, ptrKey("nodes."+dbbackup.Group), nodes)).To(Succeed())
	newer := *nodes.Spec.Versions[0].DeepCopy()
	newer.Name = "v1-28-0"
	nodes.Spec.Versions[0].Storage = false
	nodes.Spec.Versions = append(nodes.Spec.Versions, newer)
	g.Expect(c.Update(ctx, nodes)).To(Succeed())
	g.Eventually(func() error {
		migrated := row("Nodes", "node-c", map[string]any{"node_name": "node-c", "node_type": 2, "node_flags": 2, "schema": "new"})
		migrated.SetAPIVersion(dbbackup.Group + "/v1-28-0")
		if err := c.Get(ctx, ptrKey("node-c"), migrated); err != nil {
			return err
		}
		migrated.Object["spec"].(map[string]any)["schema"] = "new"
		return c.Update(ctx, migrated)
	}, timeout, tick).Should(Succeed())
	g.Expect(c.Get(ctx, ptrKey("nodes."+dbbackup.Group), nodes)).To(Succeed())
	g.Expect(nodes.Status.StoredVersions).To(ConsistOf("v1-27-1", "v1-28-0"))
	damaged, _ := dbbackup.Take(ctx, c)
	damagedBytes, _ := damaged.Encode()
	g.Expect(dbbackup.Checksum(damagedBytes)).NotTo(Equal(dbbackup.Checksum(backup)))

	decoded, err := dbbackup.Decode(bytes.Join(chunks, nil))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dbbackup.Restore(ctx, c, decoded)).To(Succeed())
	g.Eventually(func(g Gomega) {
		again, err := dbbackup.Take(ctx, c)
		g.Expect(err).NotTo(HaveOccurred())
		restored, err := again.Encode()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(dbbackup.Checksum(restored)).To(Equal(dbbackup.Checksum(backup)))
		g.Expect(restored).To(Equal(backup))
	}, timeout, tick).Should(Succeed())
	// Read back as the lifecycle verifies a restore: the checksum of the backup, although
	// the table's definition was replaced and its stored versions forgotten.
	g.Expect(dbbackup.VerifyRestored(ctx, c, dbbackup.Checksum(backup))).To(Succeed())
	// Nothing is stored in the newer version any more, so the apiserver forgets it.
	g.Expect(c.Get(ctx, ptrKey("nodes."+dbbackup.Group), nodes)).To(Succeed())
	g.Expect(nodes.Status.StoredVersions).To(Equal([]string{"v1-27-1"}))

	_, err = dbbackup.Decode(backup[:len(backup)/2])
	g.Expect(err).To(MatchError(ContainSubstring("corrupt")))
}

// dropTables deletes the LINSTOR-like CRDs a test created.
func dropTables(ctx context.Context) {
	var crds apiextensionsv1.CustomResourceDefinitionList
	_ = env.Client.List(ctx, &crds)
	for i := range crds.Items {
		if crds.Items[i].Spec.Group == dbbackup.Group {
			_ = env.Client.Delete(ctx, &crds.Items[i])
		}
	}
	for i := range crds.Items {
		if crds.Items[i].Spec.Group == dbbackup.Group {
			key := ptrKey(crds.Items[i].Name)
			for j := 0; j < 100 && env.Client.Get(ctx, key, &apiextensionsv1.CustomResourceDefinition{}) == nil; j++ {
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
}
