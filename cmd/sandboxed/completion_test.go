package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
)

// asCLIEnv makes the test binary run as the CLI, so that a shell's
// completion function has a `sandboxed` to ask.
const asCLIEnv = "SANDBOXED_TEST_RUN_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLIEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// cliOnPath puts a `sandboxed` that is this test binary acting as the CLI
// in a fresh directory and returns a PATH that starts with it.
func cliOnPath(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := "#!/bin/sh\n" + asCLIEnv + "=1 exec '" + self + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "sandboxed"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// TestCompletionScripts loads each shell's script in that shell and
// completes two words with it: a command (`sandboxed to` → tool) and a
// flag (`sandboxed run --dr` → --dry-run).
func TestCompletionScripts(t *testing.T) {
	for _, tc := range []struct {
		shell string
		check string // a shell program; SCRIPT is the script's path
		want  []string
	}{
		{"bash", `source SCRIPT; complete -p sandboxed
COMP_WORDS=(sandboxed to); COMP_CWORD=1; _sandboxed_complete; printf '%s\n' "${COMPREPLY[@]}"
COMP_WORDS=(sandboxed run --dr); COMP_CWORD=2; _sandboxed_complete; printf '%s\n' "${COMPREPLY[@]}"`,
			[]string{"-F _sandboxed_complete sandboxed", "\ntool\n", "\n--dry-run\n"}},
		// zsh: the script is valid zsh (-n), and loads as sandboxed's
		// completion function after compinit.
		{"zsh", `zsh -n SCRIPT && autoload -U compinit && compinit -u -d "$TMPDIR/zcompdump" && source SCRIPT && print "comp=${_comps[sandboxed]}"`,
			[]string{"comp=_sandboxed"}},
		{"fish", `fish --no-execute SCRIPT; and source SCRIPT; and complete -C"sandboxed to"; and complete -C"sandboxed run --dr"`,
			[]string{"tool\t", "--dry-run\t"}},
	} {
		t.Run(tc.shell, func(t *testing.T) {
			testenv.NeedCommand(t, tc.shell)
			out, errOut, code := sandboxed(t, "completion", tc.shell)
			if code != 0 || !strings.Contains(out, "sandboxed") {
				t.Fatalf("completion %s: exit %d, %q, stderr %q", tc.shell, code, out, errOut)
			}
			script := filepath.Join(t.TempDir(), "completion."+tc.shell)
			if err := os.WriteFile(script, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(tc.shell, "-c", strings.ReplaceAll(tc.check, "SCRIPT", "'"+script+"'"))
			cmd.Env = append(os.Environ(), "PATH="+cliOnPath(t), "TMPDIR="+t.TempDir(), "HOME="+t.TempDir())
			got, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", tc.shell, err, got)
			}
			for _, w := range tc.want {
				if !strings.Contains("\n"+string(got), w) {
					t.Errorf("%s: output lacks %q:\n%s", tc.shell, w, got)
				}
			}
		})
	}
}

// TestCompletionUsage: a shell it does not know, or none, is a usage
// error.
func TestCompletionUsage(t *testing.T) {
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}, {"completion", "bash", "zsh"}} {
		_, errOut, code := sandboxed(t, args...)
		if code != exitUsage || !strings.Contains(errOut, "bash, zsh or fish") {
			t.Errorf("%v: exit %d, stderr %q; want %d and the shells", args, code, errOut, exitUsage)
		}
	}
}
