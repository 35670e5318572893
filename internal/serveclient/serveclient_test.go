package serveclient

import (
	"bytes"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

func TestCold(t *testing.T) {
	none := func(string) string { return "" }
	tests := []struct {
		args []string
		env  map[string]string
		want string // a substring of the reason; "" for a run a server takes
	}{
		{args: []string{"tool"}},
		{args: []string{"--json", "--policy", "p.yaml", "tool", "x=1"}},
		{args: []string{"--backend", "local", "tool"}},
		{args: []string{"--backend=local", "tool"}},
		{args: []string{"--no-server=false", "tool"}},
		{args: []string{"--", "tool", "--no-server"}}, // after --: the tool's
		{args: []string{"--no-server", "tool"}, want: "--no-server"},
		{args: []string{"-no-server", "tool"}, want: "--no-server"},
		{args: []string{"--no-server=true", "tool"}, want: "--no-server"},
		{args: []string{"--dry-run", "tool"}, want: "--dry-run"},
		{args: []string{"tool.yaml", "--generate-bash-completion"}, want: "--generate-bash-completion"},
		{args: []string{"tool", "--dump-plan"}, want: "--dump-plan"},
		{args: []string{"--help"}, want: "--help"},
		{args: []string{"-h"}, want: "--help"},
		{args: []string{"--backend", "kubernetes", "tool"}, want: "--backend kubernetes"},
		{args: []string{"--backend=kubernetes", "tool"}, want: "--backend kubernetes"},
		{args: []string{"--kubeconfig", "k", "tool"}, want: "--kubeconfig"},
		{args: []string{"--runtime-class=", "tool"}, want: "--runtime-class"},
		{args: []string{"tool"}, env: map[string]string{NoServerEnv: "1"}, want: NoServerEnv},
		{args: []string{"tool"}, env: map[string]string{NoServerEnv: "0"}},
		{args: []string{"tool"}, env: map[string]string{"SANDBOXED_BACKEND": "kubernetes"}, want: "SANDBOXED_BACKEND"},
		{args: []string{"tool"}, env: map[string]string{"SANDBOXED_BACKEND": "local"}},
	}
	for _, tt := range tests {
		getenv := none
		if tt.env != nil {
			getenv = func(k string) string { return tt.env[k] }
		}
		got := Cold(tt.args, getenv)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("Cold(%q, %v) = %q, want %q", tt.args, tt.env, got, tt.want)
		}
	}
}

func TestParamsFromStdin(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"--params-json", "-", "tool"}, true},
		{[]string{"--params-json=-", "tool"}, true},
		{[]string{"--params-json", `{"a":1}`, "tool"}, false},
		{[]string{"tool", "--", "--params-json", "-"}, false},
		{[]string{"tool"}, false},
	}
	for _, tt := range tests {
		if got := ParamsFromStdin(tt.args); got != tt.want {
			t.Errorf("ParamsFromStdin(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

// fakeServer answers one call on a socket with frames, after reading the
// request; it returns the socket's path and the request it read.
func fakeServer(t *testing.T, frames ...Frame) (string, <-chan Request) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "serve.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan Request, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var req Request
		if err := json.NewDecoder(c).Decode(&req); err != nil {
			return
		}
		got <- req
		enc := json.NewEncoder(c)
		for _, f := range frames {
			enc.Encode(f)
		}
	}()
	return path, got
}

func code(n int) *int { return &n }

func TestCall(t *testing.T) {
	tests := []struct {
		name      string
		frames    []Frame
		want      Outcome
		wantErr   string
		out, errs string
	}{
		{name: "exit", frames: []Frame{{Taken: true}, {Stdout: []byte("hi\n")}, {Stderr: []byte("warn\n")}, {Exit: code(3)}},
			want: Outcome{Taken: true, Code: 3}, out: "hi\n", errs: "warn\n"},
		{name: "declined", frames: []Frame{{Declined: "an interactive tool"}}, want: Outcome{Declined: "an interactive tool"}},
		{name: "refused", frames: []Frame{{Refused: "uid 0 only"}}, want: Outcome{Taken: true, Code: ExitSandbox}, wantErr: "uid 0 only"},
		// Gone before it took the run: nothing ran, the caller runs it.
		{name: "gone before", frames: nil, want: Outcome{}},
		// Gone after it took the run, even with no output: never run twice.
		{name: "gone after taken", frames: []Frame{{Taken: true}}, want: Outcome{Taken: true, Code: ExitSandbox}, wantErr: "went away during the run"},
		{name: "gone after output", frames: []Frame{{Stdout: []byte("x")}}, want: Outcome{Taken: true, Code: ExitSandbox}, wantErr: "went away", out: "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, reqs := fakeServer(t, tt.frames...)
			var out, errs bytes.Buffer
			req := &Request{Args: []string{"--", "tool"}, Cwd: "/w"}
			o := Call(path, req, &out, &errs, nil)
			if (o.Err == nil) != (tt.wantErr == "") || (o.Err != nil && !strings.Contains(o.Err.Error(), tt.wantErr)) {
				t.Errorf("err = %v, want %q", o.Err, tt.wantErr)
			}
			o.Err = nil
			if o != tt.want {
				t.Errorf("outcome = %+v, want %+v", o, tt.want)
			}
			if out.String() != tt.out || errs.String() != tt.errs {
				t.Errorf("stdout %q stderr %q, want %q %q", out.String(), errs.String(), tt.out, tt.errs)
			}
			if r := <-reqs; strings.Join(r.Args, " ") != "-- tool" || r.Cwd != "/w" {
				t.Errorf("server read %+v", r)
			}
		})
	}
}

// No server at the path: nothing taken, the caller runs it.
func TestCallNoServer(t *testing.T) {
	o := Call(filepath.Join(t.TempDir(), "none.sock"), &Request{}, nil, nil, nil)
	if o != (Outcome{}) {
		t.Errorf("outcome = %+v, want none taken", o)
	}
}
