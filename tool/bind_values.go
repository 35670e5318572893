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

// Values are held in JSON's shapes: string, float64, bool, []any,
// map[string]any. Numbers of any Go type become float64.

var numberRe = lazyRegexp(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// normalizeJSON converts Go numbers to float64 and json.Number, nested
// slices and maps to the JSON shapes, recursively.
func normalizeJSON(v any) any {
	switch x := v.(type) {
	case Text:
		return string(x)
	case int:
		return float64(x)
	case int8:
		return float64(x)
	case int16:
		return float64(x)
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	case uint:
		return float64(x)
	case uint8:
		return float64(x)
	case uint16:
		return float64(x)
	case uint32:
		return float64(x)
	case uint64:
		return float64(x)
	case float32:
		return float64(x)
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return x.String()
		}
		return f
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeJSON(e)
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalizeJSON(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = normalizeJSON(e)
		}
		return out
	}
	return v
}

// formatNumber prints integers without a fraction and other numbers in
// the shortest form that reads back the same.
func formatNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// textOf is the text a typed value substitutes as: strings as they are,
// numbers without a trailing ".0", booleans as true/false, arrays and
// objects as compact JSON (escaped as one word where they are used), nil
// as "".
func textOf(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return formatNumber(x)
	case bool:
		if x {
			return "true"
		}
		return "false"
	case []any, map[string]any:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
	return textOf(normalizeJSON(v))
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// coerce converts an input or default value to the parameter's type.
// Strings (from the command line, or sent as strings in JSON) are parsed:
// numbers in decimal, booleans as true/false/1/0/yes/no, arrays as a JSON
// array or a comma-separated list, objects as JSON.
func coerce(t ParamType, in any) (any, error) {
	v := normalizeJSON(in)
	if t == "" {
		t = TypeString
	}
	switch t {
	case TypeString:
		switch x := v.(type) {
		case string:
			return x, nil
		case float64, bool:
			return textOf(x), nil
		}
	case TypeNumber:
		switch x := v.(type) {
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("want a finite number")
			}
			return x, nil
		case string:
			s := strings.TrimSpace(x)
			if !numberRe().MatchString(s) {
				return nil, fmt.Errorf("%q is not a number", x)
			}
			f, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsInf(f, 0) {
				return nil, fmt.Errorf("%q is not a finite number", x)
			}
			return f, nil
		}
	case TypeBoolean:
		switch x := v.(type) {
		case bool:
			return x, nil
		case float64:
			if x == 0 || x == 1 {
				return x == 1, nil
			}
		case string:
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "true", "1", "yes":
				return true, nil
			case "false", "0", "no":
				return false, nil
			}
			return nil, fmt.Errorf("%q is not a boolean (use true/false, 1/0 or yes/no)", x)
		}
	case TypeArray:
		switch x := v.(type) {
		case []any:
			return x, nil
		case string:
			s := strings.TrimSpace(x)
			if strings.HasPrefix(s, "[") {
				var arr []any
				d := json.NewDecoder(strings.NewReader(s))
				d.UseNumber()
				if err := d.Decode(&arr); err != nil {
					return nil, fmt.Errorf("%q is not a JSON array: %v", x, err)
				}
				return normalizeJSON(arr), nil
			}
			if s == "" {
				return []any{}, nil
			}
			parts := strings.Split(x, ",")
			out := make([]any, len(parts))
			for i, p := range parts {
				out[i] = strings.TrimSpace(p)
			}
			return out, nil
		}
	case TypeObject:
		switch x := v.(type) {
		case map[string]any:
			return x, nil
		case string:
			var obj map[string]any
			d := json.NewDecoder(strings.NewReader(x))
			d.UseNumber()
			if err := d.Decode(&obj); err != nil || obj == nil {
				return nil, fmt.Errorf("%q is not a JSON object", x)
			}
			return normalizeJSON(obj), nil
		}
	default:
		return nil, fmt.Errorf("unknown parameter type %q", t)
	}
	return nil, fmt.Errorf("want %s, got %s", t, typeName(v))
}

