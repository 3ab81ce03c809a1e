package api

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	linstorv1alpha1 "github.com/linstor-operator/linstor-operator/api/v1alpha1"
	lossless "github.com/linstor-operator/linstor-operator/pkg/conversion"
)

func TestCreateV1alpha1ReadV1AndBack(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)

	old := &linstorv1alpha1.LinstorSatelliteConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "storage", Namespace: ns},
		Spec: linstorv1alpha1.LinstorSatelliteConfigurationSpec{
			NodeSelector: map[string]string{"storage": "true"},
			StoragePools: linstorv1alpha1.StoragePools{
				LvmThinPools: []linstorv1alpha1.LvmThinPool{{Name: "thin", VolumeGroup: "vg", ThinPool: "tp", DevicePaths: []string{"/dev/vdb"}}},
				ZfsPools:     []linstorv1alpha1.ZfsPool{{Name: "zfs", ZPool: "tank"}},
			},
			NodeProperties: map[string]string{"Aux/rack": "r1"},
		},
	}
	g.Expect(env.Client.Create(ctx, old)).To(Succeed())

	var cur linstorv1.LinstorSatelliteConfiguration
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(old), &cur)).To(Succeed())
	g.Expect(cur.Spec.NodeSelector).To(Equal(map[string]string{"storage": "true"}))
	g.Expect(cur.Spec.StoragePools).To(HaveLen(2))
	g.Expect(cur.Spec.StoragePools[0].LvmThinPool).To(Equal(&linstorv1.LvmThinPool{VolumeGroup: "vg", ThinPool: "tp"}))
	g.Expect(cur.Spec.StoragePools[0].Source.HostDevices).To(Equal([]string{"/dev/vdb"}))
	g.Expect(cur.Spec.StoragePools[1].ZfsPool).To(Equal(&linstorv1.ZfsPool{ZPool: "tank"}))
	g.Expect(cur.Spec.Properties).To(Equal([]linstorv1.NodeProperty{{Name: "Aux/rack", Value: "r1"}}))
	g.Expect(cur.Annotations).NotTo(HaveKey(lossless.DataAnnotation))

	var back linstorv1alpha1.LinstorSatelliteConfiguration
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(old), &back)).To(Succeed())
	g.Expect(back.Spec).To(Equal(old.Spec))
}

func TestV1OnlyFieldsSurviveAnEditThroughV1alpha1(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)

	cluster := &linstorv1.LinstorCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "linstor", Namespace: ns},
		Spec: linstorv1.LinstorClusterSpec{
			Controller: &linstorv1.ControllerSpec{
				ComponentSpec: linstorv1.ComponentSpec{
					Image:     "quay.io/piraeusdatastore/piraeus-server:v1.33.3",
					Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
				},
				Replicas: ptr.To[int32](2),
			},
			HighAvailabilityController: &linstorv1.ComponentSpec{Enabled: ptr.To(false)},
			TLS:                        &linstorv1.TLSSpec{API: &linstorv1.TLSConfig{Mode: linstorv1.TLSGenerated}},
			Properties:                 []linstorv1.Property{{Name: "DrbdOptions/Net/protocol", Value: "C"}},
			Upgrade:                    &linstorv1.UpgradeSpec{Policy: linstorv1.UpgradeManual},
		},
	}
	g.Expect(env.Client.Create(ctx, cluster)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, cluster) })

	var old linstorv1alpha1.LinstorCluster
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cluster), &old)).To(Succeed())
	g.Expect(old.Spec.ControllerImage).To(Equal("quay.io/piraeusdatastore/piraeus-server:v1.33.3"))
	g.Expect(old.Spec.ControllerReplicas).To(Equal(ptr.To[int32](2)))
	g.Expect(old.Spec.DisableHAController).To(BeTrue())
	g.Expect(old.Annotations).To(HaveKey(lossless.DataAnnotation), "v1-only fields must be kept for the way back")

	g.Expect(update(ctx, &old, func() {
		old.Spec.ControllerImage = "quay.io/piraeusdatastore/piraeus-server:v1.33.2"
		old.Spec.ControllerProperties["Autoplacer/Weights/MaxFreeSpace"] = "1"
	}, false)).To(Succeed())

	var cur linstorv1.LinstorCluster
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cluster), &cur)).To(Succeed())
	g.Expect(cur.Spec.Controller.Image).To(Equal("quay.io/piraeusdatastore/piraeus-server:v1.33.2"))
	g.Expect(cur.Spec.Controller.Resources).NotTo(BeNil(), "v1-only resources lost")
	g.Expect(cur.Spec.TLS.API.Mode).To(Equal(linstorv1.TLSGenerated))
	g.Expect(cur.Spec.Upgrade.Policy).To(Equal(linstorv1.UpgradeManual))
	g.Expect(cur.Spec.Properties).To(Equal([]linstorv1.Property{
		{Name: "DrbdOptions/Net/protocol", Value: "C"}, {Name: "Autoplacer/Weights/MaxFreeSpace", Value: "1"},
	}))
	g.Expect(cur.Annotations).NotTo(HaveKey(lossless.DataAnnotation), "the conversion annotation must not be stored")
}

