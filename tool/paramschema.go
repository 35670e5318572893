package tool

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A parameter schema is the JSON Schema a tool gives one of its parameters
// where CYCOD's single `type` cannot say it: a union ("type": ["number",
// "boolean"]), no type at all (any JSON value), "integer", typed array
// items, nested objects. It is kept under sandboxed.parameter-schemas
// (discover writes the script's own schema there), exported as the
// property's schema, and binding reads and checks values by it:
//
//   - a JSON value (--params-json, MCP) that the schema's types allow is
//     kept exactly as given; a JSON string the schema does not allow as a
//     string is read as command-line text is;
//   - command-line text (NAME=VALUE) tries the schema's types in their
//     order, every type but string first, then string: "1" is the number 1
//     for ["number", "boolean"] and for ["string", "number"] alike, "abc"
//     is the string "abc" for the second and an error for the first;
//   - with no type, text that is a JSON value is that value, else a string.
//
// The keywords checked are type, enum, const, minimum, maximum,
// exclusiveMinimum, exclusiveMaximum, multipleOf, minLength, maxLength,
// pattern, items, minItems, maxItems, uniqueItems, properties, required,
// additionalProperties, anyOf, oneOf and allOf. Others ($ref, format,
// description, default, …) are kept for export and not checked: the tool
// checks what it declares.

// ParamSchema is one parameter's JSON Schema, in JSON's shapes
// (map[string]any, []any, string, float64, bool, nil).
type ParamSchema = map[string]any

// schemaTypeNames are the JSON Schema type names.
var schemaTypeNames = []string{"string", "number", "integer", "boolean", "array", "object", "null"}

// ParamSchemaOf returns the schema sandboxed.parameter-schemas gives the
// parameter name, or nil.
func (d *Definition) ParamSchemaOf(name string) ParamSchema {
	if d.Sandboxed == nil {
		return nil
	}
	return d.Sandboxed.ParameterSchemas[name]
}

// CheckParamSchema checks a parameter schema's keywords that binding
// enforces: their values have the right shapes, types are known names and
// patterns compile. It returns the first problem, with its path.
func CheckParamSchema(s ParamSchema) error {
	return checkSchemaAt(s, "")
}

