package runbundle

import (
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func TestParseApproval(t *testing.T) {
	for in, want := range map[string]operatorsv1alpha1.Approval{"Automatic": "Automatic", "Manual": "Manual"} {
		if got, err := ParseApproval(in); err != nil || got != want {
			t.Errorf("%s: got %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "manual", "Auto"} {
		if _, err := ParseApproval(in); err == nil || !strings.Contains(err.Error(), "APPROVAL") {
			t.Errorf("%q: error %v, want one naming APPROVAL", in, err)
		}
	}
}

func TestCheckOLMCRDs(t *testing.T) {
	mapper := func(kinds ...schema.GroupVersionKind) meta.RESTMapper {
		m := meta.NewDefaultRESTMapper(nil)
		for _, k := range kinds {
			m.Add(k, meta.RESTScopeNamespace)
		}
		return m
	}
	if err := CheckOLMCRDs(mapper(olmKinds...)); err != nil {
		t.Errorf("all OLM kinds served: %v", err)
	}
	err := CheckOLMCRDs(mapper(olmKinds[0], olmKinds[2], olmKinds[3]))
	if !errors.Is(err, errNoOLM) {
		t.Fatalf("error %v, want errNoOLM", err)
	}
	for _, want := range []string{"Subscription.operators.coreos.com/v1alpha1", "OperatorGroup.operators.coreos.com/v1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "CatalogSource") {
		t.Errorf("error %q names a served kind", err)
	}
}

func modes(supported ...operatorsv1alpha1.InstallModeType) []operatorsv1alpha1.InstallMode {
	var all []operatorsv1alpha1.InstallMode
	for _, m := range []operatorsv1alpha1.InstallModeType{
		operatorsv1alpha1.InstallModeTypeOwnNamespace, operatorsv1alpha1.InstallModeTypeSingleNamespace,
		operatorsv1alpha1.InstallModeTypeMultiNamespace, operatorsv1alpha1.InstallModeTypeAllNamespaces,
	} {
		all = append(all, operatorsv1alpha1.InstallMode{Type: m, Supported: slices.Contains(supported, m)})
	}
	return all
}

func group(name string, targets ...string) operatorsv1.OperatorGroup {
	return operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: operatorsv1.OperatorGroupSpec{TargetNamespaces: targets}}
}

func TestPlanOperatorGroup(t *testing.T) {
	all, own := operatorsv1alpha1.InstallModeTypeAllNamespaces, operatorsv1alpha1.InstallModeTypeOwnNamespace
	selector := group("by-label")
	selector.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
	for _, tc := range []struct {
		name     string
		modes    []operatorsv1alpha1.InstallMode
		existing []operatorsv1.OperatorGroup
		want     OperatorGroupPlan
		err      string
	}{
		{name: "AllNamespaces only, none there: a global group", modes: modes(all), want: OperatorGroupPlan{Create: true}},
		{name: "both supported: AllNamespaces wins", modes: modes(all, own), want: OperatorGroupPlan{Create: true}},
		{name: "OwnNamespace only: the namespace itself", modes: modes(own), want: OperatorGroupPlan{Create: true, TargetNamespaces: []string{"linstor"}}},
		{name: "SingleNamespace only", modes: modes(operatorsv1alpha1.InstallModeTypeSingleNamespace), err: "supports neither AllNamespaces nor OwnNamespace (it supports SingleNamespace)"},
		{name: "a global group is there", modes: modes(all), existing: []operatorsv1.OperatorGroup{group("global")}, want: OperatorGroupPlan{Existing: "global"}},
		{name: "an own-namespace group and an AllNamespaces CSV", modes: modes(all), existing: []operatorsv1.OperatorGroup{group("own", "linstor")},
			err: "OperatorGroup linstor/own is for install mode OwnNamespace, which the CSV does not support (it supports AllNamespaces)"},
		{name: "an own-namespace group and an OwnNamespace CSV", modes: modes(own), existing: []operatorsv1.OperatorGroup{group("own", "linstor")}, want: OperatorGroupPlan{Existing: "own"}},
		{name: "a group for another namespace", modes: modes(own), existing: []operatorsv1.OperatorGroup{group("single", "other")}, err: "install mode SingleNamespace"},
		{name: "a group for two namespaces", modes: modes(all), existing: []operatorsv1.OperatorGroup{group("multi", "a", "b")}, err: "install mode MultiNamespace"},
		{name: "a group by label selector", modes: modes(all), existing: []operatorsv1.OperatorGroup{selector}, err: "selects its target namespaces by label"},
		{name: "two groups", modes: modes(all), existing: []operatorsv1.OperatorGroup{group("a"), group("b")}, err: "namespace linstor has 2 OperatorGroups (a, b)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PlanOperatorGroup("linstor", tc.modes, tc.existing)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// The project's CSV supports AllNamespaces only (OLM's condition for conversion
// webhooks), so run-bundle makes a global OperatorGroup for it.
func TestPlanOperatorGroupForProjectCSV(t *testing.T) {
	b, err := ReadBundle(filepath.Join(repoRoot(t), "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := PlanOperatorGroup("linstor", b.CSV.Spec.InstallModes, nil)
	if err != nil || !reflect.DeepEqual(got, OperatorGroupPlan{Create: true}) {
		t.Errorf("got %+v, %v; want a new OperatorGroup with no target namespaces", got, err)
	}
}

func TestInstallPlanToApprove(t *testing.T) {
	const sub = types.UID("sub-uid")
	t0 := metav1.NewTime(time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC))
	plan := func(name string, owner types.UID, approval operatorsv1alpha1.Approval, approved bool, created metav1.Time, csvs ...string) operatorsv1alpha1.InstallPlan {
		ip := operatorsv1alpha1.InstallPlan{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created},
			Spec:       operatorsv1alpha1.InstallPlanSpec{ClusterServiceVersionNames: csvs, Approval: approval, Approved: approved},
		}
		if owner != "" {
			ip.OwnerReferences = []metav1.OwnerReference{{Kind: "Subscription", Name: "p", UID: owner}}
		}
		return ip
	}
	manual := operatorsv1alpha1.ApprovalManual
	later := metav1.NewTime(t0.Add(time.Minute))
	for _, tc := range []struct {
		name  string
		plans []operatorsv1alpha1.InstallPlan
		want  string
	}{
		{name: "none yet"},
		{name: "the starting CSV's plan", plans: []operatorsv1alpha1.InstallPlan{
			plan("install-up", sub, manual, false, t0, "p.v2"),
			plan("install-start", sub, manual, false, t0, "p.v1"),
		}, want: "install-start"},
		{name: "a plan with the starting CSV among others", plans: []operatorsv1alpha1.InstallPlan{
			plan("install-deps", sub, manual, false, t0, "dep.v1", "p.v1"),
		}, want: "install-deps"},
		{name: "only an upgrade plan", plans: []operatorsv1alpha1.InstallPlan{plan("install-up", sub, manual, false, t0, "p.v2")}},
		{name: "already approved", plans: []operatorsv1alpha1.InstallPlan{plan("install-start", sub, manual, true, t0, "p.v1")}},
		{name: "automatic plan", plans: []operatorsv1alpha1.InstallPlan{plan("install-start", sub, operatorsv1alpha1.ApprovalAutomatic, false, t0, "p.v1")}},
		{name: "another Subscription's plan", plans: []operatorsv1alpha1.InstallPlan{plan("install-other", "other-uid", manual, false, t0, "p.v1")}},
		{name: "no owner", plans: []operatorsv1alpha1.InstallPlan{plan("install-orphan", "", manual, false, t0, "p.v1")}},
		{name: "two candidates: the newest", plans: []operatorsv1alpha1.InstallPlan{
			plan("install-b", sub, manual, false, later, "p.v1"),
			plan("install-a", sub, manual, false, t0, "p.v1"),
		}, want: "install-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := InstallPlanToApprove(tc.plans, sub, "p.v1")
			if name := ""; got != nil {
				name = got.Name
				if name != tc.want {
					t.Errorf("approves %q, want %q", name, tc.want)
				}
			} else if tc.want != "" {
				t.Errorf("approves nothing, want %q", tc.want)
			}
		})
	}
}

func TestDiagnose(t *testing.T) {
	manual := operatorsv1alpha1.ApprovalManual
	noStatus := &operatorsv1alpha1.Subscription{}
	pending := &operatorsv1alpha1.Subscription{Status: operatorsv1alpha1.SubscriptionStatus{
		State: operatorsv1alpha1.SubscriptionStateUpgradePending,
		Conditions: []operatorsv1alpha1.SubscriptionCondition{
			{Type: operatorsv1alpha1.SubscriptionResolutionFailed, Status: "True", Reason: "ConstraintsNotSatisfiable", Message: "no operators found"},
			{Type: operatorsv1alpha1.SubscriptionCatalogSourcesUnhealthy, Status: "False", Reason: "AllCatalogSourcesHealthy"},
		},
	}}
	csv := func(phase operatorsv1alpha1.ClusterServiceVersionPhase) *operatorsv1alpha1.ClusterServiceVersion {
		return &operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Name: "p.v1"},
			Status: operatorsv1alpha1.ClusterServiceVersionStatus{Phase: phase, Reason: "InstallWaiting", Message: "installing: waiting for deployment"}}
	}
	for _, tc := range []struct {
		name string
		sub  *operatorsv1alpha1.Subscription
		csv  *operatorsv1alpha1.ClusterServiceVersion
		want []string
		not  []string
	}{
		{name: "no catalog operator", sub: noStatus, want: []string{"no OLM catalog operator processed the Subscription in 30s", "catalog operator running"}},
		{name: "resolution failed", sub: pending, want: []string{"UpgradePending and its CSV does not exist", "OLM made no InstallPlan", "ResolutionFailed: ConstraintsNotSatisfiable no operators found"}, not: []string{"AllCatalogSourcesHealthy"}},
		{name: "no olm operator", sub: pending, csv: csv(operatorsv1alpha1.CSVPhaseNone), want: []string{"the CSV p.v1 exists but has no phase after 30s", "olm operator running"}},
		{name: "still installing", sub: pending, csv: csv(operatorsv1alpha1.CSVPhaseInstalling), want: []string{"the CSV p.v1 is still Installing (InstallWaiting: installing: waiting for deployment)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Diagnose(tc.sub, tc.csv, manual, 30*time.Second)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q does not say %q", got, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("%q says %q", got, n)
				}
			}
		})
	}
}

func TestPhaseChangeString(t *testing.T) {
	p := PhaseChange{After: 12340 * time.Millisecond, Phase: operatorsv1alpha1.CSVPhasePending, Reason: "RequirementsUnknown", Message: "requirements not yet checked"}
	if got, want := p.String(), "   12.3s  CSV phase Pending (RequirementsUnknown: requirements not yet checked)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := (PhaseChange{After: time.Second, Phase: operatorsv1alpha1.CSVPhaseSucceeded}).String(), "    1.0s  CSV phase Succeeded"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
