package sandboxed

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxFuncLines is the house rule's limit on a function's length, from its
// func keyword to its closing brace. A function longer than this mixes
// steps that read better apart: a planning half (pure, table-tested) and an
// applying half (STYLE.md, "Lessons from our own code").
const maxFuncLines = 120

// houseTrees are the trees the limit holds in. Test files are left out:
// a table test's length is its table.
var houseTrees = []string{"cmd", "isolation", "policy", "sandbox", "permissions", "internal/hostsetup", "internal/reown"}

// longFuncs lists the functions (and function literals) of the non-test Go
// files under roots longer than limit lines, as "path:line name (N lines)".
func longFuncs(roots []string, limit int) ([]string, error) {
	fset := token.NewFileSet()
	var long []string
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				var name string
				var body *ast.BlockStmt
				switch fn := n.(type) {
				case *ast.FuncDecl:
					name, body = fn.Name.Name, fn.Body
				case *ast.FuncLit:
					name, body = "func literal", fn.Body
				}
				if body == nil {
					return true
				}
				start := fset.Position(n.Pos()).Line
				if lines := fset.Position(body.Rbrace).Line - start + 1; lines > limit {
					long = append(long, fmt.Sprintf("%s:%d %s (%d lines)", path, start, name, lines))
				}
				return true
			})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(long)
	return long, nil
}

// TestNoLongFunctions holds the house rule: no function in cmd/, isolation/,
// policy/ or sandbox/ is longer than maxFuncLines. Split one that grows past
// it into the part that decides (pure, table-tested) and the part that does.
func TestNoLongFunctions(t *testing.T) {
	long, err := longFuncs(houseTrees, maxFuncLines)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range long {
		t.Errorf("%s: over %d lines; split it into a planning half and an applying half", l, maxFuncLines)
	}
}

// TestLongFuncsCounts checks the counter itself on a file it knows.
func TestLongFuncsCounts(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		// long is 6 lines; short is 2; the literal is 5, inside a 7-line
		// function, and counted on its own.
		"p.go": "package p\n\nfunc short() {\n}\n\nfunc long() {\n" + strings.Repeat("\t_ = 1\n", 4) + "}\n\n" +
			"func outer() {\n\t_ = func() {\n\n\n\n\t}\n}\n",
		// Test files are not counted.
		"p_test.go": "package p\n\nfunc TestX() {\n" + strings.Repeat("\n", 20) + "}\n",
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := longFuncs([]string{dir}, 4)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "p.go")
	want := []string{p + ":13 outer (7 lines)", p + ":14 func literal (5 lines)", p + ":6 long (6 lines)"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("longFuncs = %q, want %q", got, want)
	}
}
