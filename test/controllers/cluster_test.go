package controllers

import (
	"context"
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lapi "github.com/LINBIT/golinstor/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

func TestClusterRunsLinstor(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	makeNode(t, "run-a", "10.1.0.1", map[string]string{"storage": "yes", "zone": "a"})
	makeNode(t, "run-b", "10.1.0.2", map[string]string{"storage": "yes", "zone": "b"})
	makeNode(t, "run-c", "10.1.0.3", map[string]string{"storage": "no"})

	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorSatelliteConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "pools", Namespace: ns},
		Spec: linstorv1.LinstorSatelliteConfigurationSpec{
			StoragePools: []linstorv1.StoragePool{
				{Name: "thin", LvmThinPool: &linstorv1.LvmThinPool{}, Source: &linstorv1.StoragePoolSource{HostDevices: []string{"/dev/vdb"}},
					Properties: []linstorv1.Property{{Name: "Aux/tier", Value: "ssd"}}},
				{Name: "files", FileThinPool: &linstorv1.FilePool{}},
			},
			Properties: []linstorv1.NodeProperty{{Name: "Aux/zone", ValueFrom: &linstorv1.NodePropertySource{NodeFieldRef: "metadata.labels['zone']"}}},
		},
	})).To(Succeed())
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{
		NodeSelector: map[string]string{"storage": "yes"},
		Properties:   []linstorv1.Property{{Name: "DrbdOptions/Net/protocol", Value: "C"}, {Name: "Aux/keep", Value: "1"}},
	})

	// The controller workload.
	g.Eventually(func(g Gomega) {
		var d appsv1.Deployment
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "linstor-controller"}, &d)).To(Succeed())
		g.Expect(d.Spec.Strategy.Type).To(Equal(appsv1.RecreateDeploymentStrategyType))
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("quay.io/piraeusdatastore/piraeus-server:v1.33.3"))
		g.Expect(metav1.IsControlledBy(&d, cluster)).To(BeTrue())
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "linstor-controller"}, &corev1.Service{})).To(Succeed())
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "linstor-controller-config"}, &corev1.ConfigMap{})).To(Succeed())
		// It runs under the account that ships with the operator; the operator grants nothing.
		g.Expect(d.Spec.Template.Spec.ServiceAccountName).To(Equal("linstor-operator-linstor-controller"))
		var roles rbacv1.ClusterRoleList
		g.Expect(env.Client.List(ctx, &roles, client.MatchingLabels{names.LabelManagedBy: names.ManagedBy})).To(Succeed())
		g.Expect(roles.Items).To(BeEmpty())
		// CSI driver and HA controller.
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "linstor.csi.linbit.com"}, &storagev1.CSIDriver{})).To(Succeed())
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "linstor-csi-controller"}, &appsv1.Deployment{})).To(Succeed())
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "linstor-csi-node"}, &appsv1.DaemonSet{})).To(Succeed())
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "linstor-ha-controller"}, &appsv1.DaemonSet{})).To(Succeed())
	}, timeout, tick).Should(Succeed())

	// One satellite per selected node, registered in LINSTOR with pools and properties.
	g.Eventually(func(g Gomega) {
		var sats linstorv1.LinstorSatelliteList
		g.Expect(env.Client.List(ctx, &sats, client.InNamespace(ns))).To(Succeed())
		g.Expect(sats.Items).To(HaveLen(2))
		for _, name := range []string{"run-a", "run-b"} {
			n, ok := emu.Node(name)
			g.Expect(ok).To(BeTrue(), "LINSTOR node %s", name)
			g.Expect(n.NetInterfaces[0].Address.String()).To(HavePrefix("10.1.0."))
			g.Expect(n.Props).To(HaveKeyWithValue("Aux/zone", map[string]string{"run-a": "a", "run-b": "b"}[name]))
			sat := get(g, ns, name, &linstorv1.LinstorSatellite{})
			g.Expect(sat.Status.ConnectionStatus).To(Equal("ONLINE"))
			var ds appsv1.DaemonSet
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "linstor-satellite." + name}, &ds)).To(Succeed())
			g.Expect(metav1.IsControlledBy(&ds, sat)).To(BeTrue())
			g.Expect(ds.Spec.Template.Spec.InitContainers[0].Image).To(Equal("quay.io/piraeusdatastore/drbd9-noble:v9.3.3"), "loader from osImage Ubuntu 24.04")
			g.Expect(ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values).To(Equal([]string{name}))
			g.Expect(sat.Status.StoragePools).To(HaveLen(2))
		}
		_, selected := emu.Node("run-c")
		g.Expect(selected).To(BeFalse(), "node not selected by the cluster must not be registered")
	}, timeout, tick).Should(Succeed())

	// The configuration reports where it applies.
	g.Eventually(func(g Gomega) {
		var cfg linstorv1.LinstorSatelliteConfiguration
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pools"}, &cfg)).To(Succeed())
		g.Expect(cfg.Status.MatchedNodes).To(Equal([]string{"run-a", "run-b"}))
		g.Expect(cfg.Status.MatchedNodeCount).To(Equal(int32(2)), "the printer column's count")
		g.Expect(condition(cfg.Status.Conditions, linstorv1.ConditionApplied).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, tick).Should(Succeed())

	lc := emulatorClient(t)
	pool, err := lc.Nodes.GetStoragePool(ctx, "run-a", "thin")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pool.ProviderKind).To(Equal(lapi.LVM_THIN))
	g.Expect(pool.TotalCapacity).To(Equal(int64(100<<20)), "device pool sized from /dev/vdb")
	g.Expect(pool.Props).To(HaveKeyWithValue("Aux/tier", "ssd"))
	files, err := lc.Nodes.GetStoragePool(ctx, "run-a", "files")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files.ProviderKind).To(Equal(lapi.FILE_THIN))
	// LINSTOR keeps the directory as StorDriver/StorPoolName (StoragePools.convertStorPoolProp).
	g.Expect(files.Props).To(HaveKeyWithValue("StorDriver/StorPoolName", "/var/lib/linstor-pools/files"))

	// Cluster status.
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Status.Version).To(Equal("1.33.3"))
		g.Expect(c.Status.SatellitesSummary).To(Equal("2/2"))
		g.Expect(c.Status.Capacity).NotTo(BeNil())
		g.Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))
	}, timeout, tick).Should(Succeed())
	props, err := lc.Controller.GetProps(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(props).To(HaveKeyWithValue("DrbdOptions/Net/protocol", "C"))
	g.Eventually(func(g Gomega) {
		g.Expect(gauge(g, "linstor_operator_storage_pool_capacity_bytes", map[string]string{"node": "run-a", "pool": "thin", "type": "total"})).To(Equal(float64(100 << 30)))
	}, timeout, tick).Should(Succeed())

	// Disabling the CSI driver prunes its objects, namespaced and cluster-scoped.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.CSI = &linstorv1.CSISpec{Enabled: ptr.To(false)}
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Name: "linstor.csi.linbit.com"}, &storagev1.CSIDriver{}))).To(BeTrue())
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "linstor-csi-node"}, &appsv1.DaemonSet{}))).To(BeTrue())
	}, timeout, tick).Should(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "linstor-controller"}, &appsv1.Deployment{})).To(Succeed(), "pruning removed a wanted object")

	// Removing a property from the spec removes it from LINSTOR; a foreign one stays.
	g.Expect(lc.Controller.Modify(ctx, lapi.GenericPropsModify{OverrideProps: map[string]string{"Aux/foreign": "x"}})).To(Succeed())
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.Properties = c.Spec.Properties[:1] })).To(Succeed())
	g.Eventually(func(g Gomega) {
		props, err := lc.Controller.GetProps(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(props).NotTo(HaveKey("Aux/keep"))
		g.Expect(props).To(HaveKeyWithValue("Aux/foreign", "x"))
	}, timeout, tick).Should(Succeed())
}

