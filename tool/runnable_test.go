package tool

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
)

// TestEveryDefinitionValidatesOrRuns walks the examples, the conformance
// corpus and the reference's own examples: each either fails validation
// (loading, or CheckRunnable) with located reasons, or binds with values
// of its parameters' types and gives its shell or Python commands that
// parse. A definition that validates must be able to run.
func TestEveryDefinitionValidatesOrRuns(t *testing.T) {
	testenv.NeedCommand(t, "bash")
	testenv.NeedCommand(t, "python3")
	py := "python3"
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		py = "/usr/bin/python3"
	}
	var files []string
	for _, g := range []string{"../examples/tools/*.yaml", "testdata/corpus/complete/*.yaml", "testdata/spec/*.yaml"} {
		m, _ := filepath.Glob(g)
		if len(m) == 0 {
			t.Fatalf("no files match %s", g)
		}
		files = append(files, m...)
	}
	ran, refused := 0, 0
	for _, f := range files {
		def, err := Load(f, ScopePath)
		if err != nil {
			checkLocated(t, f, err)
			refused++
			continue
		}
		if def.Type == "alias" {
			base := siblingTool(t, filepath.Dir(f), def.BaseTool)
			if base == nil {
				t.Errorf("%s: alias of %s, which is not beside it", f, def.BaseTool)
				continue
			}
			def = MergeAlias(def, base)
		}
		if diags := CheckRunnable(def, nil); len(diags) > 0 {
			for _, d := range diags {
				if d.Pos.Line < 1 || d.Pos.File == "" {
					t.Errorf("%s: not located: %+v", f, d)
				}
			}
			refused++
			continue
		}
		b, err := Bind(def, sampleInput(def), BindEnv{Workspace: "/w", Home: "/home/u"})
		if err != nil {
			t.Errorf("%s: validates, but does not bind: %v", f, err)
			continue
		}
		for _, st := range b.Steps {
			for _, c := range []*BoundCommand{&st.BoundCommand, st.Fallback} {
				if c == nil || c.tmpl == nil {
					continue
				}
				argv, _, err := c.Resolve(map[string]StepOutput{})
				if err != nil {
					t.Errorf("%s: step %s: %v", f, st.Name, err)
					continue
				}
				var check *exec.Cmd
				switch c.Syntax {
				case SyntaxBash, SyntaxSh:
					check = exec.Command("bash", "-n", "-c", argv[len(argv)-1])
				case SyntaxPython:
					check = exec.Command(py, "-c", "import ast, sys; ast.parse(sys.argv[1])", argv[len(argv)-1])
				default:
					continue
				}
				if out, err := check.CombinedOutput(); err != nil {
					t.Errorf("%s: step %s does not parse: %v\n%s\n%s", f, st.Name, err, out, argv[len(argv)-1])
				}
			}
		}
		ran++
	}
	t.Logf("%d definitions run, %d refused with located reasons", ran, refused)
	if ran == 0 || refused == 0 {
		t.Errorf("ran %d, refused %d: the walk is not walking", ran, refused)
	}
}

// siblingTool loads the first definition in dir named name.
func siblingTool(t *testing.T, dir, name string) *Definition {
	m, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range m {
		if d, err := Load(f, ScopePath); err == nil && d.Name == name && d.Type != "alias" {
			return d
		}
	}
	return nil
}

// sampleInput gives every required parameter without a default a value
// of its type: an example, an allowed value, or text with quotes, a
// backslash and a line break.
func sampleInput(d *Definition) Input {
	in := Input{}
	for _, p := range d.Parameters {
		if !p.Required || p.HasDefault || d.DefaultParameters[p.Name] != "" {
			continue
		}
		switch {
		case len(p.Examples) > 0:
			in[p.Name] = normalizeJSON(p.Examples[0])
		case p.Validation != nil && len(p.Validation.Enum) > 0:
			in[p.Name] = normalizeJSON(p.Validation.Enum[0])
		case p.Type == TypeNumber:
			in[p.Name] = 3.0
		case p.Type == TypeBoolean:
			in[p.Name] = true
		case p.Type == TypeArray:
			in[p.Name] = []any{"a b", "c"}
		case p.Type == TypeObject:
			in[p.Name] = map[string]any{"k": "v"}
		case p.Validation != nil && p.Validation.Pattern != "":
			in[p.Name] = "sample"
		default:
			in[p.Name] = "it's a \"sample\"\\ with\na line break"
		}
	}
	return in
}

func TestCheckRunnable(t *testing.T) {
	missing := func(prog string) error {
		if strings.Contains(prog, "ruby") {
			return errors.New("not here")
		}
		return nil
	}
	for _, c := range []struct {
		name, yaml, want string
	}{
		{"cmd", "cmd: dir\n", "2:1: cmd: runs Windows CMD"},
		{"windows only", "bash: echo\nplatforms: [windows]\n", "3:12: the tool lists platforms [windows], which do not include linux"},
		{"commands for windows", "commands:\n  platforms:\n    windows: dir\n", "2:1: commands has no entry for linux, unix or default"},
		{"interpreter not here", "script: puts 1\nshell: ruby\n", "2:1: script (shell ruby) runs ruby, which is not found"},
		{"step cmd", "steps:\n  - name: s\n    cmd: dir\n", "3:5: step s: cmd: runs Windows CMD"},
		{"node module in a transform", "bash: echo {D}\nparameters:\n  D: {description: d, default: ., transform: path.normalize(value)}\n", `4:3: the transform of parameter D fails for the value ".": ReferenceError: path is not defined`},
		{"runs", "bash: echo\nplatforms: [linux, windows]\n", ""},
		{"interpreter in the image", "script: puts 1\nshell: ruby\nsecurity: {isolation: container}\n", ""},
	} {
		def, err := Parse([]byte("description: d\n"+c.yaml), "t.yaml")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		def.Source.Path = "t.yaml"
		diags := CheckRunnable(def, missing)
		var got []string
		for _, d := range diags {
			got = append(got, d.String())
		}
		all := strings.Join(got, "\n")
		switch {
		case c.want == "" && len(diags) > 0:
			t.Errorf("%s: %s", c.name, all)
		case c.want != "" && !strings.Contains(all, "t.yaml:"+c.want):
			t.Errorf("%s: got %q, want %s", c.name, all, c.want)
		}
	}
}
