package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Marshal renders d as "yaml" (the CYCOD form, kebab-case keys, in the
// reference schema's order) or "json" (the same tree as JSON). Both parse
// back with Parse into an equal Definition (Source and Pos aside). Defaults
// the loader filled in (security.isolation, execution-privilege, a missing
// parameter type) are written out explicitly.
func Marshal(d *Definition, format string) ([]byte, error) {
	if d == nil {
		return nil, errors.New("marshal tool: nil definition")
	}
	root := defNode(d)
	switch format {
	case "yaml", "":
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(root); err != nil {
			return nil, fmt.Errorf("marshal tool %s: %w", d.Name, err)
		}
		if err := enc.Close(); err != nil {
			return nil, fmt.Errorf("marshal tool %s: %w", d.Name, err)
		}
		return buf.Bytes(), nil
	case "json":
		var buf bytes.Buffer
		if err := writeJSON(&buf, root); err != nil {
			return nil, fmt.Errorf("marshal tool %s: %w", d.Name, err)
		}
		var out bytes.Buffer
		if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
			return nil, fmt.Errorf("marshal tool %s: %w", d.Name, err)
		}
		out.WriteByte('\n')
		return out.Bytes(), nil
	}
	return nil, fmt.Errorf("marshal tool %s: unknown format %q (formats are yaml and json)", d.Name, format)
}

// Node builders. Every scalar carries its tag, so the encoder quotes
// strings that would otherwise read back as numbers or booleans.

func mapNode() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"} }

func seqNode() *yaml.Node { return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"} }

func strScalar(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if strings.Contains(strings.TrimSuffix(s, "\n"), "\n") {
		n.Style = yaml.LiteralStyle
	}
	return n
}

func boolScalar(b bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(b)}
}

func intScalar(i int64) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(i, 10)}
}

func floatScalar(f float64) *yaml.Node {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return intScalar(int64(f))
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: strconv.FormatFloat(f, 'g', -1, 64)}
}

func durScalar(d time.Duration) *yaml.Node {
	s := FormatDuration(d)
	if strings.HasSuffix(s, "d") || strings.HasSuffix(s, "ns") {
		return strScalar(s)
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: s}
}

func anyScalar(v any) *yaml.Node {
	switch x := v.(type) {
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	case string:
		return strScalar(x)
	case bool:
		return boolScalar(x)
	case int:
		return intScalar(int64(x))
	case int64:
		return intScalar(x)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			// Keep a float a float: 5.0 must not read back as the int 5.
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: strconv.FormatFloat(x, 'f', 1, 64)}
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: strconv.FormatFloat(x, 'g', -1, 64)}
	case []any:
		s := seqNode()
		for _, e := range x {
			s.Content = append(s.Content, anyScalar(e))
		}
		return s
	case map[string]any:
		m := mapNode()
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			m.Content = append(m.Content, strScalar(k), anyScalar(x[k]))
		}
		return m
	}
	return strScalar(fmt.Sprint(v))
}

func put(m *yaml.Node, key string, v *yaml.Node) {
	m.Content = append(m.Content, strScalar(key), v)
}

func putStr(m *yaml.Node, key, v string) {
	if v != "" {
		put(m, key, strScalar(v))
	}
}

func putBool(m *yaml.Node, key string, v bool) {
	if v {
		put(m, key, boolScalar(true))
	}
}

func putBoolPtr(m *yaml.Node, key string, v *bool) {
	if v != nil {
		put(m, key, boolScalar(*v))
	}
}

func putDur(m *yaml.Node, key string, d time.Duration) {
	if d != 0 {
		put(m, key, durScalar(d))
	}
}

func putList(m *yaml.Node, key string, vs []string, flow bool) {
	if vs == nil {
		return
	}
	s := seqNode()
	if flow {
		s.Style = yaml.FlowStyle
	}
	for _, v := range vs {
		s.Content = append(s.Content, strScalar(v))
	}
	put(m, key, s)
}

