package tool

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A definition with every field of the format is written exactly as the
// golden files say (key order, forms, quoting), and reads back equal.
func TestMarshalEveryField(t *testing.T) {
	def, err := Load("testdata/kitchen-sink.yaml", ScopePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"yaml", "json"} {
		got, err := Marshal(def, format)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile("testdata/kitchen-sink.golden." + format)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s differs from testdata/kitchen-sink.golden.%s:\n%s", format, format, got)
		}
	}
	checkRoundTrip(t, "kitchen-sink", def)
}

// Every field of the model says how it is written: a yaml tag (its key, or
// "-"), and a form for durations. A field added without one fails here
// instead of being silently left out of written definitions.
func TestModelYAMLTags(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(typ reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || typ.PkgPath() != reflect.TypeOf(Definition{}).PkgPath() || seen[typ] {
			return
		}
		seen[typ] = true
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			tag, ok := f.Tag.Lookup("yaml")
			if !ok {
				t.Errorf("%s.%s has no yaml tag", typ.Name(), f.Name)
				continue
			}
			if tag == "-" {
				continue
			}
			if f.Type == reflect.TypeOf(time.Duration(0)) && f.Tag.Get("form") != "ms" {
				t.Errorf("%s.%s is a duration without form:\"ms\"", typ.Name(), f.Name)
			}
			if strings.Contains(tag, ",inline") {
				if _, ok := reflect.New(f.Type).Elem().Interface().(pairsMarshaler); !ok {
					t.Errorf("%s.%s is inline but its type has no yamlPairs", typ.Name(), f.Name)
				}
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(Definition{}))
	if len(seen) < 20 {
		t.Errorf("walked %d model types, want all of them", len(seen))
	}
}
