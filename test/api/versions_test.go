package api

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	linstorv1alpha1 "github.com/linstor-operator/linstor-operator/api/v1alpha1"
	lossless "github.com/linstor-operator/linstor-operator/pkg/conversion"
)

// randomText is n characters that do not compress.
func randomText(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(rand.Text())
	}
	return b.String()[:n]
}

// conversionData is an annotation value carrying a v1 spec, as a v1alpha1 read writes it.
func conversionData(spec obj) string {
	raw, _ := json.Marshal(obj{"spec": spec})
	return string(raw)
}

// otherWayCases are objects v1 refuses, written another way: through v1alpha1 (whose
// schema lacks v1's rules), or with a v1 spec in the conversion annotation. Each must be
// refused naming the field the user wrote.
var otherWayCases = []struct {
	name, kind  string
	spec        obj
	annotations map[string]string
	want        string
}{
	// Through v1alpha1: v1's patterns and CEL rules on the converted object.
	{"property key with a space", "LinstorCluster", obj{"controllerProperties": obj{"Aux/a b": "1"}}, nil,
		"spec.controllerProperties[Aux/a b]: Invalid value: \"Aux/a b\": spec.properties[0].name in body should match"},
	{"property key with a leading slash", "LinstorSatelliteConfiguration", obj{"nodeProperties": obj{"/Aux/x": "1"}}, nil,
		"spec.nodeProperties[/Aux/x]: Invalid value: \"/Aux/x\": spec.properties[0].name in body should match"},
	{"client certificate with the k8s database", "LinstorCluster", obj{"dbConnectionURL": "k8s", "dbCertSecret": "db-cert"}, nil,
		"spec.dbCertSecret: Invalid value: \"object\": spec.database.connectionURL and clientCertificateSecretRef are only allowed when spec.database.type is external"},
	{"duplicate pool names across types", "LinstorSatelliteConfiguration", obj{"lvmPools": list{obj{"name": "pool"}}, "zfsPools": list{obj{"name": "pool"}}}, nil,
		"spec.zfsPools[0]: Duplicate value"},
	{"duplicate pool names within a type", "LinstorSatelliteConfiguration", obj{"lvmThinPools": list{obj{"name": "pool"}, obj{"name": "pool"}}}, nil,
		"spec.lvmThinPools[1]: Duplicate value"},
	{"pool names differing in case", "LinstorSatelliteConfiguration", obj{"lvmPools": list{obj{"name": "pool"}}, "lvmThinPools": list{obj{"name": "POOL"}}}, nil,
		"spec.lvmThinPools[0].name: Duplicate value: \"POOL (LINSTOR pool names ignore case"},
	{"duplicate devices", "LinstorSatelliteConfiguration", obj{"lvmPools": list{obj{"name": "pool", "devicePaths": list{"/dev/vdb", "/dev/vdb"}}}}, nil,
		"spec.lvmPools[0].devicePaths[1]: Duplicate value: \"/dev/vdb\""},
	{"pool name shorter than LINSTOR allows", "LinstorSatellite", obj{"clusterName": "linstor", "zfsPools": list{obj{"name": "p"}}}, nil,
		"spec.zfsPools[0].name: Invalid value: \"p\": spec.storagePools[0].name in body should be at least 3 chars long"},
	{"node selector label key", "LinstorSatelliteConfiguration", obj{"nodeSelector": obj{"bad key": "x"}}, nil,
		"spec.nodeSelector: Invalid value: \"bad key\": name part must consist of alphanumeric characters"},
	{"node property LINSTOR refuses", "LinstorSatelliteConfiguration", obj{"nodeProperties": obj{"Aux/ok": "1", "DrbdOptions/AutoEvictAllowEviction": "maybe"}}, nil,
		"spec.nodeProperties[DrbdOptions/AutoEvictAllowEviction]: Invalid value: \"maybe\""},
	{"controller property value LINSTOR refuses", "LinstorCluster", obj{"controllerProperties": obj{"DrbdOptions/Net/protocol": "c"}}, nil,
		"spec.controllerProperties[DrbdOptions/Net/protocol]: Invalid value: \"c\""},
	{"database URL without a host", "LinstorCluster", obj{"dbConnectionURL": "jdbc:postgresql:///linstor"}, nil,
		"spec.dbConnectionURL: Invalid value: \"jdbc:postgresql:///linstor\": must name the database's host"},

	// Through the conversion annotation: v1-only values v1alpha1 does not show.
	{"external controller ftp URL in the annotation", "LinstorCluster", obj{},
		map[string]string{lossless.DataAnnotation: conversionData(obj{"externalController": obj{"url": "ftp://linstor:3370"}, "controller": obj{"enabled": false}})},
		"metadata.annotations[linstor.io/conversion-data]: Invalid value: \"string\": spec.externalController.url: spec.externalController.url must be an http:// or https:// URL"},
	{"version latest in the annotation", "LinstorCluster", obj{},
		map[string]string{lossless.DataAnnotation: conversionData(obj{"version": "latest"})},
		"metadata.annotations[linstor.io/conversion-data]: Invalid value: \"latest\": spec.version: spec.version in body should match"},
	{"pool with two types in the annotation", "LinstorSatelliteConfiguration", obj{},
		map[string]string{lossless.DataAnnotation: conversionData(obj{"storagePools": list{obj{"name": "pool", "lvmPool": obj{}, "zfsPool": obj{}}}})},
		"metadata.annotations[linstor.io/conversion-data]: Invalid value: \"object\": spec.storagePools[0]: exactly one of lvmPool, lvmThinPool, zfsPool, zfsThinPool, filePool, fileThinPool must be set"},
	{"annotation that is not JSON", "LinstorCluster", obj{},
		map[string]string{lossless.DataAnnotation: "not json"},
		"metadata.annotations[linstor.io/conversion-data]: Invalid value: \"<conversion data>\": is not conversion data written by this operator"},
	{"annotation with fields of another kind", "LinstorCluster", obj{},
		map[string]string{lossless.DataAnnotation: conversionData(obj{"storagePools": list{}})},
		"metadata.annotations[linstor.io/conversion-data]: Invalid value: \"<conversion data>\": spec: unknown field \"storagePools\""},
	{"annotation marked as left out", "LinstorCluster", obj{},
		map[string]string{lossless.DataAnnotation: `{"omitted":"too large"}`},
		"cannot be written back through linstor.io/v1alpha1: too large"},
	{"annotation with invalid pod template patch", "LinstorCluster", obj{},
		map[string]string{lossless.DataAnnotation: conversionData(obj{"controller": obj{"podTemplate": obj{"spec": obj{"containerz": list{}}}}})},
		"metadata.annotations[linstor.io/conversion-data]: Invalid value: \"<patch>\": spec.controller.podTemplate: must be a pod template patch: unknown field \"spec.containerz\""},
}

