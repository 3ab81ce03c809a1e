package webhooks

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Values the operator copies into pods and Services are checked here as Kubernetes
// checks them, with apimachinery's functions: otherwise the LinstorCluster is
// accepted and the Deployment or DaemonSet rendered from it is refused later, out of
// the user's sight.

// validateComponent checks the pod-level fields of one component.
func validateComponent(path *field.Path, c *linstorv1.ComponentSpec) field.ErrorList {
	if c == nil {
		return nil
	}
	errs := validatePodTemplatePatch(path.Child("podTemplate"), c.PodTemplate)
	errs = append(errs, metav1validation.ValidateLabels(c.NodeSelector, path.Child("nodeSelector"))...)
	errs = append(errs, validateTolerations(path.Child("tolerations"), c.Tolerations)...)
	errs = append(errs, validateResources(path.Child("resources"), c.Resources)...)
	errs = append(errs, validateAffinity(path.Child("affinity"), c.Affinity)...)
	return errs
}

var (
	tolerationOperators = sets.New(corev1.TolerationOpEqual, corev1.TolerationOpExists, "")
	taintEffects        = sets.New(corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute, "")
)

// validateTolerations follows the rules the API server applies to pod tolerations.
func validateTolerations(path *field.Path, tolerations []corev1.Toleration) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		at := path.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, at.Child("key"))...)
		} else if t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(at.Child("operator"), t.Operator, "operator must be Exists when key is empty, which means match all values and all keys"))
		}
		if !tolerationOperators.Has(t.Operator) {
			errs = append(errs, field.NotSupported(at.Child("operator"), t.Operator, []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		if t.Operator == corev1.TolerationOpExists && t.Value != "" {
			errs = append(errs, field.Invalid(at.Child("value"), t.Value, "value must be empty when operator is Exists"))
		}
		if t.Operator != corev1.TolerationOpExists {
			for _, msg := range validation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(at.Child("value"), t.Value, msg))
			}
		}
		if !taintEffects.Has(t.Effect) {
			errs = append(errs, field.NotSupported(at.Child("effect"), t.Effect, []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(at.Child("effect"), t.Effect, "effect must be NoExecute when tolerationSeconds is set"))
		}
	}
	return errs
}

