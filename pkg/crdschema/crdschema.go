// Package crdschema checks an object against one version of a CRD the way the API
// server checks a write made in that version: defaults, the OpenAPI schema, list-map
// and list-set uniqueness, and the CEL rules (transition rules too, with ratcheting on
// update).
//
// The API server checks a write against the schema of the version written only. A
// write through linstor.io/v1alpha1 is converted to v1 and stored without v1's rules
// ever running; the admission webhook runs them here, on the converted object, with the
// same libraries the API server uses.
package crdschema

import (
	"context"
	"fmt"
	"io/fs"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"sigs.k8s.io/yaml"
)

// Schema is one version of one CRD, ready to check objects.
type Schema struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// Load reads every CRD in dir of fsys and returns the schema of version for each kind
// that serves it.
func Load(fsys fs.FS, dir, version string) (map[string]*Schema, error) {
	files, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	out := map[string]*Schema{}
	for _, f := range files {
		raw, err := fs.ReadFile(fsys, dir+"/"+f.Name())
		if err != nil {
			return nil, err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name(), err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Name != version || v.Schema == nil {
				continue
			}
			s, err := New(v.Schema.OpenAPIV3Schema)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", crd.Name, version, err)
			}
			out[crd.Spec.Names.Kind] = s
		}
	}
	return out, nil
}

// New prepares a schema; CEL programs are compiled once, here.
func New(openAPI *apiextensionsv1.JSONSchemaProps) (*Schema, error) {
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(openAPI, &internal, nil); err != nil {
		return nil, err
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return nil, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(&internal)
	if err != nil {
		return nil, err
	}
	return &Schema{structural: structural, validator: validator, cel: cel.NewValidator(structural, true, celconfig.PerCallLimit)}, nil
}

// Default sets the schema's defaults in obj, as the API server does on decoding a write.
func (s *Schema) Default(obj map[string]any) { structuraldefaulting.Default(obj, s.structural) }

// Validate checks obj (old is nil on create) and returns the errors a write in this
// version would get, with the API server's paths and messages. On update, values that
// did not change are not held against the object (the API server's ratcheting), so an
// object stored before a rule existed can still be edited elsewhere.
func (s *Schema) Validate(ctx context.Context, obj, old map[string]any) field.ErrorList {
	var errs field.ErrorList
	var celOptions []cel.Option
	if old == nil {
		errs = append(errs, apiservervalidation.ValidateCustomResource(nil, obj, s.validator)...)
		errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, s.structural, obj)...)
	} else {
		correlated := common.NewCorrelatedObject(obj, old, &model.Structural{Structural: s.structural})
		errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(nil, obj, old, s.validator, apiservervalidation.WithRatcheting(correlated))...)
		if len(structurallisttype.ValidateListSetsAndMaps(nil, s.structural, old)) == 0 {
			errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, s.structural, obj)...)
		}
		celOptions = append(celOptions, cel.WithRatcheting(correlated))
	}
	// Like the API server: CEL rules do not run on an object that is already refused
	// for a missing, mistyped, unsupported or oversized value.
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return errs
		}
	}
	var oldObj any
	if old != nil {
		oldObj = old
	}
	celErrs, _ := s.cel.Validate(ctx, nil, s.structural, obj, oldObj, celconfig.RuntimeCELCostBudget, celOptions...)
	return append(errs, celErrs...)
}
