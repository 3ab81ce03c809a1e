package satellite

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/props"
)

// ExpandFieldRef is the nodeFieldRef of expandFrom: a label or annotation key with one
// "*", split into the text before and after it.
var ExpandFieldRef = regexp.MustCompile(`^metadata\.(labels|annotations)\['([^'*]*)\*([^'*]*)'\]$`)

// PropertyName is the LINSTOR property name pattern of the API (api/v1 Property).
var PropertyName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_./:-]*$`)

// MaxPropertyName is the longest property name the API accepts.
const MaxPropertyName = 256

// DefaultDelimiter joins the values of an expandFrom without nameTemplate.
const DefaultDelimiter = ","

// expand resolves an expandFrom property against node. Matching keys are taken in key
// order: with nameTemplate each makes a property named p.Name+nameTemplate, otherwise
// their values are joined into one property named p.Name. "$1" in a template is the part
// of the key "*" matched, "$2" the value. No match gives no property. A generated name
// LINSTOR would refuse is left out and explained in skipped: LINSTOR refuses a whole
// request for one bad key, so one odd label must not block the node's other properties.
func expand(p linstorv1.NodeProperty, node *corev1.Node) (out []linstorv1.Property, skipped []string) {
	e := p.ExpandFrom
	m := ExpandFieldRef.FindStringSubmatch(e.NodeFieldRef)
	if m == nil {
		return nil, []string{fmt.Sprintf("property %s: expandFrom.nodeFieldRef %q is not metadata.labels['…*…'] or metadata.annotations['…*…']", p.Name, e.NodeFieldRef)}
	}
	source := node.Labels
	if m[1] == "annotations" {
		source = node.Annotations
	}
	prefix, suffix := m[2], m[3]
	keys := make([]string, 0, len(source))
	for k := range source {
		if len(k) >= len(prefix)+len(suffix) && strings.HasPrefix(k, prefix) && strings.HasSuffix(k, suffix) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	sort.Strings(keys)
	valueTemplate := e.ValueTemplate
	if valueTemplate == "" {
		valueTemplate = "$2"
	}
	fill := func(template, key string) string {
		// One pass: a "$2" inside a value is not expanded again.
		return strings.NewReplacer("$1", key[len(prefix):len(key)-len(suffix)], "$2", source[key]).Replace(template)
	}
	if e.NameTemplate == "" {
		delimiter := e.Delimiter
		if delimiter == "" {
			delimiter = DefaultDelimiter
		}
		values := make([]string, len(keys))
		for i, k := range keys {
			values[i] = fill(valueTemplate, k)
		}
		return []linstorv1.Property{{Name: p.Name, Value: strings.Join(values, delimiter)}}, nil
	}
	from := map[string]string{}
	for _, k := range keys {
		name := p.Name + fill(e.NameTemplate, k)
		if why := invalidName(name); why != "" {
			skipped = append(skipped, fmt.Sprintf("property %q (from %s %q of node %s) %s", name, m[1][:len(m[1])-1], k, node.Name, why))
			continue
		}
		if first, dup := from[name]; dup {
			skipped = append(skipped, fmt.Sprintf("property %q from key %q of node %s is also made from key %q, which comes first and is kept", name, k, node.Name, first))
			continue
		}
		from[name] = k
		out = append(out, linstorv1.Property{Name: name, Value: fill(valueTemplate, k)})
	}
	return out, skipped
}

// invalidName says why LINSTOR or the API would refuse a generated property name ("" if
// neither does).
func invalidName(name string) string {
	switch {
	case len(name) > MaxPropertyName:
		return fmt.Sprintf("is longer than %d characters", MaxPropertyName)
	case !PropertyName.MatchString(name):
		return "is not a property name (letters, digits and _./:- only, starting with a letter or digit)"
	}
	if err := props.CheckDelete(props.Node, name); err != nil {
		return "is refused: " + err.Error()
	}
	return ""
}
