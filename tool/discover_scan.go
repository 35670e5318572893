package tool

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// DefaultScanDepth is how many folders deep discovery looks below the
// directory it is given (a repository of tools groups them in folders).
const DefaultScanDepth = 4

// ScanOptions steer FindScripts.
type ScanOptions struct {
	// MaxDepth is how many folders below the directory are searched: 0 is
	// the directory alone.
	MaxDepth int
	// Interpreter, when set, runs every script whose #! interpreter is of
	// its family (python3 for python, python3.11, …; node for nodejs)
	// instead of the one its #! line names: a virtual environment's
	// python, which has the packages the scripts import.
	Interpreter string
	// SandboxPath finds a program the way a sandbox's PATH does ("" when
	// it is not there); nil leaves #! programs unresolved.
	SandboxPath func(prog string) string
	// HostPath finds a program on the invoking user's PATH ("" when none).
	HostPath func(prog string) string
}

// ignoredDirs are folders no tool lives in: version control, dependency
// trees and caches.
var ignoredDirs = map[string]string{
	"node_modules":  "installed JavaScript packages",
	"__pycache__":   "Python's bytecode cache",
	"site-packages": "installed Python packages",
	"dist-packages": "installed Python packages",
	"venv":          "a Python virtual environment",
	"env":           "a Python virtual environment",
}

// FindScripts lists the executables under dir that discovery probes:
// regular files (symlinks followed) with an exec bit, and .py or .sh files
// with a #! line, that have no companion NAME.yaml or NAME.yml, in dir and
// in its folders down to o.MaxDepth. Hidden folders (.git, .venv, …),
// virtual environments, node_modules and caches are not searched; folders
// are not followed through symlinks. It reads names, modes and first
// lines only; it runs nothing. Every file it passes over for a reason the
// user may not expect (a companion definition, a module without #! line, a
// folder too deep) comes back as a skipped discovery with the reason.
// Script.File is the path relative to dir.
func FindScripts(dir string, o ScanOptions) ([]Script, []*Discovery, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("discover %s: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, nil, fmt.Errorf("discover %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, nil, fmt.Errorf("discover %s: not a directory", dir)
	}
	sc := &scanner{o: o}
	if err := sc.dir(abs, "", 0); err != nil {
		return nil, nil, err
	}
	sort.Slice(sc.scripts, func(i, j int) bool { return sc.scripts[i].File < sc.scripts[j].File })
	return sc.scripts, sc.skipped, nil
}

type scanner struct {
	o       ScanOptions
	scripts []Script
	skipped []*Discovery
}

func (sc *scanner) skip(file, path, why string) {
	sc.skipped = append(sc.skipped, &Discovery{File: file, Path: path, Result: ResultSkipped, Why: why, Names: []string{}, Probes: []ProbeOutput{}})
}

