package sandboxed

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// module is the import path prefix of this repository's packages.
const module = "github.com/sandboxed-dev/sandboxed/"

// goFiles parses the non-test Go files under root (imports and bodies),
// leaving out testdata.
func goFiles(t *testing.T, root string, fn func(path string, f *ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		fn(path, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// importName is the name a file uses for the package at path, "" when it
// does not import it.
func importName(f *ast.File, path string) string {
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == path {
			if im.Name != nil {
				return im.Name.Name
			}
			return path[strings.LastIndex(path, "/")+1:]
		}
	}
	return ""
}

// Only sandbox/explain fills an explanation (the review `permissions
// explain` prints, read from the plan and the policy's decision as they
// are): elsewhere (the CLI, serve,
// mcp) one is asked for with explain.Tool and rendered, never built from
// parts or from ExplainInput.
func TestOnlyExplainFillsExplanations(t *testing.T) {
	goFiles(t, ".", func(path string, f *ast.File) {
		if filepath.ToSlash(filepath.Dir(path)) == "sandbox/explain" {
			return
		}
		name := importName(f, module+"sandbox/explain")
		if name == "" {
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var sel *ast.SelectorExpr
			switch n := n.(type) {
			case *ast.CompositeLit:
				if len(n.Elts) > 0 { // a zero value fills nothing
					sel, _ = n.Type.(*ast.SelectorExpr)
				}
			case *ast.CallExpr:
				if s, ok := n.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Explain" {
					sel = s
				}
			}
			if sel == nil {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == name {
				switch sel.Sel.Name {
				case "Explain", "ExplainInput", "Explanation", "Point", "Mechanism", "Risk", "Verdict":
					t.Errorf("%s: builds explain.%s; only sandbox/explain fills an explanation (ask it with explain.Tool)", path, sel.Sel.Name)
				}
			}
			return true
		})
	})
}

// permissions is the permission grammar: it imports tool and leaf
// packages of internal/, never the policy, the planner or the backends
// whose decisions explain reads.
func TestPermissionsIsGrammarOnly(t *testing.T) {
	goFiles(t, "permissions", func(path string, f *ast.File) {
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if !strings.HasPrefix(p, module) {
				continue
			}
			if rel := strings.TrimPrefix(p, module); rel != "tool" && !strings.HasPrefix(rel, "internal/") {
				t.Errorf("%s imports %s; permissions may import only tool and internal/ (explain, which reads policy and sandbox, is sandbox/explain)", path, p)
			}
		}
	})
}

// explainInputOwn are the types of sandbox/explain that ExplainInput may
// hold: parts of the document it writes. What it reads of the plan and
// the policy is typed by their packages (isolation.Plan, policy.Decision,
// policy.UndoBounds): a type of its own there is a copy to keep in step.
var explainInputOwn = map[string]bool{"TemplatedPermission": true, "PolicyInfo": true, "ArgumentsInfo": true}

func TestExplainReadsNoCopies(t *testing.T) {
	found := false
	goFiles(t, "sandbox/explain", func(path string, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || ts.Name.Name != "ExplainInput" {
				return true
			}
			found = true
			for _, fld := range ts.Type.(*ast.StructType).Fields.List {
				typ := fld.Type
				for {
					switch tt := typ.(type) {
					case *ast.StarExpr:
						typ = tt.X
						continue
					case *ast.ArrayType:
						typ = tt.Elt
						continue
					case *ast.MapType:
						typ = tt.Value
						continue
					}
					break
				}
				if id, ok := typ.(*ast.Ident); ok && ast.IsExported(id.Name) && !explainInputOwn[id.Name] {
					t.Errorf("%s: ExplainInput holds %s, a type of sandbox/explain's own; read the plan's or the policy's type instead", path, id.Name)
				}
			}
			return false
		})
	})
	if !found {
		t.Fatal("no ExplainInput in sandbox/explain: update this guard to where explain lives")
	}
}
