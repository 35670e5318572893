package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

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
	root, err := encodeModel(d)
	if err != nil {
		return nil, fmt.Errorf("marshal tool %s: %w", d.Name, err)
	}
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

// writeJSON renders a node tree built by encodeModel as compact JSON, keeping
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
