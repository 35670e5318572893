package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sandboxed-dev/sandboxed/internal/tier"
	"github.com/sandboxed-dev/sandboxed/internal/units"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// Where a policy comes from, as Locate reports it.
const (
	FromFlag    = "flag"     // --policy FILE
	FromUser    = "user"     // $XDG_CONFIG_HOME/sandboxed/policy.yaml or ~/.config/sandboxed/policy.yaml
	FromSystem  = "system"   // /etc/sandboxed/policy.yaml
	FromBuiltin = "built-in" // no file: Default()
)

// SystemPath is the system-wide policy file.
const SystemPath = "/etc/sandboxed/policy.yaml"

// Locate finds the policy file to use: flagPath when given (whether or not
// it exists: Load reports a missing file), else
// $XDG_CONFIG_HOME/sandboxed/policy.yaml (~/.config/sandboxed/policy.yaml
// when xdgConfigHome is empty or relative), else SystemPath, else none.
// It returns the path ("" for none) and where it came from (FromFlag,
// FromUser, FromSystem, FromBuiltin). It only stats files.
func Locate(flagPath, xdgConfigHome, home string) (path, source string) {
	if flagPath != "" {
		return flagPath, FromFlag
	}
	var user string
	switch {
	case filepath.IsAbs(xdgConfigHome):
		user = filepath.Join(xdgConfigHome, "sandboxed", "policy.yaml")
	case filepath.IsAbs(home):
		user = filepath.Join(home, ".config", "sandboxed", "policy.yaml")
	}
	if user != "" && exists(user) {
		return user, FromUser
	}
	if exists(SystemPath) {
		return SystemPath, FromSystem
	}
	return "", FromBuiltin
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// LoadLocated loads what Locate returned: the file at path, or Default()
// when path is "".
func LoadLocated(path string) (*Policy, error) {
	if path == "" {
		return Default(), nil
	}
	return Load(path)
}

// Load reads and strictly parses the policy file at path. Keys not given
// keep their value from Default(); a list given replaces the default list.
// Unknown keys, wrong types and bad values are errors with file:line.
func Load(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read policy: %w", err)
	}
	return Parse(data, path)
}

// Parse parses policy YAML; file names it in errors and in Policy.File.
func Parse(data []byte, file string) (*Policy, error) {
	p := Default()
	p.File = file
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return p, nil // an empty file is the default policy
		}
		return nil, yamlError(file, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &LoadError{File: file, Line: extra.Line, Msg: "more than one YAML document; a policy is one document"}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return p, nil
	}
	if err := checkNode(root, reflect.TypeOf(Policy{}), ""); err != nil {
		var le *LoadError
		if errors.As(err, &le) {
			le.File = file
		}
		return nil, err
	}
	if err := root.Decode(p); err != nil {
		return nil, yamlError(file, err)
	}
	if err := p.validate(); err != nil {
		return nil, &LoadError{File: file, Line: keyLine(root, err.Error()), Msg: err.Error()}
	}
	return p, nil
}

// keyRE is the key a check's message starts with: undo.max-files,
// sources[2].isolation.landlock-gaps, limits.memory.default.
var keyRE = regexp.MustCompile(`^[a-z][a-z0-9-]*(\[[0-9]+\])?(\.[a-z][a-z0-9-]*(\[[0-9]+\])?)*`)

// keyLine is the line of the key msg starts with in the document root, or
// of the nearest of its parents the document has (a default the file
// does not write is checked under the key that holds it); 0 when none.
func keyLine(root *yaml.Node, msg string) int {
	parts := strings.Split(keyRE.FindString(msg), ".")
	line, n := 0, root
	for _, part := range parts {
		name, index := part, -1
		if i := strings.IndexByte(part, '['); i > 0 {
			name = part[:i]
			index, _ = strconv.Atoi(strings.TrimSuffix(part[i+1:], "]"))
		}
		var next *yaml.Node
		if n != nil && n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == name {
					line, next = n.Content[i].Line, n.Content[i+1]
				}
			}
		}
		if next == nil {
			return line
		}
		if index >= 0 {
			if next.Kind != yaml.SequenceNode || index >= len(next.Content) {
				return line
			}
			next = next.Content[index]
			line = next.Line
		}
		n = next
	}
	return line
}