// checkRules applies every validation rule that fits the value's type and
// returns the first violation. Rules that do not fit the type (minimum on
// a string) are the loader's concern and are ignored here.
func checkRules(v any, r *Validation) error {
	if r == nil {
		return nil
	}
	if r.Type != "" && !hasType(v, r.Type) {
		return fmt.Errorf("want %s, got %s", r.Type, typeName(v))
	}
	switch x := v.(type) {
	case float64:
		if r.Minimum != nil && x < *r.Minimum {
			return fmt.Errorf("%s is less than the minimum %s", formatNumber(x), formatNumber(*r.Minimum))
		}
		if r.Maximum != nil && x > *r.Maximum {
			return fmt.Errorf("%s is more than the maximum %s", formatNumber(x), formatNumber(*r.Maximum))
		}
	case string:
		n := utf8.RuneCountInString(x)
		if r.MinLength != nil && n < *r.MinLength {
			return fmt.Errorf("%q is %d characters, shorter than minLength %d", x, n, *r.MinLength)
		}
		if r.MaxLength != nil && n > *r.MaxLength {
			return fmt.Errorf("%q is %d characters, longer than maxLength %d", x, n, *r.MaxLength)
		}
		if r.Pattern != "" {
			re, err := regexp.Compile(r.Pattern)
			if err != nil {
				return fmt.Errorf("pattern %q does not compile: %v", r.Pattern, err)
			}
			if !re.MatchString(x) {
				return fmt.Errorf("%q does not match the pattern %q", x, r.Pattern)
			}
		}
	case []any:
		if r.MinItems != nil && len(x) < *r.MinItems {
			return fmt.Errorf("%d items, fewer than minItems %d", len(x), *r.MinItems)
		}
		if r.MaxItems != nil && len(x) > *r.MaxItems {
			return fmt.Errorf("%d items, more than maxItems %d", len(x), *r.MaxItems)
		}
		if r.UniqueItems {
			if j, i, dup := firstDuplicate(x); dup {
				return fmt.Errorf("items %d and %d are equal, but uniqueItems is set", j, i)
			}
		}
	case map[string]any:
		var missing []string
		for _, k := range r.Required {
			if _, ok := x[k]; !ok {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("missing required properties: %s", strings.Join(missing, ", "))
		}
		keys := make([]string, 0, len(r.Properties))
		for k := range r.Properties {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			pv, ok := x[k]
			if !ok {
				continue
			}
			if err := checkRules(pv, r.Properties[k]); err != nil {
				return fmt.Errorf("property %s: %v", k, err)
			}
		}
	}
	if len(r.Enum) > 0 {
		for _, e := range r.Enum {
			if reflect.DeepEqual(normalizeJSON(e), v) {
				return nil
			}
			// A string value matches an enum entry written as a number or
			// boolean in YAML ("3" and 3), since YAML authors rarely quote.
			if s, ok := v.(string); ok && textOf(normalizeJSON(e)) == s {
				return nil
			}
		}
		opts := make([]string, len(r.Enum))
		for i, e := range r.Enum {
			opts[i] = textOf(normalizeJSON(e))
		}
		return fmt.Errorf("%q is not one of the allowed values: %s", textOf(v), strings.Join(opts, ", "))
	}
	return nil
}

func hasType(v any, t ParamType) bool {
	switch t {
	case TypeString:
		_, ok := v.(string)
		return ok
	case TypeNumber:
		_, ok := v.(float64)
		return ok
	case TypeBoolean:
		_, ok := v.(bool)
		return ok
	case TypeArray:
		_, ok := v.([]any)
		return ok
	case TypeObject:
		_, ok := v.(map[string]any)
		return ok
	}
	return true
}

// firstDuplicate returns the indexes of the first two equal items of x.
func firstDuplicate(x []any) (int, int, bool) {
	seen := map[string]int{}
	for i, e := range x {
		k := canonical(e)
		if j, dup := seen[k]; dup {
			return j, i, true
		}
		seen[k] = i
	}
	return 0, 0, false
}

// canonical is a comparable encoding of a JSON value (map keys sorted by
// encoding/json).
func canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// closest returns the candidate nearest to name by edit distance
// (case-insensitive), or "" when none is reasonably close.
func closest(name string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		d := editDistance(strings.ToLower(name), strings.ToLower(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 || bestD > max(2, len(name)/3) {
		return ""
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
