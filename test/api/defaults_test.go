package api

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/linstor-operator/linstor-operator/config/crd"
	"github.com/linstor-operator/linstor-operator/pkg/crdschema"
)

// The console's switch shows Boolean(value) of the stored object
// (openshift/console frontend/packages/operator-lifecycle-manager/src/components/
// descriptors/spec/index.tsx, BooleanSwitch): a field that is not there shows OFF. A
// default applies only where its parent object exists, so the component objects are
// defaulted to {} and an empty LinstorCluster reads back with what runs.
func TestEmptyClusterReadsBackWithItsEffectiveValues(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	o := newObject("v1", "LinstorCluster", "effective", obj{})
	o.SetNamespace(env.Namespace(t))
	g.Expect(env.Client.Create(ctx, o)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, o) })

	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(o.GroupVersionKind())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(o), got)).To(Succeed())
	for path, want := range map[string]any{
		"controller.enabled":                 true,
		"controller.replicas":                int64(1),
		"satellite.enabled":                  true,
		"csi.enabled":                        true,
		"csi.controller.enabled":             true,
		"csi.node.enabled":                   true,
		"highAvailabilityController.enabled": true,
		"upgrade.rehearsal":                  true,
		"upgrade.policy":                     "Automatic",
	} {
		value, found, err := unstructured.NestedFieldNoCopy(got.Object, append([]string{"spec"}, strings.Split(path, ".")...)...)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(found).To(BeTrue(), "spec.%s is not in the stored object: the console shows it unset", path)
		g.Expect(value).To(Equal(want), "spec.%s", path)
	}
}

// With the controller defaulted, an external-controller cluster reads back with
// controller.enabled true. It must stay editable, and be created again from its export
// or its first manifest (a restore, a GitOps re-create): the external controller wins,
// and no rule may refuse it. Its rules are run here with the API server's validator on
// the CRD as built (pkg/crdschema), defaulted as the API server defaults an object read
// from etcd.
func TestExternalControllerClusterIsRecreatedFromItsExport(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	schemas, err := crdschema.Load(crd.Bases, "bases", "v1")
	g.Expect(err).NotTo(HaveOccurred())
	schema := schemas["LinstorCluster"]
	stored := func(extra obj) map[string]any {
		spec := obj{"externalController": obj{"url": "http://linstor.example.com:3370"}}
		for k, v := range extra {
			spec[k] = v
		}
		o := map[string]any{"apiVersion": "linstor.io/v1", "kind": "LinstorCluster", "metadata": obj{"name": "linstor"}, "spec": spec}
		schema.Default(o)
		return o
	}
	old := stored(nil)
	controller, _, _ := unstructured.NestedBool(old, "spec", "controller", "enabled")
	g.Expect(controller).To(BeTrue(), "the read-back object has the controller defaulted on")

	// The object as exported after the upgrade (kubectl get -o yaml, a Velero backup, a
	// GitOps tool's live state) carries controller.enabled: true. Created again from it,
	// or from the manifest it was first applied with, it must be accepted: the operator
	// runs no controller beside an external one whatever spec.controller says.
	g.Expect(schema.Validate(ctx, stored(nil), nil)).To(BeEmpty(), "the manifest it was applied with is refused")
	g.Expect(schema.Validate(ctx, old, nil)).To(BeEmpty(), "its own export is refused")
	g.Expect(schema.Validate(ctx, stored(obj{"version": "1.33.3"}), old)).To(BeEmpty(), "it cannot be edited")
	g.Expect(schema.Validate(ctx, stored(obj{"controller": obj{"enabled": false}}), old)).To(BeEmpty(), "its controller switch cannot be turned off")
}