// The operands' ServiceAccounts ship with the operator; where they are missing, every
// pod is refused. The cluster says which accounts are missing and recovers when they
// are installed.
func TestMissingOperandAccountsAreReported(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	var removed []*corev1.ServiceAccount
	for _, name := range []string{"linstor-operator-linstor-controller", "linstor-operator-linstor-satellite"} {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		g.Expect(env.Client.Delete(ctx, sa)).To(Succeed())
		removed = append(removed, sa)
	}
	makeNode(t, "sa-a", "10.9.0.1", map[string]string{"suite": "sa"})
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "sa"}})
	g.Eventually(func(g Gomega) {
		c := condition(getCluster(g, cluster).Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(linstorv1.ReasonServiceAccountMissing))
		g.Expect(c.Message).To(ContainSubstring("linstor-operator-linstor-controller, linstor-operator-linstor-satellite do not exist"))
	}, timeout, tick).Should(Succeed())
	// The workload is there, waiting for its account.
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "linstor-controller"}, &appsv1.Deployment{})).To(Succeed())

	for _, sa := range removed {
		g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa.Name}})).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		c := condition(getCluster(g, cluster).Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(c.Reason).NotTo(Equal(linstorv1.ReasonServiceAccountMissing))
	}, timeout, tick).Should(Succeed())
}
