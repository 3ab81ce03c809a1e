package envtest

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RefuseInNamespace installs a ValidatingAdmissionPolicy and its binding, as a
// cluster's policy engine would: creates and updates of resource (in group) in
// namespace ns are refused with message wherever expression is false. The API server
// loads policies asynchronously: the caller waits until a probe of its own is refused.
// remove takes both away (also at the end of the test).
func RefuseInNamespace(t interface{ Cleanup(func()) }, c client.Client, name, ns, group, resource, expression, message string) (remove func(), err error) {
	ctx := context.Background()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}},
				}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: expression, Message: message}},
		}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}},
		}}
	remove = func() {
		_ = c.Delete(ctx, binding)
		_ = c.Delete(ctx, policy)
	}
	if err := c.Create(ctx, policy); err != nil {
		return remove, err
	}
	t.Cleanup(remove)
	return remove, c.Create(ctx, binding)
}
