package tool

import (
	"errors"
	"testing"
)

// FuzzLoad: Parse never panics; every error is a *LoadError whose
// diagnostics all have positions >= 1:1; every definition that loads
// marshals (yaml and json) and parses back equal. The seed corpus in
// testdata/fuzz/FuzzLoad holds the conformance corpus and the examples.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("description: d\nbash: echo {X}\nparameters:\n  X:\n    description: x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		def, err := Parse(data, "fuzz.yaml")
		if err != nil {
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("error is %T: %v", err, err)
			}
			if len(le.Diags) == 0 {
				t.Fatal("LoadError without diagnostics")
			}
			for _, d := range le.Diags {
				if d.Pos.Line < 1 || d.Pos.Col < 1 {
					t.Fatalf("diagnostic without position: %+v", d)
				}
			}
			return
		}
		if def == nil {
			t.Fatal("nil definition without error")
		}
		// The name index relies on it: a file's name does not depend
		// on whether it is valid.
		if n := sniffData(data, "fuzz.yaml"); n != def.Name {
			t.Fatalf("sniffData says %q, Parse %q", n, def.Name)
		}
		checkRoundTrip(t, "fuzz", def)
	})
}
