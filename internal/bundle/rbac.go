package bundle

import (
	"fmt"
	"path/filepath"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// RBAC is every ServiceAccount, role and binding of config/rbac as a deployment gets
// them: names carry config/default's prefix, namespaced objects and the subjects they
// name are in one namespace.
type RBAC struct {
	ServiceAccounts     []*corev1.ServiceAccount
	Roles               []*rbacv1.Role
	RoleBindings        []*rbacv1.RoleBinding
	ClusterRoles        []*rbacv1.ClusterRole
	ClusterRoleBindings []*rbacv1.ClusterRoleBinding
}

// ReadRBAC reads config/rbac (the files its kustomization lists) for namespace.
func ReadRBAC(root, namespace string) (*RBAC, error) {
	prefix, err := namePrefix(root)
	if err != nil {
		return nil, err
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	dir := filepath.Join(root, "config", "rbac")
	if err := readYAML(filepath.Join(dir, "kustomization.yaml"), &k); err != nil {
		return nil, err
	}
	out := &RBAC{}
	subjects := func(s []rbacv1.Subject) {
		for i := range s {
			if s[i].Kind == rbacv1.ServiceAccountKind {
				s[i].Name, s[i].Namespace = prefix+s[i].Name, namespace
			}
		}
	}
	for _, f := range k.Resources {
		docs, err := readDocs(filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		for _, doc := range docs {
			var meta struct{ Kind string }
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				return nil, fmt.Errorf("config/rbac/%s: %w", f, err)
			}
			var obj client.Object
			switch meta.Kind {
			case "":
				continue // a comment-only document
			case "ServiceAccount":
				obj = add(&out.ServiceAccounts)
			case "Role":
				obj = add(&out.Roles)
			case "RoleBinding":
				obj = add(&out.RoleBindings)
			case "ClusterRole":
				obj = add(&out.ClusterRoles)
			case "ClusterRoleBinding":
				obj = add(&out.ClusterRoleBindings)
			default:
				return nil, fmt.Errorf("config/rbac/%s: unexpected kind %s", f, meta.Kind)
			}
			if err := yaml.UnmarshalStrict(doc, obj); err != nil {
				return nil, fmt.Errorf("config/rbac/%s: %w", f, err)
			}
			obj.SetName(prefix + obj.GetName())
		}
	}
	for _, sa := range out.ServiceAccounts {
		sa.Namespace = namespace
	}
	for _, r := range out.Roles {
		r.Namespace = namespace
	}
	for _, b := range out.RoleBindings {
		b.Namespace, b.RoleRef.Name = namespace, prefix+b.RoleRef.Name
		subjects(b.Subjects)
	}
	for _, b := range out.ClusterRoleBindings {
		b.RoleRef.Name = prefix + b.RoleRef.Name
		subjects(b.Subjects)
	}
	return out, nil
}

// add appends a new, empty object of list's type to list and returns it.
func add[T any, P interface {
	*T
	client.Object
}](list *[]P) client.Object {
	o := P(new(T))
	*list = append(*list, o)
	return o
}

// Objects lists everything in the order it is applied: accounts and roles before the
// bindings that name them.
func (r *RBAC) Objects() []client.Object {
	var out []client.Object
	for _, o := range r.ServiceAccounts {
		out = append(out, o)
	}
	for _, o := range r.ClusterRoles {
		out = append(out, o)
	}
	for _, o := range r.Roles {
		out = append(out, o)
	}
	for _, o := range r.ClusterRoleBindings {
		out = append(out, o)
	}
	for _, o := range r.RoleBindings {
		out = append(out, o)
	}
	return out
}

// namePrefix is config/default's namePrefix, which kustomize gives every object.
func namePrefix(root string) (string, error) {
	var k struct {
		NamePrefix string `json:"namePrefix"`
	}
	if err := readYAML(filepath.Join(root, "config", "default", "kustomization.yaml"), &k); err != nil {
		return "", err
	}
	return k.NamePrefix, nil
}

// installRBAC splits config/rbac the way OLM installs it.
//   - ClusterRoles bound to an account become clusterPermissions of that account: OLM
//     creates the account, the ClusterRole and its binding.
//   - Roles and RoleBindings ship as bundle objects, which OLM creates in the install
//     namespace as they are. They are NOT CSV permissions: with the AllNamespaces install
//     mode this bundle must use (conversion webhooks), OLM copies the Roles it generates
//     from permissions into ClusterRoles bound cluster-wide (ensureSingletonRBAC in
//     OLM's pkg/controller/operators/olm/operatorgroup.go), which would turn the
//     operator's Secrets access in its namespace into Secrets access everywhere. A
//     ServiceAccount subject without a namespace means the binding's own namespace.
//   - Accounts with no ClusterRole and ClusterRoles bound to nothing ship as objects.
func installRBAC(r *RBAC) (perms []operatorsv1alpha1.StrategyDeploymentPermissions, objects []client.Object, err error) {
	roles := map[string]*rbacv1.ClusterRole{}
	for _, cr := range r.ClusterRoles {
		roles[cr.Name] = cr
	}
	bound := map[string]bool{}
	rules := map[string][]rbacv1.PolicyRule{}
	var accounts []string
	for _, b := range r.ClusterRoleBindings {
		cr := roles[b.RoleRef.Name]
		if b.RoleRef.Kind != "ClusterRole" || cr == nil {
			return nil, nil, fmt.Errorf("ClusterRoleBinding %s names ClusterRole %s, which config/rbac does not define", b.Name, b.RoleRef.Name)
		}
		bound[cr.Name] = true
		for _, s := range b.Subjects {
			if s.Kind != rbacv1.ServiceAccountKind {
				return nil, nil, fmt.Errorf("ClusterRoleBinding %s: OLM can only bind ServiceAccounts, not %s %s", b.Name, s.Kind, s.Name)
			}
			if _, ok := rules[s.Name]; !ok {
				accounts = append(accounts, s.Name)
			}
			rules[s.Name] = append(rules[s.Name], cr.Rules...)
		}
	}
	for _, sa := range accounts {
		perms = append(perms, operatorsv1alpha1.StrategyDeploymentPermissions{ServiceAccountName: sa, Rules: rules[sa]})
	}
	for _, sa := range r.ServiceAccounts {
		if _, ok := rules[sa.Name]; !ok {
			o := sa.DeepCopy()
			o.Namespace = ""
			objects = append(objects, o)
		}
	}
	for _, cr := range r.ClusterRoles {
		if !bound[cr.Name] {
			objects = append(objects, cr.DeepCopy())
		}
	}
	for _, role := range r.Roles {
		o := role.DeepCopy()
		o.Namespace = ""
		objects = append(objects, o)
	}
	for _, b := range r.RoleBindings {
		o := b.DeepCopy()
		o.Namespace = ""
		for i := range o.Subjects {
			if o.Subjects[i].Kind == rbacv1.ServiceAccountKind {
				o.Subjects[i].Namespace = ""
			}
		}
		objects = append(objects, o)
	}
	return perms, objects, nil
}

// bundleFileName names a bundle object's file the way operator-sdk does.
func bundleFileName(o client.Object, kind, group string) string {
	gv := "v1"
	if group != "" {
		gv = group + "_v1"
	}
	return fmt.Sprintf("%s_%s_%s.yaml", o.GetName(), gv, strings.ToLower(kind))
}

// writeRBACObjects writes the objects installRBAC ships besides the CSV.
func writeRBACObjects(dir string, objects []client.Object) error {
	for _, o := range objects {
		var kind, group string
		switch o.(type) {
		case *corev1.ServiceAccount:
			kind = "ServiceAccount"
		case *rbacv1.Role:
			kind, group = "Role", rbacv1.GroupName
		case *rbacv1.RoleBinding:
			kind, group = "RoleBinding", rbacv1.GroupName
		case *rbacv1.ClusterRole:
			kind, group = "ClusterRole", rbacv1.GroupName
		default:
			return fmt.Errorf("unexpected bundle object %T", o)
		}
		apiVersion := "v1"
		if group != "" {
			apiVersion = group + "/v1"
		}
		o.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, kind))
		o.SetLabels(managedByOLM(o.GetLabels()))
		if err := writeYAML(filepath.Join(dir, bundleFileName(o, kind, group)), o); err != nil {
			return err
		}
	}
	return nil
}
