package controllers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	lapi "github.com/LINBIT/golinstor/client"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// readSample decodes config/samples/<file> strictly: a field the API lacks fails.
func readSample(t *testing.T, file string, into client.Object) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(envtest.RepoRoot(), "config", "samples", file))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(raw, into); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// TestSamplesConverge: the samples, created as they are on a fresh cluster (no node
// label to add, no disk or network to name), give a satellite on every node,
// each with the sample's file thin pool in LINSTOR, and an Available cluster; the node
// connection sample sets its protocol across regions only, and the backup sample
// completes.
func TestSamplesConverge(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	regions := map[string]string{"smp-a": "eu", "smp-b": "eu", "smp-c": "us"}
	for i, name := range []string{"smp-a", "smp-b", "smp-c"} {
		makeNode(t, name, "10.7.0."+string(rune('1'+i)), map[string]string{"topology.kubernetes.io/region": regions[name]})
	}

	var cluster linstorv1.LinstorCluster
	readSample(t, "linstor_v1_linstorcluster.yaml", &cluster)
	g.Expect(cluster.Name).To(Equal("linstor"), "the backup sample refers to the cluster by this name")
	c := makeCluster(t, ns, cluster.Spec)

	var cfg linstorv1.LinstorSatelliteConfiguration
	readSample(t, "linstor_v1_linstorsatelliteconfiguration.yaml", &cfg)
	g.Expect(cfg.Spec.StoragePools).To(HaveLen(1))
	pool := cfg.Spec.StoragePools[0]
	g.Expect(pool.FileThinPool).NotTo(BeNil(), "the sample's pool needs no disk")
	var lnc linstorv1.LinstorNodeConnection
	readSample(t, "linstor_v1_linstornodeconnection.yaml", &lnc)
	for _, obj := range []client.Object{&cfg, &lnc} {
		obj.SetNamespace(ns)
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(ctx, obj) })
	}

	g.Eventually(func(g Gomega) {
		// Every node of the cluster, not only the ones made here: no selector.
		var nodes corev1.NodeList
		g.Expect(env.Client.List(ctx, &nodes)).To(Succeed())
		g.Expect(len(nodes.Items)).To(BeNumerically(">=", 3))
		for _, n := range nodes.Items {
			sat := get(g, ns, n.Name, &linstorv1.LinstorSatellite{})
			g.Expect(sat.Status.ConnectionStatus).To(Equal("ONLINE"), "satellite %s", n.Name)
			g.Expect(condition(sat.Status.Conditions, linstorv1.ConditionDegraded).Status).NotTo(Equal(metav1.ConditionTrue), "satellite %s: %+v", n.Name, sat.Status.Conditions)
			g.Expect(sat.Status.StoragePools).To(ContainElement(And(HaveField("Name", pool.Name), HaveField("ProviderKind", string(lapi.FILE_THIN)))), "satellite %s", n.Name)

			p, err := emulatorClient(t).Nodes.GetStoragePool(ctx, n.Name, pool.Name)
			g.Expect(err).NotTo(HaveOccurred(), "pool %s on LINSTOR node %s", pool.Name, n.Name)
			g.Expect(p.ProviderKind).To(Equal(lapi.FILE_THIN))
			// LINSTOR keeps the directory as StorDriver/StorPoolName (StoragePools.convertStorPoolProp).
			g.Expect(p.Props).To(HaveKeyWithValue("StorDriver/StorPoolName", pool.FileThinPool.Directory))
		}
		cur := getCluster(g, c)
		g.Expect(condition(cur.Status.Conditions, linstorv1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue), "%+v", cur.Status.Conditions)
		g.Expect(cur.Status.SatellitesSummary).To(Equal(fmt.Sprintf("%d/%d", len(nodes.Items), len(nodes.Items))))
	}, timeout, tick).Should(Succeed())

	g.Eventually(func(g Gomega) {
		g.Expect(connectionProps(g, t, "smp-a", "smp-c")).To(HaveKeyWithValue("DrbdOptions/Net/protocol", "A"))
		g.Expect(connectionProps(g, t, "smp-b", "smp-c")).To(HaveKeyWithValue("DrbdOptions/Net/protocol", "A"))
		g.Expect(connectionProps(g, t, "smp-a", "smp-b")).NotTo(HaveKey("DrbdOptions/Net/protocol"), "same region")
	}, timeout, tick).Should(Succeed())

	// The backup sample names this cluster and completes. envtest runs no LINSTOR
	// controller: one table of its k8s database, with a row, stands for the database.
	g.Expect(env.Client.Create(ctx, linstorTable("propscontainers", "PropsContainers"))).To(Succeed())
	t.Cleanup(func() { dropTables(ctx) })
	g.Eventually(func() error {
		return env.Client.Create(ctx, row("PropsContainers", "smp-prop", map[string]any{"key": "Aux/smp", "value": "v"}))
	}, timeout, tick).Should(Succeed())
	var backup linstorv1.LinstorBackup
	readSample(t, "linstor_v1_linstorbackup.yaml", &backup)
	backup.Namespace = ns
	g.Expect(env.Client.Create(ctx, &backup)).To(Succeed())
	g.Eventually(func(g Gomega) {
		b := get(g, ns, backup.Name, &linstorv1.LinstorBackup{})
		g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupCompleted), b.Status.Message)
		g.Expect(b.Status.Objects).To(BeNumerically(">=", 1))
	}, timeout, tick).Should(Succeed())
}
