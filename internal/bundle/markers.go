package bundle

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
)

const csvMarker = "+operator-sdk:csv:customresourcedefinitions:"

// kindInfo is what the markers say about one kind.
type kindInfo struct {
	DisplayName string
	Description string
	Resources   []operatorsv1alpha1.APIResourceReference
	Spec        []operatorsv1alpha1.SpecDescriptor
	Status      []operatorsv1alpha1.StatusDescriptor
}

type apiPackage struct {
	types map[string]*ast.TypeSpec
	docs  map[string]*ast.CommentGroup
}

// readMarkers parses the Go API package in dir and returns, per kind, its descriptors.
func readMarkers(dir string) (map[string]*kindInfo, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*_types.go"))
	if err != nil {
		return nil, err
	}
	pkg := apiPackage{types: map[string]*ast.TypeSpec{}, docs: map[string]*ast.CommentGroup{}}
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				pkg.types[ts.Name.Name] = ts
				doc := ts.Doc
				if doc == nil {
					doc = gd.Doc
				}
				pkg.docs[ts.Name.Name] = doc
			}
		}
	}
	kinds := map[string]*kindInfo{}
	for name, doc := range pkg.docs {
		all := markerArgs(doc)
		if len(all) == 0 {
			continue
		}
		args := all[0]
		info := &kindInfo{DisplayName: args["displayName"], Description: prose(doc)}
		for _, m := range regexp.MustCompile(`\{(\w+),(\w+)\}`).FindAllStringSubmatch(args["resources"], -1) {
			info.Resources = append(info.Resources, operatorsv1alpha1.APIResourceReference{Kind: m[1], Version: m[2], Name: ""})
		}
		if err := pkg.walk(name+"Spec", "", info, "spec"); err != nil {
			return nil, err
		}
		if err := pkg.walk(name+"Status", "", info, "status"); err != nil {
			return nil, err
		}
		kinds[name] = info
	}
	return kinds, nil
}

// walk collects field descriptors of typeName, prefixing paths with prefix.
//
// A field may carry several markers. One without path= describes the field itself;
// one with path=<sub> describes a path below it (sub is "nodeAffinity" or "[0].key"):
// that reaches into types of other packages (corev1.Affinity), and overrides what the
// field's own type says at one place it is used (the marker nearest the root wins).
//
// A fieldDependency x-descriptor is written relative to the object holding the
// described field ("fieldDependency:mode:Secret"), because our types are reused at
// several paths; the console wants the path from spec, so the prefix is added here.
func (p apiPackage) walk(typeName, prefix string, info *kindInfo, part string) error {
	ts, ok := p.types[typeName]
	if !ok {
		return nil
	}
	st, ok := ts.Type.(*ast.StructType)
	if !ok {
		return nil
	}
	for _, field := range st.Fields.List {
		tag := ""
		if field.Tag != nil {
			tag = reflect.StructTag(strings.Trim(field.Tag.Value, "`")).Get("json")
		}
		jsonName := strings.Split(tag, ",")[0]
		inline := strings.Contains(tag, "inline")
		if jsonName == "" && !inline {
			continue
		}
		path := prefix + jsonName
		if inline {
			path = strings.TrimSuffix(prefix, ".")
		}
		var below []map[string]string
		for _, args := range markerArgs(field.Doc) {
			if inline {
				break
			}
			if args["type"] != "spec" && args["type"] != "status" {
				return fmt.Errorf("%s.%s: marker type must be spec or status", typeName, jsonName)
			}
			if args["type"] != part {
				continue
			}
			if _, ok := args["path"]; ok {
				below = append(below, args)
				continue
			}
			info.add(part, path, args, prose(field.Doc))
		}
		if named := structName(field.Type); named != "" {
			next := path + "."
			if inline {
				next = prefix
			}
			if _, list := field.Type.(*ast.ArrayType); list {
				next = path + "[0]." // the console's path for every item of a list
			}
			if err := p.walk(named, next, info, part); err != nil {
				return err
			}
		}
		for _, args := range below {
			sub := args["path"]
			if !strings.HasPrefix(sub, "[") {
				sub = "." + sub
			}
			info.add(part, path+sub, args, args["description"])
		}
	}
	return nil
}

const fieldDependency = "urn:alm:descriptor:com.tectonic.ui:fieldDependency:"

// add records the descriptor of path, replacing one recorded before for the same path.
func (k *kindInfo) add(part, path string, args map[string]string, description string) {
	xd := parseList(args["xDescriptors"])
	holder := ""
	if i := strings.LastIndex(path, "."); i >= 0 {
		holder = path[:i+1]
	}
	for i, x := range xd {
		if rel, ok := strings.CutPrefix(x, fieldDependency); ok {
			xd[i] = fieldDependency + holder + rel
		}
	}
	if part == "spec" {
		d := operatorsv1alpha1.SpecDescriptor{Path: path, DisplayName: args["displayName"], Description: description, XDescriptors: xd}
		for i := range k.Spec {
			if k.Spec[i].Path == path {
				k.Spec[i] = d
				return
			}
		}
		k.Spec = append(k.Spec, d)
		return
	}
	d := operatorsv1alpha1.StatusDescriptor{Path: path, DisplayName: args["displayName"], Description: description, XDescriptors: xd}
	for i := range k.Status {
		if k.Status[i].Path == path {
			k.Status[i] = d
			return
		}
	}
	k.Status = append(k.Status, d)
}

// structName returns the same-package type a field refers to, through pointers and
// slices (not maps: their values get no descriptors).
func structName(expr ast.Expr) string {
	switch t := expr.(type) {
	case *ast.StarExpr:
		return structName(t.X)
	case *ast.ArrayType:
		return structName(t.Elt)
	case *ast.Ident:
		return t.Name
	}
	return ""
}

var markerArg = regexp.MustCompile(`(\w+)=("[^"]*"|\{[^}]*(\}[^}]*)*\}|[^,]+)`)

// markerArgs returns the arguments of every csv marker of doc, in order.
func markerArgs(doc *ast.CommentGroup) []map[string]string {
	if doc == nil {
		return nil
	}
	var out []map[string]string
	for _, c := range doc.List {
		text := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
		rest, ok := strings.CutPrefix(text, csvMarker)
		if !ok {
			continue
		}
		args := map[string]string{}
		for _, m := range markerArg.FindAllStringSubmatch(rest, -1) {
			args[m[1]] = strings.Trim(m[2], `"`)
		}
		out = append(out, args)
	}
	return out
}

func parseList(v string) []string {
	v = strings.Trim(v, "{}")
	if v == "" {
		return nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		out = append(out, strings.Trim(strings.TrimSpace(s), `"`))
	}
	return out
}

// prose is the comment without markers, as one line.
func prose(doc *ast.CommentGroup) string {
	if doc == nil {
		return ""
	}
	var lines []string
	for _, c := range doc.List {
		t := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
		if strings.HasPrefix(t, "+") || t == "" {
			continue
		}
		lines = append(lines, t)
	}
	return strings.Join(lines, " ")
}
