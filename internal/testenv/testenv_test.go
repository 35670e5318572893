package testenv

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// fakeTB records how a helper stopped the test. Skip and Fatal end the
// calling goroutine as the real ones do (runtime.Goexit), so code after
// them must not run.
type fakeTB struct {
	testing.TB
	outcome string // "", "skip" or "fatal"
	msg     string
	errors  []string
	after   bool // the helper went on after stopping
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Skip(args ...any) {
	f.outcome, f.msg = "skip", fmt.Sprint(args...)
	runtime.Goexit()
}
func (f *fakeTB) Fatal(args ...any) {
	f.outcome, f.msg = "fatal", fmt.Sprint(args...)
	runtime.Goexit()
}
func (f *fakeTB) Error(args ...any) { f.errors = append(f.errors, fmt.Sprint(args...)) }

// run calls fn with a fake on a goroutine of its own and waits.
func run(fn func(tb testing.TB)) *fakeTB {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f
}

func TestIsCI(t *testing.T) {
	for v, want := range map[string]bool{
		"": false, "   ": false, "0": false, "false": false, "FALSE": false, "False": false,
		"true": true, "1": true, "yes": true, "TRUE": true, "anything": true,
	} {
		if got := isCI(v); got != want {
			t.Errorf("isCI(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestNeedDecision is the skip-or-fail decision as a table: a missing
// prerequisite skips without CI and fails with it; a present one never
// stops the test.
func TestNeedDecision(t *testing.T) {
	missing := errors.New("not here")
	for _, tc := range []struct {
		ci   string
		err  error
		want string
	}{
		{"", nil, ""},
		{"true", nil, ""},
		{"", missing, "skip"},
		{"false", missing, "skip"},
		{"0", missing, "skip"},
		{"true", missing, "fatal"},
		{"1", missing, "fatal"},
		{"yes", missing, "fatal"},
	} {
		t.Run(fmt.Sprintf("CI=%q,err=%v", tc.ci, tc.err), func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			f := run(func(tb testing.TB) {
				Need(tb, "a thing", tc.err)
				tb.(*fakeTB).after = true
			})
			if f.outcome != tc.want {
				t.Fatalf("outcome %q (%s), want %q", f.outcome, f.msg, tc.want)
			}
			if tc.want == "" {
				if !f.after {
					t.Error("Need stopped a test whose prerequisite is there")
				}
				return
			}
			if f.after {
				t.Error("the test went on after Need stopped it")
			}
			if !strings.Contains(f.msg, "needs a thing: not here") {
				t.Errorf("message %q does not say what is missing and why", f.msg)
			}
			if tc.want == "fatal" && !strings.Contains(f.msg, "CI is set") {
				t.Errorf("message %q does not say why it fails rather than skips", f.msg)
			}
		})
	}
}

func TestNeedWithoutWhatFails(t *testing.T) {
	t.Setenv("CI", "")
	if f := run(func(tb testing.TB) { Need(tb, "", nil) }); f.outcome != "fatal" {
		t.Errorf("Need with no description: %q", f.outcome)
	}
}

// TestNeedE2E: the real-system tests run with SANDBOXED_E2E=1; without it
// they skip for a developer and fail under CI, which always sets it.
func TestNeedE2E(t *testing.T) {
	for _, tc := range []struct{ ci, e2e, want string }{
		{"", "", "skip"},
		{"", "0", "skip"},
		{"", "1", ""},
		{"true", "", "fatal"},
		{"true", "yes", "fatal"},
		{"true", "1", ""},
		{"false", "", "skip"},
	} {
		t.Run(fmt.Sprintf("CI=%q,E2E=%q", tc.ci, tc.e2e), func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			t.Setenv(E2EVar, tc.e2e)
			f := run(func(tb testing.TB) { NeedE2E(tb) })
			if f.outcome != tc.want {
				t.Errorf("outcome %q (%s), want %q", f.outcome, f.msg, tc.want)
			}
		})
	}
}

func TestNeedRoot(t *testing.T) {
	t.Setenv("CI", "")
	f := run(func(tb testing.TB) { NeedRoot(tb) })
	if root := os.Geteuid() == 0; root != (f.outcome == "") {
		t.Errorf("as uid %d: outcome %q (%s)", os.Geteuid(), f.outcome, f.msg)
	}
	// As a user the test stops whatever it is: shown with Unprivileged
	// when this test runs as root.
	t.Setenv("CI", "true")
	f = run(func(tb testing.TB) { Unprivileged(tb, func() { NeedRoot(tb) }) })
	if f.outcome != "fatal" || !strings.Contains(f.msg, "running as uid") {
		t.Errorf("as a user under CI: %q (%s)", f.outcome, f.msg)
	}
}

func TestNeedCommand(t *testing.T) {
	t.Setenv("CI", "true")
	// sh is on every machine the tests run on.
	if f := run(func(tb testing.TB) { NeedCommand(tb, "sh") }); f.outcome != "" {
		t.Errorf("sh: %q (%s)", f.outcome, f.msg)
	}
	t.Setenv("PATH", t.TempDir())
	if f := run(func(tb testing.TB) { NeedCommand(tb, "curl") }); f.outcome != "fatal" {
		t.Errorf("curl off PATH under CI: %q", f.outcome)
	}
	t.Setenv("CI", "")
	if f := run(func(tb testing.TB) { NeedCommand(tb, "curl") }); f.outcome != "skip" {
		t.Errorf("curl off PATH: %q", f.outcome)
	}
	// A name the helper does not know is a mistake in the test: it fails
	// even where a missing prerequisite would skip.
	f := run(func(tb testing.TB) { NeedCommand(tb, "no-such-tool") })
	if f.outcome != "fatal" || !strings.Contains(f.msg, "unknown command") {
		t.Errorf("unknown command: %q (%s)", f.outcome, f.msg)
	}
}

// TestCommandsAreInstalledByCI: every command NeedCommand knows comes with
// Debian or is installed by .ci/prepare.sh, so CI never misses one.
func TestCommandsAreInstalledByCI(t *testing.T) {
	b, err := os.ReadFile("../../.ci/prepare.sh")
	if err != nil {
		t.Fatal(err)
	}
	script := string(b)
	for name, from := range Commands {
		switch from {
		case "essential":
		case ".ci/prepare.sh":
			if !strings.Contains(script, "command -v "+name+" ") {
				t.Errorf("%s: .ci/prepare.sh does not install it", name)
			}
		default:
			t.Errorf("%s: unknown source %q", name, from)
		}
	}
}

func TestPingDocker(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	status := http.StatusOK
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/_ping" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	if err := pingDocker("unix://" + sock); err != nil {
		t.Errorf("ping of an answering engine: %v", err)
	}
	status = http.StatusInternalServerError
	if err := pingDocker("unix://" + sock); err == nil || !strings.Contains(err.Error(), "500") {
		t.Errorf("ping of a failing engine: %v", err)
	}
	for _, host := range []string{"unix://" + sock + ".none", "ssh://host", "nonsense"} {
		if err := pingDocker(host); err == nil {
			t.Errorf("pingDocker(%q) succeeded", host)
		}
	}
}

func TestOptIn(t *testing.T) {
	for _, tc := range []struct {
		ci, v string
		want  string
		n     int
	}{
		{"", "", "skip", 0},
		{"true", "", "skip", 0}, // asked for, never required: CI too
		{"true", "5", "", 5},
		{"", "0", "fatal", 0},
		{"", "x", "fatal", 0},
	} {
		t.Setenv("CI", tc.ci)
		t.Setenv("SANDBOXED_TEST_OPTIN", tc.v)
		var n int
		f := run(func(tb testing.TB) { n = OptIn(tb, "SANDBOXED_TEST_OPTIN", "time things") })
		if f.outcome != tc.want || n != tc.n {
			t.Errorf("CI=%q value %q: %q %d (%s), want %q %d", tc.ci, tc.v, f.outcome, n, f.msg, tc.want, tc.n)
		}
		if tc.want == "skip" && !strings.Contains(f.msg, "SANDBOXED_TEST_OPTIN=N to time things") {
			t.Errorf("skip message %q", f.msg)
		}
	}
}

// TestEverySkipGoesThroughTestenv keeps the decision in one place: no test
// file outside this package calls Skip, Skipf or SkipNow itself.
func TestEverySkipGoesThroughTestenv(t *testing.T) {
	skip := regexp.MustCompile(`\.Skip(f|Now)?\(`)
	err := filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "testenv", "testdata", ".git", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if skip.MatchString(line) {
				t.Errorf("%s:%d: %s: decide through testenv.Need (or OptIn for a measurement)", p, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