func TestInvalidObjectsWrittenAnotherWayAreRefused(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	for i, tc := range otherWayCases {
		t.Run(tc.name, func(t *testing.T) {
			o := newObject("v1alpha1", tc.kind, fmt.Sprintf("other-%d", i), tc.spec)
			o.SetNamespace(ns)
			o.SetAnnotations(tc.annotations)
			err := env.Client.Create(ctx, o)
			if err == nil {
				_ = env.Client.Delete(ctx, o)
				t.Fatalf("accepted; want refusal with %q", tc.want)
			}
			if !strings.Contains(err.Error(), "is invalid") && !strings.Contains(err.Error(), "is forbidden") {
				t.Fatalf("refused with a status that is not 4xx:\n  %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("refused with\n  %v\nwant message containing\n  %s", err, tc.want)
			}
		})
	}
}

// The annotation is the operator's: written through v1 it is refused.
func TestConversionAnnotationIsReservedInV1(t *testing.T) {
	g := NewWithT(t)
	o := newObject("v1", "LinstorSatelliteConfiguration", "reserved", obj{})
	o.SetNamespace(env.Namespace(t))
	o.SetAnnotations(map[string]string{lossless.DataAnnotation: conversionData(obj{})})
	err := env.Client.Create(context.Background(), o)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("metadata.annotations[linstor.io/conversion-data]: Forbidden: is reserved"))
}

// A restore replaces LINSTOR's database: restoreFrom must name a Completed backup of
// this cluster when it is set, and the backup may go away afterwards.
func TestRestoreFromNamesACompletedBackupOfThisCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	backup := func(name, cluster string, phase linstorv1.BackupPhase) *linstorv1.LinstorBackup {
		b := &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: cluster}}}
		g.Expect(env.Client.Create(ctx, b)).To(Succeed())
		g.Expect(update(ctx, b, func() { b.Status.Phase = phase }, true)).To(Succeed())
		return b
	}
	completed := backup("completed", "linstor", linstorv1.BackupCompleted)
	backup("failed", "linstor", linstorv1.BackupFailed)
	backup("other-cluster", "elsewhere", linstorv1.BackupCompleted)

	cluster := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor", Namespace: ns}}
	g.Expect(env.Client.Create(ctx, cluster)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, cluster) })
	for _, tc := range []struct{ name, want string }{
		{"failed", `spec.database.restoreFrom: Invalid value: "failed": the backup is Failed; only a Completed (verified) backup can be restored`},
		{"other-cluster", `spec.database.restoreFrom: Invalid value: "other-cluster": is a backup of LinstorCluster "elsewhere", not of "linstor"`},
		{"missing", `spec.database.restoreFrom: Not found: "missing"`},
	} {
		err := update(ctx, cluster, func() { cluster.Spec.Database = &linstorv1.DatabaseSpec{RestoreFrom: tc.name} }, false)
		g.Expect(err).To(HaveOccurred(), tc.name)
		g.Expect(err.Error()).To(ContainSubstring(tc.want))
	}
	g.Expect(update(ctx, cluster, func() { cluster.Spec.Database = &linstorv1.DatabaseSpec{RestoreFrom: "completed"} }, false)).To(Succeed())

	// The backup deleted after the restore: the cluster can still be edited.
	g.Expect(env.Client.Delete(ctx, completed)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(completed), &linstorv1.LinstorBackup{}))
	}).Should(BeTrue())
	g.Expect(update(ctx, cluster, func() { cluster.Spec.Version = "1.33.3" }, false)).To(Succeed())
}