// yamlError turns a yaml.v3 error into a LoadError. yaml.v3 puts the line
// in the text ("yaml: line 3: ..."); the line is taken from there.
func yamlError(file string, err error) error {
	var le *LoadError
	if errors.As(err, &le) {
		le.File = file
		return le
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n  ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.Index(rest, ":"); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				line, msg = n, strings.TrimSpace(rest[i+1:])
			}
		}
	}
	return &LoadError{File: file, Line: line, Msg: msg}
}

// validators check scalar values of the string types of the policy, so
// that a bad value is reported at its line.
var validators = map[reflect.Type]func(string) error{
	reflect.TypeOf(tool.Isolation("")): func(s string) error {
		switch tool.Isolation(s) {
		case tool.IsolationNone, tool.IsolationProcess, tool.IsolationContainer:
			return nil
		}
		return fmt.Errorf("isolation %q: want none, process or container", s)
	},
	reflect.TypeOf(StandIn("")): func(s string) error {
		switch StandIn(s) {
		case StandInApprove, StandInRefuse, StandInNever, StandInLandlock:
			return nil
		}
		return fmt.Errorf("without-namespaces %q: want approve (refuse is its earlier name), never or landlock", s)
	},
	reflect.TypeOf(LandlockRule("")): func(s string) error {
		switch LandlockRule(s) {
		case LandlockBestEffort, LandlockRequired:
			return nil
		}
		return fmt.Errorf("landlock %q: want best-effort or required", s)
	},
	reflect.TypeOf(RuntimeRule("")): func(s string) error {
		switch RuntimeRule(s) {
		case RuntimeDefinition, RuntimeRunsc:
			return nil
		}
		return fmt.Errorf("runtime %q: want definition or runsc", s)
	},
	reflect.TypeOf(BackendRule("")): func(s string) error {
		switch BackendRule(s) {
		case BackendOperator, BackendLocal, BackendKubernetes:
			return nil
		}
		return fmt.Errorf("backend %q: want operator, local or kubernetes", s)
	},
	reflect.TypeOf(SourceScope("")): func(s string) error {
		switch SourceScope(s) {
		case SourceLocal, SourceUser, SourceGlobal, SourcePath, SourceUnknown, SourceAny:
			return nil
		}
		return fmt.Errorf("scope %q: want local, user, global, path, unknown or any", s)
	},
	reflect.TypeOf(Glob("")): func(s string) error {
		if s == "" {
			return fmt.Errorf("empty path glob")
		}
		return nil
	},
	reflect.TypeOf(PathPattern("")): func(s string) error { return checkPathPattern(s) },
	reflect.TypeOf(SecretName("")):  func(s string) error { return checkSecretName(s) },
	reflect.TypeOf(HostPattern("")): func(s string) error { return checkHostPattern(s) },
	reflect.TypeOf(Matcher("")):     func(s string) error { return checkMatcher(s) },
	reflect.TypeOf(Approval("")):    func(s string) error { return ValidateApprovals([]string{s}) },
}

var unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

