package tool

import (
	"fmt"
	"path/filepath"
	"strings"
)

// CheckGrants checks permissions given to discovered tools (discover
// --grant) against the permission grammar.
func CheckGrants(perms []string) error {
	for _, p := range perms {
		if _, err := ParsePermission(p); err != nil {
			return fmt.Errorf("--grant %q: %w", p, err)
		}
	}
	return nil
}

// Grant adds perms to what d requires (a discovered tool reads only its
// script unless told more: a file tool needs the workspace, for example
// filesystem:read:.). A permission d already has is not added twice.
func Grant(d *Definition, perms []string) error {
	if err := CheckGrants(perms); err != nil {
		return err
	}
	have := map[string]bool{}
	for _, p := range d.Security.RequiredPermissions {
		have[p] = true
	}
	added := false
	for _, p := range perms {
		if !have[p] {
			d.Security.RequiredPermissions = append(d.Security.RequiredPermissions, p)
			have[p], added = true, true
		}
	}
	if added && strings.HasPrefix(d.Security.Justification, "reads its own") && !strings.Contains(d.Security.Justification, "--grant") {
		d.Security.Justification += "; the rest granted by sandboxed discover --grant"
	}
	return nil
}

// WriteDiscovered writes d into dir as NAME.yaml and returns the path. The
// YAML is loaded back with the loader first: a definition that would not
// load is not written. An existing file is never replaced (ErrExists).
func WriteDiscovered(dir string, d *Definition) (string, error) {
	path := filepath.Join(dir, d.Name+".yaml")
	data, err := Marshal(d, "yaml")
	if err != nil {
		return "", err
	}
	if _, err := Parse(data, path); err != nil {
		return "", fmt.Errorf("the definition of %s does not load: %w", d.Name, err)
	}
	if err := WriteAtomic(path, data, false); err != nil {
		return "", err
	}
	return path, nil
}