// validateResources: quantities are not negative, names are qualified, and a request
// does not exceed its limit (the pod would be refused).
func validateResources(path *field.Path, r *corev1.ResourceRequirements) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	for _, part := range []struct {
		kind string
		list corev1.ResourceList
	}{{"limits", r.Limits}, {"requests", r.Requests}} {
		kind := part.kind
		for _, name := range slices.Sorted(maps.Keys(part.list)) {
			q := part.list[name]
			at := path.Child(kind).Key(string(name))
			for _, msg := range validation.IsQualifiedName(string(name)) {
				errs = append(errs, field.Invalid(at, name, msg))
			}
			if q.Sign() < 0 {
				errs = append(errs, field.Invalid(at, q.String(), "must be greater than or equal to 0"))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.Requests)) {
		request := r.Requests[name]
		if limit, ok := r.Limits[name]; ok && request.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(path.Child("requests").Key(string(name)), request.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
	}
	return errs
}

// validateAffinity checks the node selector requirements of node affinity (operators,
// values, label keys) and the label selectors of pod (anti-)affinity.
func validateAffinity(path *field.Path, a *corev1.Affinity) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		at := path.Child("nodeAffinity")
		if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
			terms := at.Child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
			if len(req.NodeSelectorTerms) == 0 {
				errs = append(errs, field.Required(terms, "must have at least one node selector term"))
			}
			for i, term := range req.NodeSelectorTerms {
				errs = append(errs, validateNodeSelectorTerm(terms.Index(i), term)...)
			}
		}
		for i, pref := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			p := at.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			if pref.Weight < 1 || pref.Weight > 100 {
				errs = append(errs, field.Invalid(p.Child("weight"), pref.Weight, "must be in the range 1-100"))
			}
			errs = append(errs, validateNodeSelectorTerm(p.Child("preference"), pref.Preference)...)
		}
	}
	podTerms := func(at *field.Path, required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) {
		opts := metav1validation.LabelSelectorValidationOptions{}
		check := func(p *field.Path, t corev1.PodAffinityTerm) {
			errs = append(errs, metav1validation.ValidateLabelSelector(t.LabelSelector, opts, p.Child("labelSelector"))...)
			errs = append(errs, metav1validation.ValidateLabelSelector(t.NamespaceSelector, opts, p.Child("namespaceSelector"))...)
			if t.TopologyKey == "" {
				errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
			} else {
				errs = append(errs, metav1validation.ValidateLabelName(t.TopologyKey, p.Child("topologyKey"))...)
			}
		}
		for i, t := range required {
			check(at.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i), t)
		}
		for i, w := range preferred {
			p := at.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			if w.Weight < 1 || w.Weight > 100 {
				errs = append(errs, field.Invalid(p.Child("weight"), w.Weight, "must be in the range 1-100"))
			}
			check(p.Child("podAffinityTerm"), w.PodAffinityTerm)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		podTerms(path.Child("podAffinity"), pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		podTerms(path.Child("podAntiAffinity"), pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	return errs
}

func validateNodeSelectorTerm(path *field.Path, term corev1.NodeSelectorTerm) field.ErrorList {
	var errs field.ErrorList
	for i, req := range term.MatchExpressions {
		at := path.Child("matchExpressions").Index(i)
		errs = append(errs, metav1validation.ValidateLabelName(req.Key, at.Child("key"))...)
		errs = append(errs, validateRequirementValues(at, string(req.Operator), req.Values, true)...)
	}
	for i, req := range term.MatchFields {
		at := path.Child("matchFields").Index(i)
		if req.Key != "metadata.name" {
			errs = append(errs, field.NotSupported(at.Child("key"), req.Key, []string{"metadata.name"}))
		}
		if req.Operator != corev1.NodeSelectorOpIn && req.Operator != corev1.NodeSelectorOpNotIn {
			errs = append(errs, field.NotSupported(at.Child("operator"), req.Operator, []corev1.NodeSelectorOperator{corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn}))
		} else if len(req.Values) != 1 {
			errs = append(errs, field.Required(at.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
		}
	}
	return errs
}

// validateRequirementValues: In/NotIn need values, Exists/DoesNotExist take none,
// Gt/Lt (node affinity only) take one integer.
func validateRequirementValues(path *field.Path, op string, values []string, numeric bool) field.ErrorList {
	var errs field.ErrorList
	switch op {
	case "In", "NotIn":
		if len(values) == 0 {
			errs = append(errs, field.Required(path.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
		}
	case "Exists", "DoesNotExist":
		if len(values) > 0 {
			errs = append(errs, field.Forbidden(path.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
		}
	case "Gt", "Lt":
		if !numeric {
			return field.ErrorList{field.NotSupported(path.Child("operator"), op, []string{"In", "NotIn", "Exists", "DoesNotExist"})}
		}
		if len(values) != 1 {
			return field.ErrorList{field.Required(path.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'")}
		}
		if _, err := strconv.ParseInt(values[0], 10, 64); err != nil {
			errs = append(errs, field.Invalid(path.Child("values").Index(0), values[0], "must be an integer when `operator` is 'Lt' or 'Gt'"))
		}
		return errs
	default:
		return field.ErrorList{field.NotSupported(path.Child("operator"), op, []string{"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})}
	}
	for i, v := range values {
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, field.Invalid(path.Child("values").Index(i), v, msg))
		}
	}
	return errs
}

// validateSecretName: a Secret's name is a DNS subdomain.
func validateSecretName(path *field.Path, name string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

// validateHTTPURL: an absolute http(s) URL with a host.
func validateHTTPURL(path *field.Path, raw string) field.ErrorList {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(path, raw, "must be an http:// or https:// URL: "+err.Error())}
	case u.Scheme != "http" && u.Scheme != "https":
		return field.ErrorList{field.Invalid(path, raw, "must be an http:// or https:// URL")}
	case u.Hostname() == "":
		return field.ErrorList{field.Invalid(path, raw, "must name a host, such as https://linstor.example.com:3371")}
	}
	return nil
}

// validateDatabaseURL: LINSTOR reaches an external database by JDBC
// (jdbc:<driver>://host[:port]/database) or etcd (etcd://host:port[,host:port...]).
func validateDatabaseURL(path *field.Path, raw string) field.ErrorList {
	rest, jdbc := strings.CutPrefix(raw, "jdbc:")
	if jdbc {
		driver, _, ok := strings.Cut(rest, ":")
		if !ok || driver == "" {
			return field.ErrorList{field.Invalid(path, raw, "must be jdbc:<driver>://<host>/<database>")}
		}
		rest = strings.TrimPrefix(rest, driver+":")
	}
	u, err := url.Parse(rest)
	if err != nil {
		return field.ErrorList{field.Invalid(path, raw, "must be a JDBC or etcd URL: "+err.Error())}
	}
	if !jdbc && u.Scheme != "etcd" {
		return field.ErrorList{field.Invalid(path, raw, "must be a JDBC (jdbc:...) or etcd (etcd://...) URL")}
	}
	if u.Host == "" {
		return field.ErrorList{field.Invalid(path, raw, "must name the database's host, such as jdbc:postgresql://db.example.com/linstor or etcd://etcd-0:2379")}
	}
	for _, host := range strings.Split(u.Host, ",") {
		if h, _, err := splitHostPort(host); err != nil || h == "" {
			return field.ErrorList{field.Invalid(path, raw, fmt.Sprintf("host %q is not host[:port]", host))}
		}
	}
	return nil
}

func splitHostPort(hostport string) (string, string, error) {
	u, err := url.Parse("//" + hostport)
	if err != nil {
		return "", "", err
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", "", fmt.Errorf("port %q out of range", p)
		}
	}
	return u.Hostname(), u.Port(), nil
}