// Conversion data too large for an annotation: a v1alpha1 LIST and GET still work,
// and a write back through v1alpha1 (which would lose the v1-only fields) is refused.
func TestLargeV1OnlyFieldsNeverBreakV1alpha1Reads(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)

	// Compressible (repetitive) v1-only content is kept, gzipped.
	compressible := &linstorv1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "compressible", Namespace: ns},
		Spec: linstorv1.LinstorSatelliteConfigurationSpec{PodTemplate: podTemplateWithAnnotations(300, func(i int) string { return strings.Repeat("storage ", 128) })}}
	// Random content does not compress below the annotation limit: it is left out.
	random := &linstorv1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "random", Namespace: ns},
		Spec: linstorv1.LinstorSatelliteConfigurationSpec{PodTemplate: podTemplateWithAnnotations(300, func(i int) string { return randomText(1000) })}}
	for _, o := range []*linstorv1.LinstorSatelliteConfiguration{compressible, random} {
		g.Expect(env.Client.Create(ctx, o)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(ctx, o) })
	}

	var list linstorv1alpha1.LinstorSatelliteConfigurationList
	g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed(), "a v1alpha1 LIST must not fail because of one object")
	g.Expect(list.Items).To(HaveLen(2))
	data := map[string]string{}
	for _, item := range list.Items {
		data[item.Name] = item.Annotations[lossless.DataAnnotation]
	}
	t.Logf("conversion data: compressible %d bytes, random %d bytes", len(data["compressible"]), len(data["random"]))
	g.Expect(data["compressible"]).To(HavePrefix(`{"gzip":`))
	g.Expect(data["random"]).To(HavePrefix(`{"omitted":`))

	// Edited through v1alpha1: the compressed data restores the v1-only patch.
	alpha := linstorv1alpha1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: compressible.Name, Namespace: ns}}
	g.Expect(update(ctx, &alpha, func() {
		alpha.Spec.NodeProperties = map[string]string{"Aux/edited": "yes"}
	}, false)).To(Succeed())
	var cur linstorv1.LinstorSatelliteConfiguration
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(compressible), &cur)).To(Succeed())
	g.Expect(cur.Spec.PodTemplate.Raw).To(MatchJSON(compressible.Spec.PodTemplate.Raw))
	g.Expect(cur.Spec.Properties).To(Equal([]linstorv1.NodeProperty{{Name: "Aux/edited", Value: "yes"}}))

	// The object whose data was left out refuses a v1alpha1 write, and keeps its spec.
	alpha = linstorv1alpha1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: random.Name, Namespace: ns}}
	err := update(ctx, &alpha, func() {
		alpha.Spec.NodeProperties = map[string]string{"Aux/edited": "yes"}
	}, false)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("metadata.annotations[linstor.io/conversion-data]: Invalid value: \"<conversion data>\": cannot be written back through linstor.io/v1alpha1"))
	g.Expect(err.Error()).To(ContainSubstring("edit it through linstor.io/v1"))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(random), &cur)).To(Succeed())
	g.Expect(cur.Spec.PodTemplate.Raw).To(MatchJSON(random.Spec.PodTemplate.Raw))
}

// podTemplateWithAnnotations is a valid patch of n pod annotations.
func podTemplateWithAnnotations(n int, value func(int) string) *runtime.RawExtension {
	annotations := map[string]string{}
	for i := range n {
		annotations[fmt.Sprintf("example.com/a%04d", i)] = value(i)
	}
	raw, _ := json.Marshal(obj{"metadata": obj{"annotations": annotations}})
	return &runtime.RawExtension{Raw: raw}
}
