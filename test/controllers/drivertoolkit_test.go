package controllers

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/names"
)

// RHCOS nodes of three versions, as OpenShift reports them (osImage, kernel, the MCO's
// os_id label), and the release's driver-toolkit ImageStream with tags for two of them.
const (
	rhcos418       = "418.94.202410090804-0"
	rhcos417       = "417.94.202409121747-0"
	rhcos419       = "9.6.20250826-1" // OpenShift 4.19's version format
	toolkitImage   = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:"
	toolkit418     = toolkitImage + "1328c4e7944b6d8eda40a8f789471a1aec63abda75ac1199ce098b965ec16709"
	toolkit417     = toolkitImage + "5c1ac2a2e1e2e2bfbab3e1f7d0f5bd0c0b3f5cdbcd5ee0ab5de1c8d9d44c3b2a"
	toolkit419     = toolkitImage + "9d2f0aef9e5bd9bb3a8e3e4d4aab8f7b5e1ae1e2f7e5b5f2c6cb8f1e7b3a5d11"
	toolkitTagNone = "latest"
)

// driverToolkitStream creates the ImageStream openshift/driver-toolkit with tags, each an
// RHCOS version mapped to its image, and "latest" as OpenShift has it.
func driverToolkitStream(t *testing.T, tags map[string]string) *unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openshift"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	stream := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "image.openshift.io/v1", "kind": "ImageStream",
		"metadata": map[string]any{"namespace": "openshift", "name": "driver-toolkit"},
	}}
	setToolkitTags(stream, tags)
	if err := env.Client.Create(ctx, stream); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, stream) })
	return stream
}

func setToolkitTags(stream *unstructured.Unstructured, tags map[string]string) {
	list := []any{map[string]any{"name": toolkitTagNone, "from": map[string]any{"kind": "DockerImage", "name": toolkit418},
		"importPolicy": map[string]any{"scheduled": true, "importMode": "PreserveOriginal"}}}
	for version, image := range tags {
		list = append(list, map[string]any{"name": version, "from": map[string]any{"kind": "DockerImage", "name": image}})
	}
	_ = unstructured.SetNestedSlice(stream.Object, list, "spec", "tags")
}

// rhcosNode creates a Ready node running RHCOS version with kernel.
func rhcosNode(t *testing.T, name, ip, osImage, kernel string, labels map[string]string) {
	t.Helper()
	node := makeNode(t, name, ip, labels)
	node.Status.NodeInfo.OSImage, node.Status.NodeInfo.KernelVersion = osImage, kernel
	if err := env.Client.Status().Update(context.Background(), node); err != nil {
		t.Fatal(err)
	}
}