// checkNode walks the YAML tree against the Go type it decodes into and
// reports unknown keys, wrong shapes and bad values with their line.
func checkNode(n *yaml.Node, t reflect.Type, where string) error {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	at := func(format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		if where != "" {
			msg = where + ": " + msg
		}
		return &LoadError{Line: n.Line, Msg: msg}
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		// The type checks itself when decoded; decoded here first, its
		// error names the key.
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			var le *LoadError
			if errors.As(err, &le) {
				return at("%s", le.Msg)
			}
			return at("%v", err)
		}
		return nil
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		if t.Kind() == reflect.Struct {
			return at("want a mapping, got an empty value")
		}
		if validators[t] != nil {
			// A bare ~ is YAML's null: an empty pattern would match
			// everything, so it is an error, never a wildcard.
			return at("empty value (YAML reads a bare ~ as empty: write \"~\" in quotes for the home directory)")
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return at("want a mapping of keys, got %s", nodeKind(n))
		}
		fields := make(map[string]reflect.StructField)
		var known []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if tag == "" || tag == "-" {
				continue
			}
			fields[tag] = f
			known = append(known, tag)
		}
		seen := make(map[string]bool)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f, ok := fields[k.Value]
			if !ok {
				sort.Strings(known)
				return &LoadError{Line: k.Line, Msg: fmt.Sprintf("unknown key %q in %s (known keys: %s)",
					k.Value, orTop(where), strings.Join(known, ", "))}
			}
			if seen[k.Value] {
				return &LoadError{Line: k.Line, Msg: fmt.Sprintf("key %q given twice in %s", k.Value, orTop(where))}
			}
			seen[k.Value] = true
			if err := checkNode(v, f.Type, join(where, k.Value)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return at("want a list, got %s", nodeKind(n))
		}
		for i, c := range n.Content {
			if err := checkNode(c, t.Elem(), fmt.Sprintf("%s[%d]", where, i)); err != nil {
				return err
			}
		}
	case reflect.String, reflect.Int, reflect.Int64, reflect.Bool:
		if n.Kind != yaml.ScalarNode {
			return at("want a single value, got %s", nodeKind(n))
		}
		if v := validators[t]; v != nil {
			if err := v(n.Value); err != nil {
				return at("%v", err)
			}
		}
		// A count by its YAML type, not by decoding: yaml.v3 decodes 1.5
		// into an int as 1 (and yes/no into a bool, as before).
		switch {
		case t.Kind() == reflect.Bool && n.Decode(new(bool)) != nil:
			return at("%q: want true or false", n.Value)
		case (t.Kind() == reflect.Int || t.Kind() == reflect.Int64) && n.ShortTag() != "!!int":
			return at("%q: want a whole number", n.Value)
		}
	case reflect.Float64:
		if n.Kind != yaml.ScalarNode {
			return at("want a single value, got %s", nodeKind(n))
		}
		// By its YAML type too: a quoted "0.5" is a string, and .nan and
		// .inf are numbers no quota can hold.
		var f float64
		tag := n.ShortTag()
		number := (tag == "!!int" || tag == "!!float") && n.Decode(&f) == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
		switch {
		case t == reflect.TypeOf(CPUs(0)) && (!number || f != 0 && (f < tool.MinCPUs || f > tool.MaxCPUs)):
			return at("%q: want 0 (none) or a number of CPUs from %g to %d, such as 0.5 or 2", n.Value, tool.MinCPUs, tool.MaxCPUs)
		case !number:
			return at("%q: want a number", n.Value)
		}
	}
	return nil
}

func orTop(where string) string {
	if where == "" {
		return "the policy"
	}
	return where
}

func join(where, key string) string {
	if where == "" {
		return key
	}
	return where + "." + key
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	default:
		return fmt.Sprintf("%q", n.Value)
	}
}