func (sc *scanner) dir(abs, rel string, depth int) error {
	des, err := os.ReadDir(abs)
	if err != nil {
		if rel == "" {
			return fmt.Errorf("discover %s: %w", abs, err)
		}
		sc.skip(rel+"/", abs, "not searched: "+err.Error())
		return nil
	}
	names := map[string]bool{}
	for _, de := range des {
		names[de.Name()] = true
	}
	pkg := names["__init__.py"]
	for _, de := range des {
		name := de.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		p := filepath.Join(abs, name)
		file := name
		if rel != "" {
			file = rel + "/" + name
		}
		if de.IsDir() {
			switch {
			case ignoredDirs[name] != "" && (name != "env" && name != "venv" || isVenv(p)):
				sc.skip(file+"/", p, "not searched: "+ignoredDirs[name])
			case isVenv(p):
				sc.skip(file+"/", p, "not searched: a Python virtual environment (to run the tools with it: discover --interpreter "+filepath.Join(p, "bin", "python")+")")
			case depth >= sc.o.MaxDepth:
				sc.skip(file+"/", p, fmt.Sprintf("not searched: deeper than --depth %d", sc.o.MaxDepth))
			default:
				if err := sc.dir(p, file, depth+1); err != nil {
					return err
				}
			}
			continue
		}
		ext := filepath.Ext(name)
		switch ext {
		case ".yaml", ".yml", ".json", ".md", ".txt", ".pyc":
			continue
		}
		if name == "__init__.py" {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			sc.skip(file, p, "not searched: a symlink to a folder")
			continue
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		script := ext == ".py" || ext == ".sh"
		exe := fi.Mode()&0o111 != 0
		if !exe && !script {
			continue
		}
		stem := strings.TrimSuffix(name, ext)
		if names[stem+".yaml"] || names[stem+".yml"] {
			sc.skip(file, p, "has a companion definition "+stem+".yaml; that definition is used")
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			sc.skip(file, p, "resolve path: "+err.Error())
			continue
		}
		s := Script{File: file, Path: real}
		interp, err := shebang(real)
		switch {
		case err == nil:
			s.Interpreter = sc.resolve(interp)
		case !exe && pkg && ext == ".py":
			sc.skip(file, real, "a module of the Python package "+filepath.Base(abs)+" (its folder has __init__.py), not a tool: no #! line and not executable")
			continue
		case !exe && ext == ".py":
			sc.skip(file, real, "a module, not a tool: no #! line and not executable (scripts beside it may import it; to make it a tool, add a #! line)")
			continue
		case !exe:
			sc.skip(file, real, err.Error())
			continue
		}
		switch {
		case sc.o.Interpreter != "" && interp != nil && sameFamily(interp, sc.o.Interpreter):
			s.Argv = []string{sc.o.Interpreter, real}
			s.Interpreter = sc.o.Interpreter
		case exe:
			s.Argv = []string{real}
		default:
			s.Argv = append(interp, real)
		}
		s.Reads = []string{real}
		if d := filepath.Dir(real); folderShareable(d) {
			s.Reads = []string{d}
		}
		if s.Interpreter == sc.o.Interpreter && sc.o.Interpreter != "" {
			s.Reads = append(s.Reads, InterpreterRoots(sc.o.Interpreter)...)
		}
		if s.Interpreter != "" && sc.o.HostPath != nil {
			if h := sc.o.HostPath(filepath.Base(s.Interpreter)); h != "" && h != s.Interpreter {
				if r, err := filepath.EvalSymlinks(h); err != nil || r != s.Interpreter {
					s.HostInterpreter = h
				}
			}
		}
		sc.scripts = append(sc.scripts, s)
	}
	return nil
}

// resolve names the program a #! line runs: /usr/bin/env NAME is NAME
// found where a sandbox looks.
func (sc *scanner) resolve(interp []string) string {
	if len(interp) == 2 && filepath.Base(interp[0]) == "env" && !strings.HasPrefix(interp[1], "-") {
		if sc.o.SandboxPath != nil {
			if p := sc.o.SandboxPath(interp[1]); p != "" {
				return p
			}
		}
		return interp[1]
	}
	return interp[0]
}

// sameFamily reports whether a #! line's program and an interpreter are
// of one language: python3 and python, python3.11; node and nodejs.
func sameFamily(interp []string, other string) bool {
	prog := interp[0]
	if len(interp) == 2 && filepath.Base(prog) == "env" {
		prog = interp[1]
	}
	family := func(p string) string {
		b := strings.TrimRight(filepath.Base(p), "0123456789.")
		if b == "nodejs" {
			b = "node"
		}
		return b
	}
	return family(prog) == family(other)
}

// folderShareable reports whether a script's folder may be shown to its
// sandboxes (so the modules beside it import): not the root, a home
// directory or a shared temporary directory, whose other files (~/.ssh)
// are none of the script's business. There the script alone is shown.
func folderShareable(dir string) bool {
	switch dir {
	case "/", "/home", "/root", "/tmp", "/var/tmp", "/dev/shm", "/usr", "/usr/bin", "/usr/local/bin", "/bin":
		return false
	}
	if filepath.Dir(dir) == "/home" {
		return false
	}
	if h, err := os.UserHomeDir(); err == nil && filepath.Clean(h) == dir {
		return false
	}
	return true
}

// InterpreterRoots are what an interpreter outside the system directories
// needs to be readable to run: a virtual environment's folder (VENV of
// VENV/bin/python) and the installation its pyvenv.cfg names as home, or
// the installation prefix of a plain interpreter (PREFIX of
// PREFIX/bin/python3). The system directories are always visible.
func InterpreterRoots(interp string) []string {
	var out []string
	add := func(p string) {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		if p == "" || p == "." || p == "/" || p == "/usr" || strings.HasPrefix(p, "/usr/") || inList(out, p) {
			return
		}
		out = append(out, p)
	}
	prefix := filepath.Dir(filepath.Dir(interp))
	if isVenv(prefix) {
		add(prefix)
		if home := venvHome(prefix); home != "" {
			add(filepath.Dir(home))
		}
	} else {
		add(prefix)
	}
	if real, err := filepath.EvalSymlinks(interp); err == nil {
		add(filepath.Dir(filepath.Dir(real)))
	}
	return out
}

// venvHome reads the home = line of a virtual environment's pyvenv.cfg:
// the folder of the interpreter it was made from.
func venvHome(venv string) string {
	b, err := os.ReadFile(filepath.Join(venv, "pyvenv.cfg"))
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, "=")
		if ok && strings.TrimSpace(k) == "home" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// isVenv reports whether dir is a Python virtual environment.
func isVenv(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "pyvenv.cfg"))
	return err == nil
}

// shebang returns the interpreter of a script's #! line as the kernel
// reads it: the program, then at most one argument (the rest of the line).
func shebang(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	return ParseShebang(line)
}

// ParseShebang parses the first line of a script: "#!/usr/bin/env python3"
// gives ["/usr/bin/env", "python3"].
func ParseShebang(line string) ([]string, error) {
	if !strings.HasPrefix(line, "#!") {
		return nil, fmt.Errorf("not executable and no #! line: make it executable or add one")
	}
	rest := strings.TrimSpace(strings.TrimPrefix(line, "#!"))
	prog, arg, _ := strings.Cut(rest, " ")
	if prog == "" || !filepath.IsAbs(prog) {
		return nil, fmt.Errorf("#! line %q does not name an absolute interpreter", strings.TrimSpace(line))
	}
	out := []string{prog}
	if arg = strings.TrimSpace(arg); arg != "" {
		out = append(out, arg)
	}
	return out, nil
}
