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
		args, ok := markerArgs(doc)
		if !ok {
			continue
		}
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
		if args, ok := markerArgs(field.Doc); ok && !inline {
			xd := parseList(args["xDescriptors"])
			switch args["type"] {
			case "spec":
				if part == "spec" {
					info.Spec = append(info.Spec, operatorsv1alpha1.SpecDescriptor{Path: path, DisplayName: args["displayName"], Description: prose(field.Doc), XDescriptors: xd})
				}
			case "status":
				if part == "status" {
					info.Status = append(info.Status, operatorsv1alpha1.StatusDescriptor{Path: path, DisplayName: args["displayName"], Description: prose(field.Doc), XDescriptors: xd})
				}
			default:
				return fmt.Errorf("%s.%s: marker type must be spec or status", typeName, jsonName)
			}
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
	}
	return nil
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

func markerArgs(doc *ast.CommentGroup) (map[string]string, bool) {
	if doc == nil {
		return nil, false
	}
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
		return args, true
	}
	return nil, false
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