// putStrOrList writes one value as a string and several as a list, the
// two shapes the test assertions accept.
func putStrOrList(m *yaml.Node, key string, vs []string) {
	if len(vs) == 1 {
		put(m, key, strScalar(vs[0]))
		return
	}
	putList(m, key, vs, false)
}

func putMap(m *yaml.Node, key string, kv map[string]string) {
	if kv == nil {
		return
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	n := mapNode()
	for _, k := range keys {
		put(n, k, strScalar(kv[k]))
	}
	put(m, key, n)
}

func putExec(m *yaml.Node, e *Exec) {
	if e == nil {
		return
	}
	put(m, string(e.Kind), strScalar(e.Command))
	putStr(m, "shell", e.Shell)
}

func defNode(d *Definition) *yaml.Node {
	m := mapNode()
	putStr(m, "name", d.Name)
	put(m, "description", strScalar(d.Description))
	putStr(m, "version", d.Version)
	putStr(m, "min-cycod-version", d.MinCycodVersion)
	putStr(m, "type", d.Type)
	putStr(m, "base-tool", d.BaseTool)
	putMap(m, "default-parameters", d.DefaultParameters)

	putExec(m, d.Exec)
	if c := d.Commands; c != nil {
		n := mapNode()
		putStr(n, "default", c.Default)
		putMap(n, "platforms", c.Platforms)
		put(m, "commands", n)
	}
	if d.Steps != nil {
		s := seqNode()
		for i := range d.Steps {
			s.Content = append(s.Content, stepNode(&d.Steps[i]))
		}
		put(m, "steps", s)
	}
	if d.Parameters != nil {
		n := mapNode()
		for i := range d.Parameters {
			put(n, d.Parameters[i].Name, paramNode(&d.Parameters[i]))
		}
		put(m, "parameters", n)
	}
	if e := d.Environment; e != nil {
		n := mapNode()
		putMap(n, "variables", e.Variables)
		putBool(n, "inherit", e.Inherit)
		put(m, "environment", n)
	}
	if fc := d.FunctionCalling; fc != nil {
		n := mapNode()
		if sg := fc.SchemaGeneration; sg != nil {
			g := mapNode()
			putMap(g, "parameter-mapping", sg.ParameterMapping)
			putBoolPtr(g, "include-descriptions", sg.IncludeDescriptions)
			putBoolPtr(g, "include-defaults", sg.IncludeDefaults)
			putBoolPtr(g, "example-generation", sg.ExampleGeneration)
			putStr(g, "function-name", sg.FunctionName)
			putStr(g, "description-template", sg.DescriptionTemplate)
			put(n, "schema-generation", g)
		}
		put(m, "function-calling", n)
	}
	put(m, "security", securityNode(&d.Security))
	if fp := d.FilePaths; fp != nil {
		n := mapNode()
		putBool(n, "normalize", fp.Normalize)
		putStr(n, "working-directory", fp.WorkingDirectory)
		putStr(n, "temp-directory", fp.TempDirectory)
		if cp := fp.CrossPlatform; cp != nil {
			c := mapNode()
			putStr(c, "windows-separator", cp.WindowsSeparator)
			putStr(c, "unix-separator", cp.UnixSeparator)
			putBool(c, "auto-convert", cp.AutoConvert)
			put(n, "cross-platform", c)
		}
		put(m, "file-paths", n)
	}
	if md := d.Metadata; md != nil {
		n := mapNode()
		putStr(n, "category", md.Category)
		putStr(n, "subcategory", md.Subcategory)
		putList(n, "tags", md.Tags, true)
		putList(n, "search-keywords", md.SearchKeywords, true)
		put(m, "metadata", n)
	}
	if r := d.Resources; r != nil {
		n := mapNode()
		putDur(n, "timeout", r.Timeout)
		if r.MaxMemory != 0 {
			put(n, "max-memory", strScalar(FormatSize(r.MaxMemory)))
		}
		if c := r.Cleanup; c != nil {
			s := seqNode()
			if c.DeleteTempFiles {
				e := mapNode()
				put(e, "delete-temp-files", boolScalar(true))
				s.Content = append(s.Content, e)
			}
			for _, fc := range c.FinalCommands {
				e := mapNode()
				put(e, "final-command", strScalar(fc))
				s.Content = append(s.Content, e)
			}
			put(n, "cleanup", s)
		}
		put(m, "resources", n)
	}
	putBool(m, "interactive", d.Interactive)
	if io := d.InteractiveOptions; io != nil {
		n := mapNode()
		putDur(n, "timeout", io.Timeout)
		put(n, "default-response", strScalar(io.DefaultResponse))
		put(m, "interactive-options", n)
	}
	if t := d.Tests; t != nil {
		put(m, "tests", testsNode(t))
	}
	if d.Changelog != nil {
		s := seqNode()
		for _, c := range d.Changelog {
			e := mapNode()
			put(e, "version", strScalar(c.Version))
			put(e, "changes", strScalar(c.Changes))
			s.Content = append(s.Content, e)
		}
		put(m, "changelog", s)
	}
	if d.Dependencies != nil {
		s := seqNode()
		for _, dep := range d.Dependencies {
			e := mapNode()
			put(e, "tool", strScalar(dep.Tool))
			putStr(e, "version", dep.Version)
			put(e, "required", boolScalar(dep.Required))
			putStr(e, "scope", dep.Scope)
			s.Content = append(s.Content, e)
		}
		put(m, "dependencies", s)
	}
	if db := d.Debugging; db != nil {
		n := mapNode()
		putBool(n, "verbose", db.Verbose)
		putBool(n, "dry-run", db.DryRun)
		putStr(n, "log-file", db.LogFile)
		put(m, "debugging", n)
	}
	putList(m, "tags", d.Tags, true)
	putList(m, "platforms", d.Platforms, true)
	putStr(m, "working-directory", d.WorkingDirectory)
	putDur(m, "timeout", d.Timeout)
	putBool(m, "ignore-errors", d.IgnoreErrors)
	putStr(m, "input", d.Input)
	if x := d.Sandboxed; x != nil {
		n := mapNode()
		putStr(n, "image", x.Image)
		putStr(n, "runtime", x.Runtime)
		if x.PidsLimit != 0 {
			put(n, "pids-limit", intScalar(x.PidsLimit))
		}
		if x.CPUs != 0 {
			put(n, "cpus", floatScalar(x.CPUs))
		}
		if x.TmpfsSize != 0 {
			put(n, "tmpfs-size", strScalar(FormatSize(x.TmpfsSize)))
		}
		if e := x.ExposedAs; e != nil {
			en := mapNode()
			putStr(en, "name", e.Name)
			if len(e.Parameters) > 0 {
				putMap(en, "parameters", e.Parameters)
			}
			put(n, "exposed-as", en)
		}
		put(m, "sandboxed", n)
	}
	return m
}

func stepNode(st *Step) *yaml.Node {
	m := mapNode()
	put(m, "name", strScalar(st.Name))
	putExec(m, st.Exec)
	putStr(m, "use-tool", st.UseTool)
	putMap(m, "with", st.With)
	putBool(m, "continue-on-error", st.ContinueOnError)
	putStr(m, "run-condition", st.RunCondition)
	putBool(m, "parallel", st.Parallel)
	putList(m, "wait-for", st.WaitFor, true)
	if eh := st.ErrorHandling; eh != nil {
		n := mapNode()
		if r := eh.Retry; r != nil {
			rn := mapNode()
			put(rn, "attempts", intScalar(int64(r.Attempts)))
			put(rn, "delay", durScalar(r.Delay))
			put(n, "retry", rn)
		}
		putStr(n, "fallback", eh.Fallback)
		put(m, "error-handling", n)
	}
	if o := st.Output; o != nil {
		n := mapNode()
		putStr(n, "mode", string(o.Mode))
		if o.BufferLimit != 0 {
			put(n, "buffer-limit", strScalar(FormatSize(o.BufferLimit)))
		}
		putStr(n, "stream-callback", o.StreamCallback)
		put(m, "output", n)
	}
	putStr(m, "working-directory", st.WorkingDirectory)
	putMap(m, "environment", st.Environment)
	putDur(m, "timeout", st.Timeout)
	putStr(m, "input", st.Input)
	return m
}

func paramNode(p *Parameter) *yaml.Node {
	m := mapNode()
	typ := p.Type
	if typ == "" {
		typ = TypeString
	}
	put(m, "type", strScalar(string(typ)))
	put(m, "description", strScalar(p.Description))
	putBool(m, "required", p.Required)
	if p.HasDefault {
		if f, ok := p.Default.(float64); ok && typ == TypeNumber {
			put(m, "default", floatScalar(f)) // number defaults are float64 whatever was written
		} else {
			put(m, "default", anyScalar(p.Default))
		}
	}
	if p.Validation != nil {
		put(m, "validation", validationNode(p.Validation))
	}
	putStr(m, "transform", p.Transform)
	putStr(m, "format", p.Format)
	if p.Examples != nil {
		ex := anyScalar(p.Examples)
		ex.Style = yaml.FlowStyle
		put(m, "examples", ex)
	}
	putStr(m, "detailed-help", p.DetailedHelp)
	if p.EscapeShell != nil {
		s := mapNode()
		put(s, "escape-shell", boolScalar(*p.EscapeShell))
		put(m, "security", s)
	}
	return m
}

func validationNode(v *Validation) *yaml.Node {
	m := mapNode()
	putStr(m, "type", string(v.Type))
	if v.Minimum != nil {
		put(m, "minimum", floatScalar(*v.Minimum))
	}
	if v.Maximum != nil {
		put(m, "maximum", floatScalar(*v.Maximum))
	}
	if v.Pattern != "" {
		put(m, "pattern", strScalar(v.Pattern))
	}
	putInt := func(key string, p *int) {
		if p != nil {
			put(m, key, intScalar(int64(*p)))
		}
	}
	putInt("minLength", v.MinLength)
	putInt("maxLength", v.MaxLength)
	if v.Enum != nil {
		e := anyScalar(v.Enum)
		e.Style = yaml.FlowStyle
		put(m, "enum", e)
	}
	putInt("minItems", v.MinItems)
	putInt("maxItems", v.MaxItems)
	putBool(m, "uniqueItems", v.UniqueItems)
	putList(m, "required", v.Required, true)
	if v.Properties != nil {
		keys := make([]string, 0, len(v.Properties))
		for k := range v.Properties {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		n := mapNode()
		for _, k := range keys {
			pv := v.Properties[k]
			if pv == nil {
				pv = &Validation{}
			}
			put(n, k, validationNode(pv))
		}
		put(m, "properties", n)
	}
	return m
}

func securityNode(s *Security) *yaml.Node {
	m := mapNode()
	putStr(m, "execution-privilege", string(s.ExecutionPrivilege))
	putStr(m, "isolation", string(s.Isolation))
	putList(m, "required-permissions", s.RequiredPermissions, false)
	putStr(m, "justification", s.Justification)
	if lg := s.Logging; lg != nil {
		n := mapNode()
		put(n, "enabled", boolScalar(lg.Enabled))
		putStr(n, "level", lg.Level)
		putBool(n, "include-parameters", lg.IncludeParameters)
		putList(n, "sensitive-parameters", lg.SensitiveParameters, true)
		put(m, "logging", n)
	}
	if a := s.Auditing; a != nil {
		n := mapNode()
		put(n, "enabled", boolScalar(a.Enabled))
		putBool(n, "record-command", a.RecordCommand)
		putBool(n, "record-output", a.RecordOutput)
		putDur(n, "retention-period", a.RetentionPeriod)
		put(m, "auditing", n)
	}
	return m
}

func testsNode(t *TestSuite) *yaml.Node {
	cases := seqNode()
	for _, c := range t.Cases {
		m := mapNode()
		put(m, "name", strScalar(c.Name))
		putStr(m, "description", c.Description)
		putMap(m, "parameters", c.Parameters)
		e := mapNode()
		x := c.Expected
		if x.ExitCode != nil {
			put(e, "exit-code", intScalar(int64(*x.ExitCode)))
		}
		putStrOrList(e, "output-contains", x.OutputContains)
		putStrOrList(e, "output-not-contains", x.OutputNotContains)
		putStrOrList(e, "output-matches", x.OutputMatches)
		putStrOrList(e, "file-exists", x.FileExists)
		putStrOrList(e, "file-not-exists", x.FileNotExists)
		if x.FileContains != nil {
			s := seqNode()
			for _, fc := range x.FileContains {
				f := mapNode()
				put(f, "path", strScalar(fc.Path))
				put(f, "text", strScalar(fc.Text))
				s.Content = append(s.Content, f)
			}
			put(e, "file-contains", s)
		}
		putBoolPtr(e, "error", x.Error)
		put(m, "expected", e)
		putList(m, "cleanup", c.Cleanup, false)
		cases.Content = append(cases.Content, m)
	}
	if t.Setup == nil && t.Cleanup == nil && t.Environment == nil {
		return cases
	}
	m := mapNode()
	putList(m, "setup", t.Setup, false)
	putList(m, "cleanup", t.Cleanup, false)
	putMap(m, "environment", t.Environment)
	if t.Cases != nil {
		put(m, "cases", cases)
	}
	return m
}

// writeJSON renders a node tree built by defNode as compact JSON, keeping
// the key order.
func writeJSON(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.MappingNode:
		buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := jsonString(buf, n.Content[i].Value); err != nil {
				return err
			}
			buf.WriteByte(':')
			if err := writeJSON(buf, n.Content[i+1]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeJSON(buf, c); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!int", "!!float", "!!bool":
			buf.WriteString(n.Value)
		case "!!null":
			buf.WriteString("null")
		default:
			if err := jsonString(buf, n.Value); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unexpected YAML node kind %d", n.Kind)
	}
	return nil
}

// jsonString writes s as a JSON string without HTML escaping (a pattern
// such as ^[^<>]+$ stays readable).
func jsonString(buf *bytes.Buffer, s string) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return err
	}
	buf.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	return nil
}

