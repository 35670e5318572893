package tool

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteAtomic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "dir")
	p := filepath.Join(dir, "t.yaml")
	if err := WriteAtomic(p, []byte("one"), false); err != nil {
		t.Fatal(err)
	}
	err := WriteAtomic(p, []byte("two"), false)
	if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "--overwrite") {
		t.Fatalf("second write = %v, want ErrExists with an --overwrite hint", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "one" {
		t.Fatalf("refused write changed the file: %q", b)
	}
	if err := WriteAtomic(p, []byte("three"), true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "three" {
		t.Fatalf("overwrite wrote %q", b)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v", fi.Mode())
	}
	// No temporary files are left behind.
	des, _ := os.ReadDir(dir)
	if len(des) != 1 {
		t.Errorf("directory holds %d entries, want 1: %v", len(des), des)
	}
}

func TestImportFile(t *testing.T) {
	src := filepath.Join(t.TempDir(), "incoming.yaml")
	writeFile(t, src, "# keep this comment\nname: greet\n"+okTool)
	dir := filepath.Join(t.TempDir(), "tools")
	dst, err := ImportFile(src, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if dst != filepath.Join(dir, "greet.yaml") {
		t.Errorf("dst = %s", dst)
	}
	if b, _ := os.ReadFile(dst); !strings.HasPrefix(string(b), "# keep this comment") {
		t.Errorf("import did not copy the bytes: %q", b)
	}
	if _, err := ImportFile(src, dir, false); !errors.Is(err, ErrExists) {
		t.Errorf("second import = %v, want ErrExists", err)
	}
	if _, err := ImportFile(src, dir, true); err != nil {
		t.Errorf("import with overwrite = %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	writeFile(t, bad, "name: bad\n")
	if _, err := ImportFile(bad, dir, false); !errors.Is(err, ErrInvalid) {
		t.Errorf("import of an invalid file = %v, want ErrInvalid", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("invalid import wrote a file")
	}
}

func TestMarshalFormats(t *testing.T) {
	def := parseOK(t, "name: t\ndescription: d\nbash: echo {X}\nparameters:\n  X:\n    description: \"yes\"\n    default: \"true\"\n")
	if _, err := Marshal(def, "toml"); err == nil {
		t.Error("unknown format accepted")
	}
	y, err := Marshal(def, "yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Strings that look like other YAML types stay strings.
	if !strings.Contains(string(y), `default: "true"`) {
		t.Errorf("yaml:\n%s", y)
	}
	checkRoundTrip(t, "t", def)
}

// Every example under examples/tools loads clean and round-trips.
func TestExamples(t *testing.T) {
	files, _ := filepath.Glob("../examples/tools/*.yaml")
	if len(files) == 0 {
		t.Fatal("no examples found in ../examples/tools")
	}
	for _, f := range files {
		def, err := Load(f, ScopePath)
		if err != nil {
			t.Errorf("%s:\n%v", f, err)
			continue
		}
		if def.Name != strings.TrimSuffix(filepath.Base(f), ".yaml") {
			t.Errorf("%s: name %q does not match the file name", f, def.Name)
		}
		checkRoundTrip(t, f, def)
	}
}
