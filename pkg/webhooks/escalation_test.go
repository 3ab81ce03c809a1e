package webhooks

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

const allowHint = "spec.podTemplatePolicy: AllowPrivileged"

func fakeReader(t *testing.T, objs ...client.Object) client.Reader {
	t.Helper()
	s := runtime.NewScheme()
	if err := linstorv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

func raw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

// wantRefusal checks that err refuses exactly the named field and says how to allow it.
func wantRefusal(t *testing.T, err error, field string) {
	t.Helper()
	switch {
	case field == "" && err != nil:
		t.Errorf("refused: %v", err)
	case field == "":
	case err == nil:
		t.Errorf("accepted; want %s refused", field)
	case !strings.Contains(err.Error(), field+": Forbidden") || !strings.Contains(err.Error(), allowHint):
		t.Errorf("refused with %v; want %s Forbidden and how to allow it", err, field)
	}
}

func TestClusterPatchesMayNotAddPrivilege(t *testing.T) {
	ctx := context.Background()
	newCluster := func(policy linstorv1.PodTemplatePolicy, controllerPatch string) *linstorv1.LinstorCluster {
		return &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor", Namespace: "storage"}, Spec: linstorv1.LinstorClusterSpec{
			PodTemplatePolicy: policy,
			Controller:        &linstorv1.ControllerSpec{ComponentSpec: linstorv1.ComponentSpec{PodTemplate: raw(controllerPatch)}},
		}}
	}
	v := &ClusterValidator{Reader: fakeReader(t)}
	for _, tc := range []struct {
		name   string
		policy linstorv1.PodTemplatePolicy
		patch  string
		want   string
	}{
		{"host PID", "", `{"spec":{"hostPID":true}}`, "spec.controller.podTemplate.spec.hostPID"},
		{"privileged container", linstorv1.PodTemplateRestricted, `{"spec":{"containers":[{"name":"linstor-controller","securityContext":{"privileged":true}}]}}`,
			"spec.controller.podTemplate.spec.containers[name=linstor-controller].securityContext.privileged"},
		{"harmless", "", `{"spec":{"containers":[{"name":"linstor-controller","env":[{"name":"A","value":"1"}]}]}}`, ""},
		{"allowed by the cluster", linstorv1.PodTemplateAllowPrivileged, `{"spec":{"hostPID":true}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.ValidateCreate(ctx, newCluster(tc.policy, tc.patch))
			wantRefusal(t, err, tc.want)
		})
	}

	// An object that predates the check: edits of its metadata (the operator's
	// finalizer) pass, edits of its spec are refused until the patch is fixed.
	old := newCluster("", `{"spec":{"hostPID":true}}`)
	relabelled := old.DeepCopy()
	relabelled.Finalizers = []string{"linstor.io/cluster-cleanup"}
	_, err := v.ValidateUpdate(ctx, old, relabelled)
	wantRefusal(t, err, "")
	edited := old.DeepCopy()
	edited.Spec.Version = "1.33.3"
	_, err = v.ValidateUpdate(ctx, old, edited)
	wantRefusal(t, err, "spec.controller.podTemplate.spec.hostPID")
	// Switching the policy back to Restricted is an edit like any other.
	allowed := newCluster(linstorv1.PodTemplateAllowPrivileged, `{"spec":{"hostPID":true}}`)
	_, err = v.ValidateUpdate(ctx, allowed, old)
	wantRefusal(t, err, "spec.controller.podTemplate.spec.hostPID")
}

func TestSatelliteConfigurationPatchesFollowTheClusterPolicy(t *testing.T) {
	ctx := context.Background()
	cluster := func(policy linstorv1.PodTemplatePolicy) *linstorv1.LinstorCluster {
		return &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor", Namespace: "storage"}, Spec: linstorv1.LinstorClusterSpec{PodTemplatePolicy: policy}}
	}
	cfg := func(patch string) *linstorv1.LinstorSatelliteConfiguration {
		return &linstorv1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "storage"},
			Spec: linstorv1.LinstorSatelliteConfigurationSpec{PodTemplate: raw(patch)}}
	}
	const hostPID = `{"spec":{"hostPID":true}}`
	const keep = `{"spec":{"hostNetwork":true,"containers":[{"name":"linstor-satellite","securityContext":{"privileged":true}}]}}`
	for _, tc := range []struct {
		name    string
		reader  client.Reader
		patch   string
		wantErr string
	}{
		{"no cluster: Restricted", fakeReader(t), hostPID, "spec.podTemplate.spec.hostPID"},
		{"no reader: Restricted", nil, hostPID, "spec.podTemplate.spec.hostPID"},
		{"Restricted cluster", fakeReader(t, cluster(linstorv1.PodTemplateRestricted)), hostPID, "spec.podTemplate.spec.hostPID"},
		{"default cluster", fakeReader(t, cluster("")), `{"spec":{"volumes":[{"name":"root","hostPath":{"path":"/"}}]}}`, "spec.podTemplate.spec.volumes[name=root].hostPath"},
		{"AllowPrivileged cluster", fakeReader(t, cluster(linstorv1.PodTemplateAllowPrivileged)), hostPID, ""},
		{"the satellite keeps its privilege", fakeReader(t, cluster("")), keep, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := SatelliteConfigurationValidator{Reader: tc.reader}.ValidateCreate(ctx, cfg(tc.patch))
			wantRefusal(t, err, tc.wantErr)
		})
	}

	v := SatelliteConfigurationValidator{Reader: fakeReader(t)}
	old := cfg(hostPID)
	relabelled := old.DeepCopy()
	relabelled.Labels = map[string]string{"a": "b"}
	_, err := v.ValidateUpdate(ctx, old, relabelled)
	wantRefusal(t, err, "")
	edited := old.DeepCopy()
	edited.Spec.NodeSelector = map[string]string{"storage": "yes"}
	_, err = v.ValidateUpdate(ctx, old, edited)
	wantRefusal(t, err, "spec.podTemplate.spec.hostPID")
}