// validate checks what spans several keys and fills omitted isolation
// bounds with the safe ones.
func (p *Policy) validate() error {
	if p.Version != 1 {
		return fmt.Errorf("version %d: only version 1 exists", p.Version)
	}
	for i := range p.Sources {
		r := &p.Sources[i]
		if len(r.Isolation.Allowed) == 0 {
			r.Isolation.Allowed = []tool.Isolation{tool.IsolationProcess, tool.IsolationContainer}
		}
		if r.Isolation.Minimum == "" {
			r.Isolation.Minimum = tool.IsolationProcess
		}
		if r.Isolation.Landlock == "" {
			r.Isolation.Landlock = LandlockBestEffort
		}
		if r.Isolation.WithoutNamespaces == "" || r.Isolation.WithoutNamespaces == StandInRefuse {
			r.Isolation.WithoutNamespaces = StandInApprove
		}
		if len(r.Isolation.LandlockGaps) == 0 {
			r.Isolation.LandlockGaps = nil
		}
		for _, g := range r.Isolation.LandlockGaps {
			if !slices.Contains(tier.LandlockGaps, g) {
				return fmt.Errorf("sources[%d].isolation.landlock-gaps: %q: want one of %s", i, g, strings.Join(tier.LandlockGaps, ", "))
			}
		}
		if r.Isolation.Runtime == "" {
			r.Isolation.Runtime = RuntimeDefinition
		}
		if r.Isolation.Backend == "" {
			r.Isolation.Backend = BackendOperator
		}
	}
	for _, l := range []struct {
		name, like string // like: a value to write
		def        *int64
		max        int64
	}{
		{"limits.memory", "512MiB", (*int64)(&p.Limits.Memory.Default), int64(p.Limits.Memory.Max)},
		{"limits.timeout", "5m", (*int64)(&p.Limits.Timeout.Default), int64(p.Limits.Timeout.Max)},
		{"limits.pids", "256", &p.Limits.Pids.Default, p.Limits.Pids.Max},
		{"limits.output", "10MiB", (*int64)(&p.Limits.Output.Default), int64(p.Limits.Output.Max)},
		{"limits.tmpfs", "64MiB", (*int64)(&p.Limits.Tmpfs.Default), int64(p.Limits.Tmpfs.Max)},
	} {
		if *l.def <= 0 {
			return fmt.Errorf("%s.default must be above 0: write one such as %s", l.name, l.like)
		}
		if l.max < 0 {
			return fmt.Errorf("%s.max must be 0 (no cap) or above", l.name)
		}
		if l.max > 0 && *l.def > l.max {
			// A default above the cap (typically the built-in default
			// under a lower cap the file sets) is brought down to it.
			*l.def = l.max
		}
	}
	// Checked at their lines (checkNode): 0 to tool.MaxCPUs, 0 meaning
	// none; a default above the cap is brought down to it likewise.
	if c := &p.Limits.CPUs; c.Max > 0 && c.Default > c.Max {
		c.Default = c.Max
	}
	if p.Pool.Size < 0 || p.Pool.Size > MaxPoolSize {
		return fmt.Errorf("pool.size %d: use 0 (no pool) to %d", p.Pool.Size, MaxPoolSize)
	}
	if p.Pool.Idle < 0 {
		return fmt.Errorf("pool.idle must be 0 (kept) or above")
	}
	for _, port := range p.Network.LocalhostAllow {
		if port < 1 || port > 65535 {
			return fmt.Errorf("network.localhost-allow: port %d is not from 1 to 65535", port)
		}
	}
	for _, pat := range p.Environment.Deny {
		if err := checkEnvPattern(pat); err != nil {
			return err
		}
	}
	for _, list := range []struct {
		key  string
		pats []string
	}{{"credentials.deny", p.Credentials.Deny}, {"credentials.approve", p.Credentials.Approve}} {
		for _, pat := range list.pats {
			if err := checkNamePattern(list.key, pat); err != nil {
				return err
			}
		}
	}
	if err := p.checkQuotas(); err != nil {
		return err
	}
	if err := p.checkUndo(); err != nil {
		return err
	}
	if c, err := p.compileCommands(); err != nil {
		return err
	} else if err := c.checkExamples(p); err != nil {
		return err
	}
	for _, f := range p.Network.ExtraCA {
		if !filepath.IsAbs(f) {
			return fmt.Errorf("network.extra-ca: %q is not an absolute path", f)
		}
	}
	return nil
}

// UnmarshalYAML parses a size in the grammar tool definitions use
// (units.ParseSize): bytes, or a number with a binary unit, so a cap and
// a request written alike are the same number of bytes.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	v, err := unitScalar(n, "a size", units.SizeGrammar, units.ParseSize)
	if err == nil {
		*s = Size(v)
	}
	return err
}

// String formats a size as units.FormatSize does.
func (s Size) String() string { return units.FormatSize(int64(s)) }

// UnmarshalYAML parses a duration in the grammar tool definitions use
// (units.ParseDuration): milliseconds, or number+unit pairs such as 90s,
// 1h30m, 30d or 2w.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := unitScalar(n, "a duration", units.DurationGrammar, units.ParseDuration)
	if err == nil {
		*d = Duration(v)
	}
	return err
}

// unitScalar parses a scalar node with parse; the error is located and
// says how to write the value (grammar).
func unitScalar[V any](n *yaml.Node, want, grammar string, parse func(string) (V, error)) (V, error) {
	var zero V
	if n.Kind != yaml.ScalarNode {
		return zero, &LoadError{Line: n.Line, Msg: "want " + want + "; write " + grammar}
	}
	v, err := parse(n.Value)
	if err != nil {
		return zero, &LoadError{Line: n.Line, Msg: fmt.Sprintf("%v; write %s", err, grammar)}
	}
	return v, nil
}

// String formats the duration as Go does, or in days when whole days.
func (d Duration) String() string {
	td := time.Duration(d)
	if td != 0 && td%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", td/(24*time.Hour))
	}
	return td.String()
}