// The RHCOS loader on the API server: each node compiles DRBD with the Driver Toolkit of
// its own RHCOS version, the loader runs as spc_t, the pod passes the namespace's
// documented Pod Security level (privileged), and a node whose version has no tag gets
// no satellite but a condition naming the version and the ImageStream, until the tag
// appears.
func TestRHCOSLoaderUsesTheDriverToolkitOfTheNodesVersion(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	stream := driverToolkitStream(t, map[string]string{rhcos418: toolkit418, rhcos417: toolkit417})
	ns := env.Namespace(t)
	labels := map[string]string{"suite": "dtk", "node.openshift.io/os_id": "rhcos"}
	rhcosNode(t, "dtk-418", "10.9.6.1", "Red Hat Enterprise Linux CoreOS "+rhcos418+" (Plow)", "5.14.0-427.40.1.el9_4.x86_64", labels)
	rhcosNode(t, "dtk-417", "10.9.6.2", "Red Hat Enterprise Linux CoreOS "+rhcos417+" (Plow)", "5.14.0-427.37.1.el9_4.x86_64", labels)
	rhcosNode(t, "dtk-419", "10.9.6.3", "Red Hat Enterprise Linux CoreOS "+rhcos419+" (Plow)", "5.14.0-570.39.1.el9_6.x86_64", labels)
	makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "dtk"}})

	loaderOf := func(g Gomega, node string) (corev1.PodTemplateSpec, map[string]corev1.Container) {
		tmpl := podTemplate(g, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.SatelliteDaemonSetName(node)}})
		init := map[string]corev1.Container{}
		var order []string
		for _, c := range tmpl.Spec.InitContainers {
			init[c.Name] = c
			order = append(order, c.Name)
		}
		g.Expect(order).To(Equal([]string{names.KernelHeadersContainer, names.DRBDLoaderContainer, names.ShutdownGuardContainer}))
		return tmpl, init
	}
	envOf := func(c corev1.Container) map[string]string {
		out := map[string]string{}
		for _, e := range c.Env {
			out[e.Name] = e.Value
		}
		return out
	}
	var tmpl418 corev1.PodTemplateSpec
	for node, want := range map[string]struct{ toolkit, kernel string }{
		"dtk-418": {toolkit418, "5.14.0-427.40.1.el9_4.x86_64"},
		"dtk-417": {toolkit417, "5.14.0-427.37.1.el9_4.x86_64"},
	} {
		g.Eventually(func(g Gomega) {
			tmpl, init := loaderOf(g, node)
			g.Expect(init[names.KernelHeadersContainer].Image).To(Equal(want.toolkit), "the Driver Toolkit of the node's RHCOS version")
			loader := init[names.DRBDLoaderContainer]
			g.Expect(loader.SecurityContext.SELinuxOptions).To(Equal(&corev1.SELinuxOptions{Type: "spc_t"}))
			g.Expect(envOf(loader)).To(Equal(map[string]string{"LB_HOW": "compile", "LB_MAKEOPTS": "KDIR=/usr/src/kernels/" + want.kernel, "LB_SELINUX_AS": "modules_object_t"}))
			if node == "dtk-418" {
				tmpl418 = tmpl
			}
		}, timeout, tick).Should(Succeed(), node)
	}

	// The version without a tag: no satellite, and the status says why.
	g.Eventually(func(g Gomega) {
		sat := get(g, ns, "dtk-419", &linstorv1.LinstorSatellite{})
		d := condition(sat.Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonDriverToolkitMissing))
		g.Expect(d.Message).To(ContainSubstring("no Driver Toolkit image for RHCOS " + rhcos419))
		g.Expect(d.Message).To(ContainSubstring("ImageStream openshift/driver-toolkit has no tag " + rhcos419))
	}, timeout, tick).Should(Succeed())
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.SatelliteDaemonSetName("dtk-419")}, &appsv1.DaemonSet{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a satellite whose loader cannot build DRBD: %v", err)

	// Admission: the namespace's documented level admits the RHCOS satellite; baseline
	// refuses it, naming the loader's SELinux type among the reasons.
	for level, admitted := range map[string]bool{"privileged": true, "baseline": false} {
		psa := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "dtk-psa-" + level + "-",
			Labels: map[string]string{"pod-security.kubernetes.io/enforce": level}}}
		g.Expect(env.Client.Create(ctx, psa)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(ctx, psa) })
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "satellite", Namespace: psa.Name, Labels: tmpl418.Labels}, Spec: tmpl418.Spec}
		err := env.Client.Create(ctx, pod, client.DryRunAll)
		if admitted {
			g.Expect(err).NotTo(HaveOccurred(), "enforce=%s", level)
			continue
		}
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "enforce=%s: %v", level, err)
		g.Expect(err.Error()).To(And(ContainSubstring("seLinuxOptions"), ContainSubstring(`"spc_t"`)))
	}

	// OpenShift adds the tag (an upgrade's new release): the satellite follows.
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(stream), stream)).To(Succeed())
	setToolkitTags(stream, map[string]string{rhcos418: toolkit418, rhcos417: toolkit417, rhcos419: toolkit419})
	g.Expect(env.Client.Update(ctx, stream)).To(Succeed())
	g.Eventually(func(g Gomega) {
		_, init := loaderOf(g, "dtk-419")
		g.Expect(init[names.KernelHeadersContainer].Image).To(Equal(toolkit419))
		sat := get(g, ns, "dtk-419", &linstorv1.LinstorSatellite{})
		g.Expect(condition(sat.Status.Conditions, linstorv1.ConditionDegraded).Reason).NotTo(Equal(linstorv1.ReasonDriverToolkitMissing))
	}, timeout, tick).Should(Succeed())
}

