package webhooks

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/config/crd"
	lossless "github.com/linstor-operator/linstor-operator/pkg/conversion"
	"github.com/linstor-operator/linstor-operator/pkg/crdschema"
)

// One validation whatever the version written: the API server checks a write against
// the schema of the version written, then converts it to v1 and stores it. A write
// through v1alpha1 (whose maps and lists lack v1's patterns and rules) or through the
// conversion annotation (whose content v1alpha1 does not see) would be stored without
// v1's rules ever running. The webhooks are called with the object converted to v1
// (matchPolicy Equivalent), so they run v1's own schema and CEL rules on it, from the
// CRDs built into the binary, and name the field in the version the user wrote.

var (
	hubSchemasOnce sync.Once
	hubSchemas     map[string]*crdschema.Schema
	hubSchemasErr  error
)

func v1Schema(kind string) (*crdschema.Schema, error) {
	hubSchemasOnce.Do(func() { hubSchemas, hubSchemasErr = crdschema.Load(crd.Bases, "bases", linstorv1.GroupVersion.Version) })
	if hubSchemasErr != nil {
		return nil, hubSchemasErr
	}
	s, ok := hubSchemas[kind]
	if !ok {
		return nil, fmt.Errorf("no %s schema for %s", linstorv1.GroupVersion.Version, kind)
	}
	return s, nil
}

// writtenVersion is the API version the client wrote, when the request says.
func writtenVersion(ctx context.Context) string {
	req, err := admission.RequestFromContext(ctx)
	if err != nil || req.RequestKind == nil {
		return ""
	}
	return req.RequestKind.Version
}

// spokePath names, for a path of the converted object, the field the user wrote in
// their version; ok is false for a field only the conversion annotation can carry.
type spokePath func(path string) (string, bool)

// dataPath is where a value v1alpha1 cannot express came from.
var dataPath = field.NewPath("metadata", "annotations").Key(lossless.DataAnnotation)

// hubRules returns the v1 schema and CEL errors of a write made through another
// version (none for a v1 write: the API server has checked it already).
func hubRules(ctx context.Context, kind string, obj, old runtime.Object, paths spokePath) field.ErrorList {
	version := writtenVersion(ctx)
	if version == linstorv1.GroupVersion.Version {
		return nil
	}
	schema, err := v1Schema(kind)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec"), err)}
	}
	newMap, err := specOf(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec"), err)}
	}
	schema.Default(newMap)
	var oldMap map[string]any
	if old != nil {
		if oldMap, err = specOf(old); err != nil {
			return field.ErrorList{field.InternalError(field.NewPath("spec"), err)}
		}
		schema.Default(oldMap)
	}
	var errs field.ErrorList
	for _, e := range schema.Validate(ctx, newMap, oldMap) {
		errs = append(errs, renamed(e, version, paths))
	}
	return errs
}

// renamed moves a v1 error to the field the user wrote, keeping v1's message.
func renamed(e *field.Error, version string, paths spokePath) *field.Error {
	out := *e
	if e.Field == "" || e.Field == "<nil>" || strings.HasPrefix(e.Field, "metadata") || paths == nil {
		return &out
	}
	if p, ok := paths(e.Field); ok {
		out.Field = p
		if p != e.Field {
			out.Detail = strings.TrimSpace(e.Detail + " (checked as linstor.io/v1 " + e.Field + ")")
		}
		return &out
	}
	out.Field = dataPath.String()
	out.Detail = fmt.Sprintf("%s: %s (a linstor.io/v1 field that %s cannot express)", e.Field, e.Detail, version)
	return &out
}

// versionRules is what every write of a kind with a v1alpha1 spoke gets: the
// conversion data check, and v1's rules for a write made through v1alpha1. old is nil
// on create.
func versionRules[HS, HT any](ctx context.Context, kind string, obj, old runtime.Object, paths spokePath) field.ErrorList {
	errs := conversionData[HS, HT](ctx, obj, old)
	return append(errs, hubRules(ctx, kind, obj, old, paths)...)
}

// renameAll renames the webhook's own errors (on v1 paths) for a write made through
// another version.
func renameAll(ctx context.Context, errs field.ErrorList, paths spokePath) field.ErrorList {
	version := writtenVersion(ctx)
	if version == linstorv1.GroupVersion.Version || version == "" {
		return errs
	}
	out := make(field.ErrorList, len(errs))
	for i, e := range errs {
		out[i] = renamed(e, version, paths)
	}
	return out
}

// specOf is the object as JSON-shaped data, without status: status is written through
// its own subresource and not checked on a spec write.
func specOf(obj runtime.Object) (map[string]any, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(u, "status")
	return u, nil
}

// conversionData refuses the conversion annotation on a converted object. It never
// belongs there: the conversion removes it after using it, and leaves it only when it
// cannot be used (lossless.InvalidError says why). Written through v1, it is reserved;
// an object stored with it earlier keeps it as long as it does not change.
func conversionData[HS, HT any](ctx context.Context, obj, old runtime.Object) field.ErrorList {
	value, ok := annotation(obj, lossless.DataAnnotation)
	if !ok {
		return nil
	}
	if writtenVersion(ctx) == linstorv1.GroupVersion.Version {
		if before, had := annotation(old, lossless.DataAnnotation); had && before == value {
			return nil
		}
		return field.ErrorList{field.Forbidden(dataPath, "is reserved: the operator writes it on linstor.io/v1alpha1 objects to keep what v1alpha1 cannot express; remove it")}
	}
	if err := lossless.Validate[HS, HT](value); err != nil {
		return field.ErrorList{field.Invalid(dataPath, "<conversion data>", err.Error())}
	}
	return field.ErrorList{field.Forbidden(dataPath, "could not be applied to this object")}
}

func annotation(obj runtime.Object, key string) (string, bool) {
	if obj == nil {
		return "", false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", false
	}
	v, ok := m.GetAnnotations()[key]
	return v, ok
}
