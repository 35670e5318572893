package tool

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestSpecExamples binds the spec's example tools with hostile values and
// runs the resulting scripts (the commands swapped for printf), proving
// each value arrives as one literal piece where the spec puts it.
func TestSpecExamples(t *testing.T) {
	hostile := `it's "x" $(id) ; | && *`
	cases := []struct {
		name string
		d    *Definition
		in   Input
		want []string
	}{
		{
			name: "weather-lookup: inside '...'",
			d: &Definition{Name: "weather-lookup", Description: "d",
				Exec: &Exec{Kind: ExecBash, Command: `printf '%s\0' 'wttr.in/{LOCATION}?format={FORMAT}'`},
				Parameters: []Parameter{
					{Name: "LOCATION", Type: TypeString, Required: true},
					{Name: "FORMAT", Type: TypeString, Default: "3", HasDefault: true},
				}},
			in:   Input{"LOCATION": hostile},
			want: []string{"wttr.in/" + hostile + "?format=3"},
		},
		{
			name: "find-files: bare and inside \"...\"",
			d: &Definition{Name: "find-files", Description: "d",
				Commands: &PlatformCommands{Default: `printf '%s\0' {DIRECTORY} -name "{PATTERN}"`,
					Platforms: map[string]string{"windows": "powershell -Command \"Get-ChildItem -Path '{DIRECTORY}'\""}},
				Parameters: []Parameter{
					{Name: "DIRECTORY", Type: TypeString},
					{Name: "PATTERN", Type: TypeString},
				}},
			in:   Input{"DIRECTORY": hostile, "PATTERN": "*.go"},
			want: []string{hostile, "-name", "*.go"},
		},
		{
			name: "search-code: empty flags vanish, glob stays literal",
			d: &Definition{Name: "search-code", Description: "d",
				Commands: &PlatformCommands{Default: `printf '%s\0' {CASE_SENSITIVE} {WHOLE_WORD} "{PATTERN}" {DIRECTORY} --include="*.{FILE_TYPE}"`},
				Parameters: []Parameter{
					{Name: "PATTERN", Type: TypeString, Required: true},
					{Name: "DIRECTORY", Type: TypeString, Default: ".", HasDefault: true,
						Validation: &Validation{Pattern: `^[^<>:"\\|?*]+$`}},
					{Name: "FILE_TYPE", Type: TypeString, Default: "*", HasDefault: true},
					{Name: "CASE_SENSITIVE", Type: TypeBoolean, Default: false, HasDefault: true, Transform: "value ? '' : '-i'"},
					{Name: "WHOLE_WORD", Type: TypeBoolean, Default: false, HasDefault: true, Transform: "value ? '-w' : ''"},
				}},
			in:   Input{"PATTERN": hostile, "CASE_SENSITIVE": "true"},
			want: []string{hostile, ".", "--include=*.*"},
		},
		{
			name: "github-repo-clone: script with quotes and if",
			d: &Definition{Name: "github-repo-clone", Description: "d",
				Steps: []Step{{Name: "report-status", Exec: &Exec{Kind: ExecBash, Command: "if [ -d \"{OUTPUT_DIR}/.git\" ]; then\n  echo no\nelse\n  printf '%s\\0' \"Failed to clone {OWNER}/{REPO}\" {OUTPUT_DIR}\nfi\n"}}},
				Parameters: []Parameter{
					{Name: "OWNER", Type: TypeString, Required: true},
					{Name: "REPO", Type: TypeString, Required: true},
					{Name: "OUTPUT_DIR", Type: TypeString, Default: "{REPO}", HasDefault: true},
				}},
			in:   Input{"OWNER": "o", "REPO": hostile},
			want: []string{"Failed to clone o/" + hostile, hostile},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := Bind(c.d, c.in, BindEnv{Transform: TransformLimits{Timeout: 10 * time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(b.Steps[0].Argv[0], b.Steps[0].Argv[1:]...).Output()
			if err != nil {
				t.Fatalf("run %q: %v", b.Steps[0].Argv, err)
			}
			got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("script %s\ngot  %q\nwant %q", b.Steps[0].Command, got, c.want)
			}
		})
	}
}

func TestBindCleanupAndTemp(t *testing.T) {
	d := &Definition{Name: "t", Description: "d", Exec: &Exec{Kind: ExecBash, Command: "true"},
		Parameters: []Parameter{{Name: "WS", Type: TypeString, Default: "a b", HasDefault: true}},
		FilePaths:  &FilePaths{TempDirectory: "{TEMP}/cycod-tools/{TOOL_NAME}"},
		Resources:  &Resources{Cleanup: &Cleanup{DeleteTempFiles: true, FinalCommands: []string{"rm -rf {WS} {TEMP_DIR}"}}},
	}
	b, err := Bind(d, nil, BindEnv{Temp: "/tmp"})
	if err != nil {
		t.Fatal(err)
	}
	if b.TempDirectory != "/tmp/cycod-tools/t" {
		t.Errorf("temp %q", b.TempDirectory)
	}
	if len(b.Cleanup) != 1 || !reflect.DeepEqual(b.Cleanup[0].Argv, []string{"/bin/sh", "-c", "rm -rf 'a b' {TEMP_DIR}"}) {
		t.Errorf("cleanup %+v", b.Cleanup)
	}
	if in := InputFromStrings(map[string]string{"A": "1"}); in["A"] != Text("1") {
		t.Errorf("InputFromStrings %v", in)
	}
}
