package tool

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// FindScripts lists the executables of dir that discovery probes: regular
// files (symlinks followed) with an exec bit, and .py or .sh files with a
// #! line, that have no companion NAME.yaml or NAME.yml. It reads names,
// modes and first lines only; it runs nothing. Files it passes over for a
// reason the user may not expect (a companion definition, a script
// without #! line or exec bit) come back as skipped discoveries.
func FindScripts(dir string) ([]Script, []*Discovery, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("discover %s: %w", dir, err)
	}
	des, err := os.ReadDir(abs)
	if err != nil {
		return nil, nil, fmt.Errorf("discover %s: %w", dir, err)
	}
	names := map[string]bool{}
	for _, de := range des {
		names[de.Name()] = true
	}
	var scripts []Script
	var skipped []*Discovery
	skip := func(file, path, why string) {
		skipped = append(skipped, &Discovery{File: file, Path: path, Result: ResultSkipped, Why: why, Names: []string{}, Probes: []ProbeOutput{}})
	}
	for _, de := range des {
		name := de.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		ext := filepath.Ext(name)
		switch ext {
		case ".yaml", ".yml", ".json", ".md", ".txt":
			continue
		}
		p := filepath.Join(abs, name)
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		script := ext == ".py" || ext == ".sh"
		exe := fi.Mode()&0o111 != 0
		if !exe && !script {
			continue
		}
		stem := strings.TrimSuffix(name, ext)
		if names[stem+".yaml"] || names[stem+".yml"] {
			skip(name, p, "has a companion definition "+stem+".yaml; that definition is used")
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			skip(name, p, "resolve path: "+err.Error())
			continue
		}
		s := Script{File: name, Path: real}
		if exe {
			s.Argv = []string{real}
		} else {
			interp, err := shebang(real)
			if err != nil {
				skip(name, real, err.Error())
				continue
			}
			s.Argv = append(interp, real)
		}
		scripts = append(scripts, s)
	}
	sort.Slice(scripts, func(i, j int) bool { return scripts[i].File < scripts[j].File })
	return scripts, skipped, nil
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
