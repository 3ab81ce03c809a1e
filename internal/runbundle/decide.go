package runbundle

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// ParseApproval checks the APPROVAL value.
func ParseApproval(s string) (operatorsv1alpha1.Approval, error) {
	switch a := operatorsv1alpha1.Approval(s); a {
	case operatorsv1alpha1.ApprovalAutomatic, operatorsv1alpha1.ApprovalManual:
		return a, nil
	}
	return "", fmt.Errorf("APPROVAL %q: must be %s or %s", s, operatorsv1alpha1.ApprovalAutomatic, operatorsv1alpha1.ApprovalManual)
}

// olmKinds are the OLM kinds run-bundle creates, approves or waits for; without their
// CRDs OLM is not installed.
var olmKinds = []schema.GroupVersionKind{
	operatorsv1alpha1.SchemeGroupVersion.WithKind(operatorsv1alpha1.CatalogSourceKind),
	operatorsv1alpha1.SchemeGroupVersion.WithKind(operatorsv1alpha1.SubscriptionKind),
	operatorsv1alpha1.SchemeGroupVersion.WithKind(operatorsv1alpha1.InstallPlanKind),
	operatorsv1alpha1.SchemeGroupVersion.WithKind(operatorsv1alpha1.ClusterServiceVersionKind),
	operatorsv1.SchemeGroupVersion.WithKind(operatorsv1.OperatorGroupKind),
}

// errNoOLM says the cluster has not all of OLM's CRDs.
var errNoOLM = errors.New("OLM is not installed in this cluster")

// CheckOLMCRDs returns errNoOLM naming every OLM kind the API server does not serve.
func CheckOLMCRDs(mapper meta.RESTMapper) error {
	var missing []string
	for _, gvk := range olmKinds {
		if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); meta.IsNoMatchError(err) {
			missing = append(missing, gvk.Kind+"."+gvk.GroupVersion().String())
		} else if err != nil {
			return fmt.Errorf("looking up %s: %w", gvk, err)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: the API server has no CRD for %s (install OLM first, for example its quickstart crds.yaml and olm.yaml)",
			errNoOLM, strings.Join(missing, ", "))
	}
	return nil
}

// OperatorGroupPlan is what to do about the install namespace's OperatorGroup.
type OperatorGroupPlan struct {
	// Create is true when the namespace has none: run-bundle creates one with TargetNamespaces.
	Create bool
	// TargetNamespaces of the OperatorGroup to create; empty means all namespaces.
	TargetNamespaces []string
	// Existing names the namespace's OperatorGroup when it has one that fits.
	Existing string
}

// PlanOperatorGroup decides the install namespace's OperatorGroup from the CSV's supported
// install modes: AllNamespaces first (an OperatorGroup with no targets), else OwnNamespace.
// An existing OperatorGroup is used if the CSV supports what it targets; OLM would fail the
// CSV otherwise, so that is refused here with the reason.
func PlanOperatorGroup(namespace string, modes []operatorsv1alpha1.InstallMode, existing []operatorsv1.OperatorGroup) (OperatorGroupPlan, error) {
	supported := map[operatorsv1alpha1.InstallModeType]bool{}
	for _, m := range modes {
		supported[m.Type] = m.Supported
	}
	switch len(existing) {
	case 0:
	case 1:
		og := existing[0]
		mode, err := operatorGroupMode(namespace, og)
		if err != nil {
			return OperatorGroupPlan{}, err
		}
		if !supported[mode] {
			return OperatorGroupPlan{}, fmt.Errorf("OperatorGroup %s/%s is for install mode %s, which the CSV does not support (it supports %s): use another NAMESPACE",
				namespace, og.Name, mode, supportedModes(modes))
		}
		return OperatorGroupPlan{Existing: og.Name}, nil
	default:
		names := make([]string, 0, len(existing))
		for _, og := range existing {
			names = append(names, og.Name)
		}
		return OperatorGroupPlan{}, fmt.Errorf("namespace %s has %d OperatorGroups (%s); OLM installs nothing there until only one is left",
			namespace, len(existing), strings.Join(names, ", "))
	}
	switch {
	case supported[operatorsv1alpha1.InstallModeTypeAllNamespaces]:
		return OperatorGroupPlan{Create: true}, nil
	case supported[operatorsv1alpha1.InstallModeTypeOwnNamespace]:
		return OperatorGroupPlan{Create: true, TargetNamespaces: []string{namespace}}, nil
	}
	return OperatorGroupPlan{}, fmt.Errorf("the CSV supports neither AllNamespaces nor OwnNamespace (it supports %s)", supportedModes(modes))
}