func checkSchemaAt(s map[string]any, at string) error {
	where := func(k string) string {
		if at == "" {
			return k
		}
		return at + "." + k
	}
	if t, ok := s["type"]; ok {
		var names []any
		switch x := t.(type) {
		case string:
			names = []any{x}
		case []any:
			if len(x) == 0 {
				return fmt.Errorf("%s is an empty list", where("type"))
			}
			names = x
		default:
			return fmt.Errorf("%s must be a type name or a list of them", where("type"))
		}
		for _, n := range names {
			ns, ok := n.(string)
			if !ok || !inList(schemaTypeNames, ns) {
				return fmt.Errorf("%s: %v is not a JSON Schema type (%s)", where("type"), n, strings.Join(schemaTypeNames, ", "))
			}
		}
	}
	for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"} {
		if v, ok := s[k]; ok {
			if _, num := v.(float64); !num && !(k[0] == 'e' && isBool(v)) {
				return fmt.Errorf("%s must be a number", where(k))
			}
		}
	}
	for _, k := range []string{"minLength", "maxLength", "minItems", "maxItems"} {
		if v, ok := s[k]; ok {
			if f, num := v.(float64); !num || f < 0 || f != math.Trunc(f) {
				return fmt.Errorf("%s must be a whole number of at least 0", where(k))
			}
		}
	}
	if v, ok := s["enum"]; ok {
		if _, list := v.([]any); !list {
			return fmt.Errorf("%s must be a list", where("enum"))
		}
	}
	if v, ok := s["pattern"]; ok {
		p, str := v.(string)
		if !str {
			return fmt.Errorf("%s must be a string", where("pattern"))
		}
		if _, err := regexp.Compile(p); err != nil {
			return fmt.Errorf("%s %q does not compile (Go RE2 syntax): %v", where("pattern"), p, err)
		}
	}
	if v, ok := s["required"]; ok {
		l, list := v.([]any)
		if !list {
			return fmt.Errorf("%s must be a list of property names", where("required"))
		}
		for _, e := range l {
			if _, str := e.(string); !str {
				return fmt.Errorf("%s must be a list of property names", where("required"))
			}
		}
	}
	sub := func(k string, v any) error {
		m, ok := v.(map[string]any)
		if !ok {
			if isBool(v) {
				return nil
			}
			return fmt.Errorf("%s must be a schema (an object)", where(k))
		}
		return checkSchemaAt(m, where(k))
	}
	for _, k := range []string{"items", "additionalProperties", "not"} {
		if v, ok := s[k]; ok {
			if err := sub(k, v); err != nil {
				return err
			}
		}
	}
	if v, ok := s["properties"]; ok {
		m, obj := v.(map[string]any)
		if !obj {
			return fmt.Errorf("%s must be an object of schemas", where("properties"))
		}
		for _, k := range sortedAnyKeys(m) {
			if err := sub("properties."+k, m[k]); err != nil {
				return err
			}
		}
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if v, ok := s[k]; ok {
			l, list := v.([]any)
			if !list || len(l) == 0 {
				return fmt.Errorf("%s must be a non-empty list of schemas", where(k))
			}
			for i, e := range l {
				if err := sub(fmt.Sprintf("%s[%d]", k, i), e); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func isBool(v any) bool { _, ok := v.(bool); return ok }

func sortedAnyKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// schemaTypes returns the types s allows, in its order, and false when it
// allows any: its "type", else the types of its anyOf or oneOf branches
// (any when a branch has none).
func schemaTypes(s map[string]any) ([]string, bool) {
	switch t := s["type"].(type) {
	case string:
		return []string{t}, true
	case []any:
		var out []string
		for _, e := range t {
			if n, ok := e.(string); ok {
				out = append(out, n)
			}
		}
		return out, true
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		branches, ok := s[k].([]any)
		if !ok {
			continue
		}
		var out []string
		for _, b := range branches {
			m, ok := b.(map[string]any)
			if !ok {
				return nil, false
			}
			ts, typed := schemaTypes(m)
			if !typed {
				return nil, false
			}
			for _, t := range ts {
				if !inList(out, t) {
					out = append(out, t)
				}
			}
		}
		return out, true
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		var out []string
		for _, v := range e {
			if t := jsonTypeOf(v); !inList(out, t) {
				out = append(out, t)
			}
		}
		return out, true
	}
	return nil, false
}

// jsonTypeOf is the JSON Schema type name of a value in JSON's shapes
// ("number" for every number).
func jsonTypeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

// hasSchemaType reports whether v is of JSON Schema type t.
func hasSchemaType(v any, t string) bool {
	if t == "integer" {
		f, ok := v.(float64)
		return ok && f == math.Trunc(f) && !math.IsInf(f, 0)
	}
	return jsonTypeOf(v) == t
}

// coerceSchema reads a parameter's value by its schema: command-line text
// (a Text) by the schema's types, string last; a JSON value as given when
// a type allows it, a JSON string no type allows as a string read as text.
func coerceSchema(s ParamSchema, in any) (any, error) {
	types, typed := schemaTypes(s)
	if t, isText := in.(Text); isText {
		return readSchemaText(s, string(t), types, typed)
	}
	v := normalizeJSON(in)
	if x, ok := v.(float64); ok && (math.IsNaN(x) || math.IsInf(x, 0)) {
		return nil, fmt.Errorf("want a finite number")
	}
	if !typed {
		return v, nil
	}
	for _, t := range types {
		if hasSchemaType(v, t) {
			return v, nil
		}
	}
	if str, ok := v.(string); ok {
		return readSchemaText(s, str, types, typed)
	}
	return nil, fmt.Errorf("want %s, got %s", typeList(types), typeName(v))
}

// readSchemaText reads command-line text as the first of types it parses
// as, string last. With no types (any JSON value), text that is JSON is
// that value, else the string. Where an array is allowed and a string is
// not, text that is no JSON array is a comma-separated list, each item
// read by the items schema.
func readSchemaText(s map[string]any, text string, types []string, typed bool) (any, error) {
	if !typed {
		if v, ok := parseJSONText(text); ok {
			return v, nil
		}
		return text, nil
	}
	for _, t := range types {
		if t == "string" {
			continue
		}
		if v, ok := readTextAs(text, t); ok {
			return v, nil
		}
	}
	if inList(types, "string") {
		return text, nil
	}
	if inList(types, "array") {
		items, _ := s["items"].(map[string]any)
		if items == nil {
			items = map[string]any{}
		}
		its, ityped := schemaTypes(items)
		out := []any{}
		if strings.TrimSpace(text) != "" {
			for _, part := range strings.Split(text, ",") {
				v, err := readSchemaText(items, strings.TrimSpace(part), its, ityped)
				if err != nil {
					return nil, fmt.Errorf("%q is not a JSON array, nor a list whose items are %s", text, typeList(its))
				}
				out = append(out, v)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%q is not %s", text, typeList(types))
}

// readTextAs reads text as one JSON Schema type (not string).
func readTextAs(text, t string) (any, bool) {
	s := strings.TrimSpace(text)
	switch t {
	case "number", "integer":
		if !numberRe().MatchString(s) {
			return nil, false
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || (t == "integer" && f != math.Trunc(f)) {
			return nil, false
		}
		return f, true
	case "boolean":
		switch strings.ToLower(s) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	case "null":
		if s == "null" {
			return nil, true
		}
	case "array", "object":
		if v, ok := parseJSONText(s); ok && jsonTypeOf(v) == t {
			return v, true
		}
	}
	return nil, false
}

// parseJSONText parses text that is exactly one JSON value.
func parseJSONText(text string) (any, bool) {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		return nil, false
	}
	return normalizeJSON(v), true
}

func typeList(types []string) string {
	if len(types) == 1 {
		return article(types[0])
	}
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = article(t)
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

func article(t string) string {
	switch t {
	case "array", "object", "integer":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

// checkSchema checks v against s; the error says where in v the first
// violation is.
func checkSchema(s map[string]any, v any) error {
	return checkSchemaValue(s, v, "")
}

func checkSchemaValue(s map[string]any, v any, at string) error {
	fail := func(format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		if at != "" {
			msg = at + ": " + msg
		}
		return fmt.Errorf("%s", msg)
	}
	if _, has := s["type"]; has {
		types, _ := schemaTypes(s)
		ok := false
		for _, t := range types {
			if hasSchemaType(v, t) {
				ok = true
				break
			}
		}
		if !ok {
			return fail("want %s, got %s", typeList(types), typeName(v))
		}
	}
	if e, ok := s["enum"].([]any); ok {
		found := false
		for _, x := range e {
			if reflect.DeepEqual(normalizeJSON(x), v) {
				found = true
				break
			}
		}
		if !found {
			opts := make([]string, len(e))
			for i, x := range e {
				opts[i] = canonical(normalizeJSON(x))
			}
			return fail("%s is not one of the allowed values: %s", canonical(v), strings.Join(opts, ", "))
		}
	}
	if c, ok := s["const"]; ok && !reflect.DeepEqual(normalizeJSON(c), v) {
		return fail("%s is not the allowed value %s", canonical(v), canonical(normalizeJSON(c)))
	}
	num := func(k string) (float64, bool) { f, ok := s[k].(float64); return f, ok }
	switch x := v.(type) {
	case float64:
		if m, ok := num("minimum"); ok && x < m {
			return fail("%s is less than the minimum %s", formatNumber(x), formatNumber(m))
		}
		if m, ok := num("maximum"); ok && x > m {
			return fail("%s is more than the maximum %s", formatNumber(x), formatNumber(m))
		}
		if m, ok := num("exclusiveMinimum"); ok && x <= m {
			return fail("%s is not more than the exclusive minimum %s", formatNumber(x), formatNumber(m))
		}
		if m, ok := num("exclusiveMaximum"); ok && x >= m {
			return fail("%s is not less than the exclusive maximum %s", formatNumber(x), formatNumber(m))
		}
		if m, ok := num("multipleOf"); ok && m > 0 {
			if q := x / m; q != math.Trunc(q) {
				return fail("%s is not a multiple of %s", formatNumber(x), formatNumber(m))
			}
		}
	case string:
		n := utf8.RuneCountInString(x)
		if m, ok := num("minLength"); ok && float64(n) < m {
			return fail("%q is %d characters, shorter than minLength %s", x, n, formatNumber(m))
		}
		if m, ok := num("maxLength"); ok && float64(n) > m {
			return fail("%q is %d characters, longer than maxLength %s", x, n, formatNumber(m))
		}
		if p, ok := s["pattern"].(string); ok {
			re, err := regexp.Compile(p)
			if err != nil {
				return fail("pattern %q does not compile: %v", p, err)
			}
			if !re.MatchString(x) {
				return fail("%q does not match the pattern %q", x, p)
			}
		}
	case []any:
		if m, ok := num("minItems"); ok && float64(len(x)) < m {
			return fail("%d items, fewer than minItems %s", len(x), formatNumber(m))
		}
		if m, ok := num("maxItems"); ok && float64(len(x)) > m {
			return fail("%d items, more than maxItems %s", len(x), formatNumber(m))
		}
		if u, _ := s["uniqueItems"].(bool); u {
			if j, i, dup := firstDuplicate(x); dup {
				return fail("items %d and %d are equal, but uniqueItems is set", j, i)
			}
		}
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range x {
				if err := checkSchemaValue(items, e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	case map[string]any:
		if req, ok := s["required"].([]any); ok {
			var missing []string
			for _, r := range req {
				if k, ok := r.(string); ok {
					if _, has := x[k]; !has {
						missing = append(missing, k)
					}
				}
			}
			if len(missing) > 0 {
				return fail("missing required properties: %s", strings.Join(missing, ", "))
			}
		}
		props, _ := s["properties"].(map[string]any)
		for _, k := range sortedAnyKeys(x) {
			path := k
			if at != "" {
				path = at + "." + k
			}
			if ps, ok := props[k].(map[string]any); ok {
				if err := checkSchemaValue(ps, x[k], path); err != nil {
					return err
				}
				continue
			}
			if _, declared := props[k]; declared {
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					return fail("property %s is not allowed (additionalProperties is false)", k)
				}
			case map[string]any:
				if err := checkSchemaValue(ap, x[k], path); err != nil {
					return err
				}
			}
		}
	}
	if all, ok := s["allOf"].([]any); ok {
		for _, b := range all {
			if m, ok := b.(map[string]any); ok {
				if err := checkSchemaValue(m, v, at); err != nil {
					return err
				}
			}
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		branches, ok := s[k].([]any)
		if !ok {
			continue
		}
		n := 0
		var first error
		for _, b := range branches {
			m, ok := b.(map[string]any)
			if !ok {
				n++
				continue
			}
			if err := checkSchemaValue(m, v, at); err != nil {
				if first == nil {
					first = err
				}
				continue
			}
			n++
		}
		switch {
		case n == 0:
			return fail("matches none of the %s schemas (first: %v)", k, first)
		case k == "oneOf" && n > 1:
			return fail("matches %d of the oneOf schemas, not exactly one", n)
		}
	}
	return nil
}