func TestStatusWrittenThroughV1alpha1KeepsV1Status(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)

	sat := &linstorv1.LinstorSatellite{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: ns},
		Spec:       linstorv1.LinstorSatelliteSpec{ClusterRef: linstorv1.ClusterReference{Name: "linstor"}},
	}
	g.Expect(env.Client.Create(ctx, sat)).To(Succeed())
	g.Expect(update(ctx, sat, func() {
		sat.Status.ConnectionStatus, sat.Status.Version = "ONLINE", "1.33.3"
		sat.Status.StoragePools = []linstorv1.StoragePoolStatus{{Name: "thin", ProviderKind: "LVM_THIN", TotalCapacity: ptr.To(resource.MustParse("100Gi"))}}
	}, true)).To(Succeed())

	var old linstorv1alpha1.LinstorSatellite
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(sat), &old)).To(Succeed())
	g.Expect(old.Status.ConnectionStatus).To(Equal("ONLINE"))
	g.Expect(update(ctx, &old, func() { old.Status.ConnectionStatus = "OFFLINE" }, true)).To(Succeed())

	var cur linstorv1.LinstorSatellite
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(sat), &cur)).To(Succeed())
	g.Expect(cur.Status.ConnectionStatus).To(Equal("OFFLINE"))
	g.Expect(cur.Status.Version).To(Equal("1.33.3"))
	g.Expect(cur.Status.StoragePools).To(HaveLen(1))
}

func TestListInBothVersions(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)

	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorSatellite{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", Namespace: ns},
		Spec: linstorv1.LinstorSatelliteSpec{ClusterRef: linstorv1.ClusterReference{Name: "linstor"},
			StoragePools: []linstorv1.StoragePool{{Name: "files", FileThinPool: &linstorv1.FilePool{}}}},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &linstorv1alpha1.LinstorSatellite{
		ObjectMeta: metav1.ObjectMeta{Name: "node-b", Namespace: ns},
		Spec: linstorv1alpha1.LinstorSatelliteSpec{ClusterName: "linstor",
			StoragePools: linstorv1alpha1.StoragePools{LvmPools: []linstorv1alpha1.LvmPool{{Name: "thick"}}}},
	})).To(Succeed())

	var v1List linstorv1.LinstorSatelliteList
	g.Expect(env.Client.List(ctx, &v1List, client.InNamespace(ns))).To(Succeed())
	g.Expect(v1List.Items).To(HaveLen(2))
	g.Expect(v1List.Items[1].Spec.StoragePools[0].LvmPool).NotTo(BeNil())

	var oldList linstorv1alpha1.LinstorSatelliteList
	g.Expect(env.Client.List(ctx, &oldList, client.InNamespace(ns))).To(Succeed())
	g.Expect(oldList.Items).To(HaveLen(2))
	g.Expect(oldList.Items[0].Spec.ClusterName).To(Equal("linstor"))
	g.Expect(oldList.Items[0].Annotations).To(HaveKey(lossless.DataAnnotation), "the file pool only v1 can express")
	g.Expect(oldList.Items[1].Spec.LvmPools).To(Equal([]linstorv1alpha1.LvmPool{{Name: "thick"}}))
}
