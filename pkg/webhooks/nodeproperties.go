package webhooks

import (
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/props"
	"github.com/linstor-operator/linstor-operator/pkg/satellite"
)

// templateVar is what a template may refer to: "$1" (the part of the key "*" matched)
// and "$2" (the value).
var templateVar = regexp.MustCompile(`\$[12]`)

// nameTemplateText is what a nameTemplate may hold besides $1 and $2: characters of a
// LINSTOR property name.
var nameTemplateText = regexp.MustCompile(`^[A-Za-z0-9_./:-]*$`)

// validateNodePropertySources checks what the CRD schema cannot of valueFrom and
// expandFrom. The names an expandFrom generates depend on the node's labels: those
// LINSTOR would refuse are skipped at reconcile time and reported in the
// configuration's status (pkg/satellite). A literal may share a name with a generated
// property: the literal wins on that node.
func validateNodePropertySources(path *field.Path, list []linstorv1.NodeProperty) field.ErrorList {
	var errs field.ErrorList
	for i, p := range list {
		at := path.Index(i)
		if p.ValueFrom != nil && strings.Contains(p.ValueFrom.NodeFieldRef, "*") {
			errs = append(errs, field.Invalid(at.Child("valueFrom", "nodeFieldRef"), p.ValueFrom.NodeFieldRef,
				`valueFrom reads one key, and a "*" is not part of any label or annotation key: use expandFrom to read every key matching a pattern`))
		}
		e := p.ExpandFrom
		if e == nil {
			continue
		}
		at = at.Child("expandFrom")
		if !satellite.ExpandFieldRef.MatchString(e.NodeFieldRef) {
			errs = append(errs, field.Invalid(at.Child("nodeFieldRef"), e.NodeFieldRef,
				`must be metadata.labels['<key>'] or metadata.annotations['<key>'] with exactly one "*" in the key, such as metadata.labels['topology.example.com/*']`))
		}
		for _, t := range []struct{ name, value string }{{"nameTemplate", e.NameTemplate}, {"valueTemplate", e.ValueTemplate}} {
			if rest := templateVar.ReplaceAllString(t.value, ""); strings.Contains(rest, "$") {
				errs = append(errs, field.Invalid(at.Child(t.name), t.value, `may refer only to "$1" (the part of the key "*" matched) and "$2" (the value)`))
			} else if t.name == "nameTemplate" && !nameTemplateText.MatchString(rest) {
				errs = append(errs, field.Invalid(at.Child(t.name), t.value, "besides $1 and $2, may hold only characters of a LINSTOR property name (letters, digits, _./:-)"))
			}
		}
		if e.NameTemplate != "" && e.Delimiter != "" {
			errs = append(errs, field.Invalid(at.Child("delimiter"), e.Delimiter, "nameTemplate makes one property per match, delimiter joins the matches into one: set one of them"))
		}
		if e.NameTemplate == "" {
			// One property of exactly this name: LINSTOR must know the key (its value is
			// known only on the node).
			errs = append(errs, propertyError(path.Index(i), props.Node, p.Name, "", false)...)
		}
	}
	return errs
}