// operatorGroupMode is the install mode an OperatorGroup in namespace stands for, from its
// spec (its status is OLM's and may not be written yet).
func operatorGroupMode(namespace string, og operatorsv1.OperatorGroup) (operatorsv1alpha1.InstallModeType, error) {
	targets := og.Spec.TargetNamespaces
	switch {
	case len(targets) == 0 && og.Spec.Selector == nil:
		return operatorsv1alpha1.InstallModeTypeAllNamespaces, nil
	case len(targets) == 0:
		return "", fmt.Errorf("OperatorGroup %s/%s selects its target namespaces by label; run-bundle cannot tell the install mode: use another NAMESPACE", namespace, og.Name)
	case len(targets) == 1 && targets[0] == namespace:
		return operatorsv1alpha1.InstallModeTypeOwnNamespace, nil
	case len(targets) == 1:
		return operatorsv1alpha1.InstallModeTypeSingleNamespace, nil
	}
	return operatorsv1alpha1.InstallModeTypeMultiNamespace, nil
}

func supportedModes(modes []operatorsv1alpha1.InstallMode) string {
	var s []string
	for _, m := range modes {
		if m.Supported {
			s = append(s, string(m.Type))
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// InstallPlanToApprove picks, among the namespace's InstallPlans, the one to approve for a
// Manual Subscription: not approved yet, owned by the Subscription (OLM adds the owner
// reference) and installing startingCSV. Any other plan, an upgrade to a later CSV for
// example, stays for its owner to approve. Of several candidates (OLM re-resolving) the
// newest wins. Nil means there is nothing to approve yet.
func InstallPlanToApprove(plans []operatorsv1alpha1.InstallPlan, subscription types.UID, startingCSV string) *operatorsv1alpha1.InstallPlan {
	var candidates []*operatorsv1alpha1.InstallPlan
	for i := range plans {
		ip := &plans[i]
		if ip.Spec.Approved || ip.Spec.Approval != operatorsv1alpha1.ApprovalManual {
			continue
		}
		if !slices.Contains(ip.Spec.ClusterServiceVersionNames, startingCSV) {
			continue
		}
		if !slices.ContainsFunc(ip.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == subscription }) {
			continue
		}
		candidates = append(candidates, ip)
	}
	if len(candidates) == 0 {
		return nil
	}
	sort.Slice(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.After(b.CreationTimestamp.Time)
		}
		return a.Name > b.Name
	})
	return candidates[0]
}

// PhaseChange is one CSV phase run-bundle saw, with the time since the install started.
type PhaseChange struct {
	After   time.Duration
	Phase   operatorsv1alpha1.ClusterServiceVersionPhase
	Reason  operatorsv1alpha1.ConditionReason
	Message string
}

func (p PhaseChange) String() string {
	s := fmt.Sprintf("%7.1fs  CSV phase %s", p.After.Seconds(), p.Phase)
	if p.Reason != "" || p.Message != "" {
		s += fmt.Sprintf(" (%s: %s)", p.Reason, p.Message)
	}
	return s
}

// Diagnose explains why the CSV did not reach Succeeded in time, from what OLM wrote: the
// missing piece of OLM is the one whose object has not moved.
func Diagnose(sub *operatorsv1alpha1.Subscription, csv *operatorsv1alpha1.ClusterServiceVersion, approval operatorsv1alpha1.Approval, waited time.Duration) string {
	switch {
	case sub == nil:
		return "the Subscription is gone"
	case sub.Status.State == "" && len(sub.Status.Conditions) == 0:
		return fmt.Sprintf("no OLM catalog operator processed the Subscription in %s (it has no status): is OLM's catalog operator running?", waited)
	case csv == nil:
		var conds []string
		for _, c := range sub.Status.Conditions {
			if c.Status == "True" {
				conds = append(conds, fmt.Sprintf("%s: %s %s", c.Type, c.Reason, c.Message))
			}
		}
		s := fmt.Sprintf("the Subscription is %s and its CSV does not exist", sub.Status.State)
		if approval == operatorsv1alpha1.ApprovalManual && sub.Status.Install == nil {
			s += "; OLM made no InstallPlan to approve"
		}
		if len(conds) > 0 {
			s += "; Subscription conditions: " + strings.Join(conds, "; ")
		}
		return s
	case csv.Status.Phase == operatorsv1alpha1.CSVPhaseNone:
		return fmt.Sprintf("the CSV %s exists but has no phase after %s: is OLM's olm operator running?", csv.Name, waited)
	}
	return fmt.Sprintf("the CSV %s is still %s (%s: %s)", csv.Name, csv.Status.Phase, csv.Status.Reason, csv.Status.Message)
}

// FormatConditions lists a CSV's conditions (its phase history), one per line.
func FormatConditions(csv *operatorsv1alpha1.ClusterServiceVersion) string {
	var b strings.Builder
	for _, c := range csv.Status.Conditions {
		fmt.Fprintf(&b, "  %s  %s  %s: %s\n", c.LastTransitionTime.UTC().Format(time.RFC3339), c.Phase, c.Reason, c.Message)
	}
	return b.String()
}
