// Package layering checks the project's import rules from `go list -deps`, so that the
// layout the README describes is enforced, not hoped for:
//   - the operator binary links only api/, pkg/, controllers/, config/crd and
//     internal/manager: never the LINSTOR emulator, a generator or a test harness;
//   - pkg/ is what the binary runs: every pkg/ package is linked by it, and none imports
//     controllers/, internal/, cmd/, hack/ or test/;
//   - the pure planners decide without I/O: neither they nor anything of this module
//     they import reach the Kubernetes or LINSTOR client, an HTTP stack or the
//     operator's writers;
//   - the emulator imports the operator only for facts LINSTOR and the operator share.
package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/linstor-operator/linstor-operator"

// The pure planners: decisions that can lose data, as functions of status, observations
// and time (STYLE.md).
var planners = []string{
	"pkg/lifecycle", "pkg/upgrade", "pkg/discovery", "pkg/satellite", "pkg/netif",
	"pkg/nodeconnection", "pkg/storagepool",
}

// What a planner may not reach, directly or through a package of this module: package
// path prefixes. golinstor's client package is allowed for its plain data types
// (lapi.Node, lapi.ResourceWithVolumes): a planner receives them, never a client.
var plannerForbidden = []string{
	"net/http",
	"sigs.k8s.io/controller-runtime/pkg/client",
	"sigs.k8s.io/controller-runtime/pkg/manager",
	"sigs.k8s.io/controller-runtime/pkg/reconcile",
	"k8s.io/client-go/kubernetes",
	"k8s.io/client-go/rest",
	"k8s.io/client-go/tools",
	module + "/pkg/linstor/observer",
	module + "/pkg/apply",
	module + "/pkg/certs",
	module + "/pkg/render",
	module + "/controllers",
	module + "/internal",
}

// Packages a planner may not reach, matched exactly: pkg/linstor talks to LINSTOR, but
// its subpackage props (the property whitelist) is a pure table.
var plannerForbiddenExact = []string{module + "/pkg/linstor"}

func plannerMayNotReach(path string) (string, bool) {
	if slices.Contains(plannerForbiddenExact, path) {
		return path, true
	}
	return hasPrefix(path, plannerForbidden)
}

// The roots the operator binary may link packages of (config/prometheus and
// config/grafana carry the alerts and the dashboard the operator ships).
var binaryAllowed = []string{"api/", "pkg/", "controllers/", "config/crd", "config/prometheus", "config/grafana", "internal/manager"}

// What the emulator may import of the operator: LINSTOR's property whitelist, the names
// its coupling to the cluster's pods uses, LINSTOR's database CRD group, and version
// parsing.
var emulatorAllowed = []string{"pkg/linstor/props", "pkg/names", "pkg/dbbackup", "pkg/upgrade"}

type listed struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Standard   bool
}

