package tool

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const argparseHelp = `usage: convert.py [-h] --celsius CELSIUS [--unit {F,K}] [-v] [--output-file OUTPUT_FILE]
                  source [extra]

Convert a temperature between units

positional arguments:
  source                Where the value comes from
  extra                 Optional extra

options:
  -h, --help            show this help message and exit
  --celsius CELSIUS     Temperature in Celsius
  --unit {F,K}          Target unit
  -v, --verbose         Be chatty about
                        what happens
  --output-file OUTPUT_FILE
                        Write the result here
`

func TestParseHelp(t *testing.T) {
	h, ok := ParseHelp(argparseHelp)
	if !ok {
		t.Fatal("argparse help not recognised")
	}
	if h.Description != "Convert a temperature between units" {
		t.Errorf("description = %q", h.Description)
	}
	want := []HelpArg{
		{Name: "source", Help: "Where the value comes from", Required: true},
		{Name: "extra", Help: "Optional extra"},
		{Flag: "--celsius", Name: "celsius", TakesValue: true, Help: "Temperature in Celsius", Required: true},
		{Flag: "--unit", Name: "unit", TakesValue: true, Choices: []string{"F", "K"}, Help: "Target unit"},
		{Flag: "--verbose", Name: "verbose", Help: "Be chatty about what happens"},
		{Flag: "--output-file", Name: "output_file", TakesValue: true, Help: "Write the result here"},
	}
	if !reflect.DeepEqual(h.Args, want) {
		t.Errorf("args =\n%+v\nwant\n%+v", h.Args, want)
	}

	shHelp := "Usage: fetch.sh [--verbose] --url URL\nFetch a page.\n\nOptions:\n  --url URL     The page\n  --verbose     Talk\n  -h, --help    Show help\n"
	h, ok = ParseHelp(shHelp)
	if !ok || h.Description != "Fetch a page." || len(h.Args) != 2 || !h.Args[0].Required || h.Args[1].Required {
		t.Errorf("sh help = %+v", h)
	}
	if _, ok := ParseHelp("just some output\n"); ok {
		t.Error("text without a usage line was taken for help")
	}
}

// TestHelpDefinition runs the generated argv (as `run:` binds it) against
// a stand-in script that prints its arguments, one per line.
func TestHelpDefinition(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "args.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nfor a; do printf '%s\\n' \"$a\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h, _ := ParseHelp(argparseHelp)
	def, err := HelpDefinition(Script{File: "args.sh", Path: script, Argv: []string{script}}, h, "convert")
	if err != nil {
		t.Fatal(err)
	}
	def = roundTrip(t, def)
	for _, tc := range []struct {
		in   Input
		want []string
	}{
		{Input{"source": "s", "celsius": "10"}, []string{"--celsius=10", "--", "s"}},
		{Input{"source": "-rf $(id)", "celsius": "1 2", "verbose": "true", "unit": "K", "extra": "e"},
			[]string{"--celsius=1 2", "--unit=K", "--verbose", "--", "-rf $(id)", "e"}},
		{Input{"source": "s", "celsius": "1", "verbose": "false"}, []string{"--celsius=1", "--", "s"}},
	} {
		b, err := Bind(def, tc.in, BindEnv{Workspace: dir})
		if err != nil {
			t.Fatal(err)
		}
		argv := b.Steps[0].Argv
		if !reflect.DeepEqual(argv[1:], tc.want) {
			t.Errorf("argv = %q, want %q", argv[1:], tc.want)
		}
		out, err := exec.Command(argv[0], argv[1:]...).Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("script saw %q", got)
		}
	}
	if _, err := Bind(def, Input{"source": "s", "celsius": "1", "unit": "C"}, BindEnv{Workspace: dir}); err == nil {
		t.Error("a value outside the choices was accepted")
	}
	if _, err := Bind(def, Input{"source": "s"}, BindEnv{Workspace: dir}); err == nil {
		t.Error("a missing required option was accepted")
	}
}

func TestCLIDefinition(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "args.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nfor a; do printf '%s\\n' \"$a\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ds, err := ParseSchemaDump(`{"name":"weather","parameters":{"type":"object","properties":{"city_name":{"type":"string"},"days":{"type":"integer"},"verbose":{"type":"boolean"}},"required":["city_name"]}}`, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sub  string
		in   Input
		want []string
	}{
		{"", Input{"city_name": "Paris $(id)"}, []string{"--city-name=Paris $(id)"}},
		{"", Input{"city_name": "x", "days": "3", "verbose": "true"}, []string{"--city-name=x", "--days=3", "--verbose"}},
		{"", Input{"city_name": "x", "verbose": "false"}, []string{"--city-name=x"}},
		{"weather", Input{"city_name": "x"}, []string{"weather", "--city-name=x"}},
	} {
		def, err := CLIDefinition(Script{File: "args.sh", Path: script, Argv: []string{script}}, ds[0], "weather", tc.sub)
		if err != nil {
			t.Fatal(err)
		}
		def = roundTrip(t, def)
		b, err := Bind(def, tc.in, BindEnv{Workspace: dir})
		if err != nil {
			t.Fatal(err)
		}
		argv := b.Steps[0].Argv
		out, err := exec.Command(argv[0], argv[1:]...).Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("script saw %q, want %q", got, tc.want)
		}
	}
}
