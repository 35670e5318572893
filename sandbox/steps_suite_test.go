package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/tool"
)

func TestCheckExpected(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "out"), 0o755)
	os.WriteFile(filepath.Join(dir, "out", "f.txt"), []byte("hello file"), 0o644)
	ok := &Result{Status: StatusOK, ExitCode: 0}
	failed := &Result{Status: StatusFailed, ExitCode: 3}
	i := func(n int) *int { return &n }
	b := func(v bool) *bool { return &v }
	tests := []struct {
		name string
		e    tool.Expected
		res  *Result
		out  string
		fail string // substring of the failures; "" for none
	}{
		{"default wants success", tool.Expected{}, failed, "", "want success"},
		{"default ok", tool.Expected{}, ok, "", ""},
		{"exit code", tool.Expected{ExitCode: i(3)}, failed, "", ""},
		{"exit code wrong", tool.Expected{ExitCode: i(0)}, failed, "", "exit-code: want 0, got 3"},
		{"error true", tool.Expected{Error: b(true)}, failed, "", ""},
		{"error true but ok", tool.Expected{Error: b(true)}, ok, "", "want the tool to fail"},
		{"contains", tool.Expected{OutputContains: []string{"Success"}}, ok, "All Success here", ""},
		{"contains missing", tool.Expected{OutputContains: []string{"Success"}}, ok, "nope", `output-contains "Success"`},
		{"not contains", tool.Expected{OutputNotContains: []string{"secret"}}, ok, "a secret", `output-not-contains "secret"`},
		{"matches multiline", tool.Expected{OutputMatches: []string{`^\s*2\s+4$`}}, ok, "x\n 2 4\n", ""},
		{"matches bad regexp", tool.Expected{OutputMatches: []string{`(`}}, ok, "", "not a regular expression"},
		{"file exists", tool.Expected{FileExists: []string{"out/f.txt"}, FileNotExists: []string{"out/g.txt"}}, ok, "", ""},
		{"file missing", tool.Expected{FileExists: []string{"out/g.txt"}}, ok, "", "does not exist"},
		{"file escapes", tool.Expected{FileExists: []string{"../../etc/passwd"}}, ok, "", "leaves the test's working directory"},
		{"file absolute", tool.Expected{FileExists: []string{"/etc/passwd"}}, ok, "", "relative"},
		{"file contains", tool.Expected{FileContains: []tool.FileContains{{Path: "out/f.txt", Text: "hello"}}}, ok, "", ""},
		{"file lacks", tool.Expected{FileContains: []tool.FileContains{{Path: "out/f.txt", Text: "bye"}}}, ok, "", `"bye" not in it`},
	}
	for _, tt := range tests {
		got := strings.Join(checkExpected(tt.e, tt.res, tt.out, dir), "\n")
		if (tt.fail == "") != (got == "") || !strings.Contains(got, tt.fail) {
			t.Errorf("%s: failures %q, want %q", tt.name, got, tt.fail)
		}
	}
}
