package webhooks

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

func TestClusterPatchesJudgedOnSpecChange(t *testing.T) {
	privileged := linstorv1.Patch{Patch: `{"spec":{"template":{"spec":{"containers":[{"name":"linstor-ha-controller","image":"x"},{"name":"debug","image":"busybox","securityContext":{"privileged":true}}]}}}}`}
	cluster := func(patches ...linstorv1.Patch) *linstorv1.LinstorCluster {
		return &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor", Namespace: "storage"},
			Spec: linstorv1.LinstorClusterSpec{HighAvailabilityController: &linstorv1.ComponentSpec{Patches: patches}}}
	}
	v := &ClusterValidator{}
	const field = "spec.highAvailabilityController.patches[0].patch.spec.template.spec.containers[name=debug].securityContext.privileged"
	_, err := v.ValidateUpdate(context.Background(), cluster(), cluster(privileged))
	if err == nil || !strings.Contains(err.Error(), field+": Forbidden") {
		t.Errorf("adding a privileged container: %v", err)
	}
	// An object written before the check stays editable (finalizer, labels) and deletable.
	old, now := cluster(privileged), cluster(privileged)
	now.Labels = map[string]string{"touched": "yes"}
	if _, err := v.ValidateUpdate(context.Background(), old, now); err != nil {
		t.Errorf("an update that keeps the spec was judged again: %v", err)
	}
	// SpecErrors, the model tests use, refuses what the webhook refuses.
	found := false
	for _, e := range SpecErrors(cluster(privileged)) {
		found = found || e.Field == field
	}
	if !found {
		t.Errorf("SpecErrors misses %s", field)
	}
	cfg := &linstorv1.LinstorSatelliteConfiguration{Spec: linstorv1.LinstorSatelliteConfigurationSpec{Patches: []linstorv1.Patch{{Target: &linstorv1.PatchTarget{Kind: "Service"}, Patch: "{}"}}}}
	if errs := SpecErrors(cfg); len(errs) != 1 || errs[0].Field != "spec.patches[0].target" {
		t.Errorf("configuration target: %v", errs)
	}
}