// WriteAtomic writes data to path so that readers see either the old file
// or the whole new one: a temporary file in the same directory, fsync,
// then a rename (overwrite) or a hard link that fails if path exists (no
// overwrite, so two writers cannot both win; on filesystems without hard
// links, a check and a rename). The directory is created if missing.
// Without overwrite an existing path is ErrExists.
func WriteAtomic(path string, data []byte, overwrite bool) (retErr error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if !overwrite {
		if _, err := os.Lstat(path); err == nil {
			return existsError(path)
		}
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmpName := tmp.Name()
	defer func() {
		if tmp != nil {
			tmp.Close()
		}
		os.Remove(tmpName) // after a rename this is a no-op
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		tmp = nil
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp = nil
	if overwrite {
		if err := os.Rename(tmpName, path); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	} else if err := os.Link(tmpName, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return existsError(path)
		}
		// No hard links on this filesystem: check, then rename. A writer
		// racing in between could be replaced; nothing is ever half-written.
		if _, err := os.Lstat(path); err == nil {
			return existsError(path)
		}
		if err := os.Rename(tmpName, path); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // make the new name durable; not all filesystems support it
		d.Close()
	}
	return nil
}

func existsError(path string) error {
	return fmt.Errorf("write %s: %w (hint: pass --overwrite to replace it)", path, ErrExists)
}

// ImportFile validates the definition at src and copies its bytes, as
// they are (comments kept), to dir/NAME.yaml, where NAME is the
// definition's name. It writes nothing when src does not load, and
// refuses to replace an existing file unless overwrite. It returns the
// path written.
func ImportFile(src, dir string, overwrite bool) (string, error) {
	def, err := Load(src, ScopePath)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, def.Name+".yaml")
	if _, err := os.Lstat(filepath.Join(dir, def.Name+".yml")); err == nil && !overwrite {
		return "", fmt.Errorf("import %s: %w", src, existsError(filepath.Join(dir, def.Name+".yml")))
	}
	if err := WriteAtomic(dst, def.Source.Raw, overwrite); err != nil {
		return "", fmt.Errorf("import %s: %w", src, err)
	}
	return dst, nil
}