// goList runs `go list -deps -json` (or without -deps) for patterns in the module root.
func goList(t *testing.T, deps bool, patterns ...string) []listed {
	t.Helper()
	args := []string{"list", "-json=ImportPath,Imports,Deps,Standard"}
	if deps {
		args = append(args, "-deps")
	}
	cmd := exec.Command("go", append(args, patterns...)...)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, stderr.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func local(path string) (string, bool) {
	if path == module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

func hasPrefix(path string, prefixes []string) (string, bool) {
	for _, p := range prefixes {
		if path == p || strings.HasPrefix(path, strings.TrimSuffix(p, "/")+"/") {
			return p, true
		}
	}
	return "", false
}

func TestTheOperatorBinaryLinksOnlyWhatItRuns(t *testing.T) {
	linked := map[string]bool{}
	for _, p := range goList(t, true, ".") {
		rel, ok := local(p.ImportPath)
		if !ok || rel == "." {
			continue
		}
		linked[rel] = true
		if _, allowed := hasPrefix(rel, binaryAllowed); !allowed {
			t.Errorf("the operator binary links %s: only %v belong in it (move the importer, or the package)", rel, binaryAllowed)
		}
	}
	if len(linked) < 10 {
		t.Fatalf("go list found only %d packages of the module in the binary: %v", len(linked), linked)
	}
	for _, p := range goList(t, false, "./pkg/...") {
		rel, _ := local(p.ImportPath)
		if !linked[rel] {
			t.Errorf("%s is in pkg/ but the operator binary does not link it: pkg/ is what the operator runs (move it to internal/, hack/ or test/)", rel)
		}
	}
}

func TestPkgImportsNeitherControllersNorInternal(t *testing.T) {
	forbidden := []string{"controllers", "internal", "cmd", "hack", "test"}
	for _, p := range goList(t, false, "./pkg/...") {
		rel, _ := local(p.ImportPath)
		for _, imp := range p.Imports {
			irel, ok := local(imp)
			if !ok {
				continue
			}
			if root, bad := hasPrefix(irel, forbidden); bad {
				t.Errorf("%s imports %s: pkg/ may not import %s/", rel, irel, root)
			}
		}
	}
}

func TestPlannersReachNoClient(t *testing.T) {
	all := goList(t, true, "./pkg/...")
	byPath := map[string]listed{}
	for _, p := range all {
		byPath[p.ImportPath] = p
	}
	checked := 0
	for _, planner := range planners {
		root, ok := byPath[module+"/"+planner]
		if !ok {
			t.Errorf("planner %s does not exist (update the list)", planner)
			continue
		}
		checked++
		// The planner and every package of this module it reaches: their direct
		// imports must avoid the forbidden prefixes.
		reach := []string{root.ImportPath}
		for _, d := range root.Deps {
			if _, ok := local(d); ok {
				reach = append(reach, d)
			}
		}
		sort.Strings(reach)
		for _, pkg := range reach {
			rel, _ := local(pkg)
			if bad, forbidden := plannerMayNotReach(pkg); forbidden {
				t.Errorf("planner %s reaches %s (forbidden: %s)", planner, rel, bad)
				continue
			}
			for _, imp := range byPath[pkg].Imports {
				if bad, forbidden := plannerMayNotReach(imp); forbidden {
					t.Errorf("planner %s: %s imports %s (forbidden: %s)", planner, rel, imp, bad)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no planner checked")
	}
}

func TestTheEmulatorImportsOnlySharedFacts(t *testing.T) {
	for _, p := range goList(t, false, "./internal/emulator") {
		var got []string
		for _, imp := range p.Imports {
			rel, ok := local(imp)
			if !ok {
				continue
			}
			got = append(got, rel)
			if !slices.Contains(emulatorAllowed, rel) {
				t.Errorf("the emulator imports %s: it may import only %v (facts LINSTOR and the operator share)", rel, emulatorAllowed)
			}
		}
		if len(got) == 0 {
			t.Error("the emulator imports nothing of the module: the list above is stale")
		}
	}
}

// TestTheReadmeListsEveryPackage: the README's layout table names every package
// directory, by its path (`pkg/names`) or, under a row for its parent (`controllers/`,
// `cmd/`, `hack/`), by its name.
func TestTheReadmeListsEveryPackage(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(raw), "## Layout")
	if !ok {
		t.Fatal("README.md has no Layout section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	rows := map[string]string{} // first column's paths -> the row
	for _, line := range strings.Split(table, "\n") {
		cols := strings.Split(line, "|")
		if len(cols) < 3 {
			continue
		}
		for _, f := range strings.Split(cols[1], ",") {
			rows[strings.Trim(strings.TrimSpace(f), "`")] = line
		}
	}
	for _, p := range goList(t, false, "./...") {
		rel, _ := local(p.ImportPath)
		if rel == "." {
			continue
		}
		if strings.Contains(table, "`"+rel+"`") || strings.Contains(table, "`"+rel+"/`") {
			continue
		}
		parent, base := path.Split(rel)
		if row, ok := rows[parent]; ok && strings.Contains(row, "`"+base+"`") {
			continue
		}
		t.Errorf("README.md's layout table does not list %s (by path, or by name in the row of %s)", rel, parent)
	}
}

// linstorServices are the golinstor client's services; a call on one whose method does
// not start with Get or List is a write.
var linstorServices = map[string]bool{
	"Nodes": true, "Resources": true, "ResourceDefinitions": true, "ResourceGroups": true, "StoragePoolDefinitions": true,
	"Controller": true, "Connections": true, "Encryption": true, "KeyValueStore": true, "Remote": true, "Backup": true,
	"Events": true, "Vendor": true,
}

// linstorReads are methods of those services that read although their names do not
// say so.
var linstorReads = map[string]bool{"SyncStatus": true}

// unobserved are the packages whose LINSTOR writes concern what the observer does not
// list: the node connection controller reads the connections itself on every pass, the
// backup schedule controller LINSTOR's S3 remotes, schedules and their enables.
var unobserved = []string{"controllers/linstornodeconnection", "controllers/linstorbackupschedule"}

// writerFiles may tell the observer of a write or evacuate a node: they are the writers.
var writerFiles = []string{"controllers/linstorsatellite/writer.go"}

// TestEveryLinstorWriteTellsTheObserver reads the controllers' source: every LINSTOR
// write is sent inside a function given to a writer's send or Send (linstorWriter,
// observer.Writer), which tells the observer; nothing else tells it of a write or
// evacuates a node. A write the observer does not hear of lets a reconciler decide on
// LINSTOR's state from before it.
func TestEveryLinstorWriteTellsTheObserver(t *testing.T) {
	files, err := filepath.Glob("../../controllers/*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	writes := map[string]int{}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		rel := strings.TrimPrefix(file, "../../")
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		isWriter := slices.Contains(writerFiles, rel)
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
			at.Filename = rel
			if !isWriter && sel.Sel.Name == "Wrote" {
				t.Errorf("%s: the observer is told of a write by hand; send the write through a writer", at)
			}
			if x, ok := sel.X.(*ast.Ident); ok && !isWriter && x.Name == "linstor" && sel.Sel.Name == "Evacuate" {
				t.Errorf("%s: linstor.Evacuate outside a writer", at)
			}
			svc, ok := sel.X.(*ast.SelectorExpr)
			if !ok || !linstorServices[svc.Sel.Name] || strings.HasPrefix(sel.Sel.Name, "Get") || strings.HasPrefix(sel.Sel.Name, "List") ||
				linstorReads[sel.Sel.Name] {
				return true
			}
			writes[filepath.Dir(rel)]++
			if !insideSend(stack) && !slices.Contains(unobserved, filepath.Dir(rel)) {
				t.Errorf("%s: LINSTOR write %s.%s is not sent through a writer", at, svc.Sel.Name, sel.Sel.Name)
			}
			return true
		})
	}
	// The satellite: node create, restore, properties, net interfaces, pools, lost,
	// delete; the cluster: the passphrase and the controller's properties.
	if writes["controllers/linstorsatellite"] < 12 || writes["controllers/linstorcluster"] < 3 {
		t.Errorf("found LINSTOR writes %v: the check no longer sees them", writes)
	}
}

// insideSend: the innermost function literal around the node (skipping closures inside
// it, such as ModifyProperties') is an argument of a call of send or Send.
func insideSend(stack []ast.Node) bool {
	for i := len(stack) - 1; i > 0; i-- {
		if _, ok := stack[i].(*ast.FuncLit); !ok {
			continue
		}
		call, ok := stack[i-1].(*ast.CallExpr)
		if !ok {
			continue
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "send" || sel.Sel.Name == "Send") {
			return true
		}
	}
	return false
}
