package linstorsatellite

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"
)

// linstorAPIs are the golinstor client's services; a call on one whose method does not
// start with Get or List is a write.
var linstorAPIs = map[string]bool{
	"Nodes": true, "Resources": true, "ResourceDefinitions": true, "ResourceGroups": true, "StoragePoolDefinitions": true,
	"Controller": true, "Connections": true, "Encryption": true, "KeyValueStore": true, "Remote": true, "Backup": true,
}

// TestEveryLinstorWriteGoesThroughTheWriter reads the package's source: every LINSTOR
// write is sent inside linstorWriter.send (which tells the observer), and only the
// writer evacuates or tells the observer of a write.
func TestEveryLinstorWriteGoesThroughTheWriter(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	writes := 0
	for _, pkg := range pkgs {
		for name, f := range pkg.Files {
			var stack []ast.Node
			ast.Inspect(f, func(n ast.Node) bool {
				if n == nil {
					stack = stack[:len(stack)-1]
					return true
				}
				stack = append(stack, n)
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				at := fset.Position(call.Pos())
				if x, ok := sel.X.(*ast.Ident); ok && !strings.HasSuffix(name, "writer.go") &&
					(x.Name == "linstor" && sel.Sel.Name == "Evacuate" || sel.Sel.Name == "Wrote") {
					t.Errorf("%s: %s.%s outside the writer", at, x.Name, sel.Sel.Name)
				}
				if inner, ok := sel.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "Observer" && sel.Sel.Name == "Wrote" {
					t.Errorf("%s: the observer is told of a write by hand", at)
				}
				api, ok := sel.X.(*ast.SelectorExpr)
				if !ok || !linstorAPIs[api.Sel.Name] || strings.HasPrefix(sel.Sel.Name, "Get") || strings.HasPrefix(sel.Sel.Name, "List") {
					return true
				}
				writes++
				if !insideSend(stack) {
					t.Errorf("%s: LINSTOR write %s.%s is not sent through linstorWriter.send", at, api.Sel.Name, sel.Sel.Name)
				}
				return true
			})
		}
	}
	// Node create, restore, properties, net interfaces (3), pools (5), lost, delete.
	if writes < 12 {
		t.Errorf("found %d LINSTOR writes: the check no longer sees them", writes)
	}
}

// insideSend: the innermost function literal around the node is an argument of a call
// of send.
func insideSend(stack []ast.Node) bool {
	for i := len(stack) - 1; i > 0; i-- {
		if _, ok := stack[i].(*ast.FuncLit); !ok {
			continue
		}
		call, ok := stack[i-1].(*ast.CallExpr)
		if !ok {
			continue // a closure inside the literal given to send, e.g. ModifyProperties'
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "send" {
			return true
		}
	}
	return false
}

func TestWriterHoldsWritesWhileFenced(t *testing.T) {
	w := &linstorWriter{}
	if !w.may("node properties") || w.fencedMessage() != "" {
		t.Fatalf("without a fence a write may go: %q", w.fencedMessage())
	}
	w.fence = "the upgrade is in phase Satellites"
	for _, what := range []string{"node properties", "pool thin: creating it", "node properties"} {
		if w.may(what) {
			t.Errorf("%s may go while fenced", what)
		}
	}
	if got, want := w.fencedMessage(), "LINSTOR writes wait (node properties; pool thin: creating it): the upgrade is in phase Satellites"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if w.wrote {
		t.Errorf("a held write counts as written")
	}
}
