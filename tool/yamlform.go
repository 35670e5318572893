package tool

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sandboxed-dev/sandboxed/internal/units"
)

// The model's YAML form lives on the model itself: every field of a model
// struct carries a `yaml` tag with its CYCOD key (or "-" when it is not
// part of the file), and, where the key's value is not written the plain
// way, a `form` tag:
//
//	form:"ms"           a duration, written as milliseconds (or "30d")
//	form:"size"         a byte count, written as 512MiB
//	form:"keyed"        a slice of structs written as a mapping keyed by
//	                    each element's Name field (parameters:)
//	form:"one-or-list"  one value written as a scalar, several as a list
//
// The usual yaml.v3 options apply: "omitempty" leaves out zero scalars,
// nil pointers and nil slices and maps (an empty, non-nil slice or map is
// written: it reads back as empty, not absent), "flow" writes a list or
// mapping on one line, and "inline" splices the pairs of a field whose
// type has a yamlPairs method into its parent. A type whose written shape
// is not its Go shape (a union, a list of one-key maps) implements
// yaml.Marshaler.
//
// Struct fields are written in declaration order, which is the reference
// schema's order. TestModelYAMLTags fails when a model field has no yaml
// tag, so a new field cannot be forgotten by the writer.

// pairsMarshaler is a field type whose keys are spliced into the mapping
// that holds it (`yaml:",inline"`), such as Exec (bash: …, shell: …).
type pairsMarshaler interface {
	yamlPairs() []*yaml.Node
}

// encodeModel renders v as a YAML node by the rules above.
func encodeModel(v any) (*yaml.Node, error) {
	return encodeValue(reflect.ValueOf(v), "")
}

var (
	marshalerType = reflect.TypeOf((*yaml.Marshaler)(nil)).Elem()
	durationType  = reflect.TypeOf(time.Duration(0))
)

func encodeValue(v reflect.Value, form string) (*yaml.Node, error) {
	if !v.IsValid() {
		return nullScalar(), nil
	}
	// A nil pointer's marshaler is called only when it has a pointer
	// receiver (a value receiver would dereference nil).
	if v.Type().Implements(marshalerType) && (v.Kind() != reflect.Pointer || !v.IsNil() || !v.Type().Elem().Implements(marshalerType)) {
		out, err := v.Interface().(yaml.Marshaler).MarshalYAML()
		if err != nil {
			return nil, err
		}
		if n, ok := out.(*yaml.Node); ok {
			return n, nil
		}
		return encodeValue(reflect.ValueOf(out), "")
	}
	switch form {
	case "ms":
		return durScalar(time.Duration(v.Int())), nil
	case "size":
		return strScalar(units.FormatSize(v.Int())), nil
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nullScalar(), nil
		}
		if v.Kind() == reflect.Interface {
			return anyScalar(v.Interface()), nil
		}
		return encodeValue(v.Elem(), form)
	case reflect.Struct:
		return encodeStruct(v)
	case reflect.Slice:
		if form == "one-or-list" && v.Len() == 1 {
			return encodeValue(v.Index(0), "")
		}
		s := seqNode()
		for i := 0; i < v.Len(); i++ {
			n, err := encodeValue(v.Index(i), "")
			if err != nil {
				return nil, err
			}
			s.Content = append(s.Content, n)
		}
		return s, nil
	case reflect.Map:
		keys := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		m := mapNode()
		for _, k := range keys {
			n, err := encodeValue(v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key())), "")
			if err != nil {
				return nil, err
			}
			put(m, k, n)
		}
		return m, nil
	case reflect.String:
		return strScalar(v.String()), nil
	case reflect.Bool:
		return boolScalar(v.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Type() == durationType {
			return nil, fmt.Errorf("duration %v has no form tag", v.Interface())
		}
		return intScalar(v.Int()), nil
	case reflect.Float32, reflect.Float64:
		return floatScalar(v.Float()), nil
	}
	return nil, fmt.Errorf("cannot write a %s as YAML", v.Type())
}

// yamlTag is a parsed `yaml` struct tag.
type yamlTag struct {
	name                    string
	omitempty, flow, inline bool
}

func parseYAMLTag(f reflect.StructField) (yamlTag, bool) {
	tag, ok := f.Tag.Lookup("yaml")
	if !ok || tag == "-" {
		return yamlTag{}, false
	}
	parts := strings.Split(tag, ",")
	t := yamlTag{name: parts[0]}
	for _, o := range parts[1:] {
		switch o {
		case "omitempty":
			t.omitempty = true
		case "flow":
			t.flow = true
		case "inline":
			t.inline = true
		}
	}
	return t, true
}

func encodeStruct(v reflect.Value) (*yaml.Node, error) {
	m := mapNode()
	typ := v.Type()
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		tag, ok := parseYAMLTag(f)
		if !ok {
			continue
		}
		fv := v.Field(i)
		if tag.inline {
			if fv.Kind() == reflect.Pointer && fv.IsNil() {
				continue
			}
			pm, ok := fv.Interface().(pairsMarshaler)
			if !ok {
				return nil, fmt.Errorf("%s.%s: inline field without yamlPairs", typ.Name(), f.Name)
			}
			m.Content = append(m.Content, pm.yamlPairs()...)
			continue
		}
		if tag.omitempty && isEmpty(fv) {
			continue
		}
		form := f.Tag.Get("form")
		var n *yaml.Node
		var err error
		if form == "keyed" {
			n, err = encodeKeyed(fv)
		} else {
			n, err = encodeValue(fv, form)
		}
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", typ.Name(), f.Name, err)
		}
		if tag.flow && (n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode) {
			n.Style = yaml.FlowStyle
		}
		put(m, tag.name, n)
	}
	return m, nil
}

// encodeKeyed writes a slice of structs as a mapping from each element's
// Name to the element.
func encodeKeyed(v reflect.Value) (*yaml.Node, error) {
	m := mapNode()
	for i := 0; i < v.Len(); i++ {
		e := v.Index(i)
		n, err := encodeValue(e, "")
		if err != nil {
			return nil, err
		}
		put(m, e.FieldByName("Name").String(), n)
	}
	return m, nil
}

// isEmpty is omitempty's test: nil slices and maps (not empty ones), nil
// pointers and interfaces, and zero scalars.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface:
		return v.IsNil()
	case reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	}
	return false
}

// Node builders. Every scalar carries its tag, so the encoder quotes
// strings that would otherwise read back as numbers or booleans.

func mapNode() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"} }

func seqNode() *yaml.Node { return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"} }

func nullScalar() *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
}

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

// floatScalar writes a whole number as an int: validation bounds and
// cpus read back equal either way.
func floatScalar(f float64) *yaml.Node {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return intScalar(int64(f))
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: strconv.FormatFloat(f, 'g', -1, 64)}
}

func durScalar(d time.Duration) *yaml.Node {
	s := units.FormatDuration(d)
	if strings.HasSuffix(s, "d") || strings.HasSuffix(s, "ns") {
		return strScalar(s)
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: s}
}

// anyScalar writes a value as decoded from YAML (a default, an example,
// an enum member).
func anyScalar(v any) *yaml.Node {
	switch x := v.(type) {
	case nil:
		return nullScalar()
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