// The storage admin's worst day on OpenShift: the node's Driver Toolkit tag goes away
// (or openshift-apiserver does not answer during an upgrade) while the satellite runs.
// The running satellite is left as it is, and its drain guard still follows LINSTOR: a
// resource that comes to need the node holds the drain. A frozen guard would let the
// MCO drain a node that holds the only replica of a volume.
func TestRHCOSDrainGuardFollowsWhileTheToolkitIsMissing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	stream := driverToolkitStream(t, map[string]string{rhcos418: toolkit418})
	ns := env.Namespace(t)
	rhcosNode(t, "dtkd-a", "10.9.7.1", "Red Hat Enterprise Linux CoreOS "+rhcos418+" (Plow)", "5.14.0-427.40.1.el9_4.x86_64",
		map[string]string{"suite": "dtkd", "node.openshift.io/os_id": "rhcos"})
	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: ns},
		Spec: linstorv1.LinstorSatelliteConfigurationSpec{StoragePools: []linstorv1.StoragePool{thinPool}}})).To(Succeed())
	makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "dtkd"}})
	guardKey := client.ObjectKey{Namespace: ns, Name: names.DrainGuardName("dtkd-a")}
	minAvailable := func(g Gomega) int {
		pdb := &policyv1.PodDisruptionBudget{}
		g.Expect(env.Client.Get(ctx, guardKey, pdb)).To(Succeed())
		return pdb.Spec.MinAvailable.IntValue()
	}
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, ns, "dtkd-a", &linstorv1.LinstorSatellite{}).Status.StoragePools).To(HaveLen(1))
		g.Expect(minAvailable(g)).To(Equal(0), "nothing on the node yet")
	}, timeout, tick).Should(Succeed())
	ds := &appsv1.DaemonSet{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.SatelliteDaemonSetName("dtkd-a")}, ds)).To(Succeed())

	// The tag goes (nothing watches the ImageStream: the next pass sees it), and the
	// only replica of a volume comes to the node. That pass says the toolkit is missing,
	// leaves the satellite as it runs, and holds the drain all the same.
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(stream), stream)).To(Succeed())
	setToolkitTags(stream, nil)
	g.Expect(env.Client.Update(ctx, stream)).To(Succeed())
	g.Expect(emu.PlaceResource("pvc-dtkd", "dtkd-a", "thin", false)).To(Succeed())
	g.Eventually(func(g Gomega) {
		d := condition(get(g, ns, "dtkd-a", &linstorv1.LinstorSatellite{}).Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonDriverToolkitMissing))
		g.Expect(minAvailable(g)).To(Equal(1), "the drain guard froze while the Driver Toolkit was missing")
	}, timeout, tick).Should(Succeed())
	now := &appsv1.DaemonSet{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ds), now)).To(Succeed())
	g.Expect(now.UID).To(Equal(ds.UID), "the running satellite was replaced")
	g.Expect(now.Generation).To(Equal(ds.Generation), "the running satellite was changed")
}

// An RHCOS satellite whose Driver Toolkit is missing runs as it is (ONLINE) but could not
// be rolled to the new version: the upgrade waits in Preflight, naming it, rather than
// migrating the controller, timing out in the Satellites phase and rolling back.
func TestPreflightWaitsForASatelliteWithoutItsDriverToolkit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	_, cluster := preflightCluster(t, "pfd", "pfd-a")
	node := &corev1.Node{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "pfd-a"}, node)).To(Succeed())
	node.Labels["node.openshift.io/os_id"] = "rhcos"
	g.Expect(env.Client.Update(ctx, node)).To(Succeed())
	node.Status.NodeInfo.OSImage, node.Status.NodeInfo.KernelVersion = "Red Hat Enterprise Linux CoreOS "+rhcos419+" (Plow)", "5.14.0-570.39.1.el9_6.x86_64"
	g.Expect(env.Client.Status().Update(ctx, node)).To(Succeed())
	g.Eventually(func(g Gomega) {
		d := condition(get(g, cluster.Namespace, "pfd-a", &linstorv1.LinstorSatellite{}).Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonDriverToolkitMissing))
	}, timeout, tick).Should(Succeed())

	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.Version = preflightTo })).To(Succeed())
	waits := func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(upgradePhase(c)).To(Equal(linstorv1.UpgradePreflight), "%+v", c.Status.Upgrade)
		g.Expect(c.Status.Upgrade.Message).To(ContainSubstring("satellite pfd-a cannot be upgraded"))
		g.Expect(c.Status.Upgrade.Message).To(ContainSubstring(rhcos419))
	}
	g.Eventually(waits, timeout, tick).Should(Succeed())
	g.Consistently(waits, "2s", tick).Should(Succeed())
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.Version = preflightFrom })).To(Succeed())
}
