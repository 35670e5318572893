// Package serveclient is the caller's side of `sandboxed serve`: the
// request a `sandboxed run` sends on the server's socket, the frames the
// server answers with, and the call itself.
//
// `sandboxed run` makes the call first thing, before it reads the
// definition or the policy: a run a server takes costs the caller the
// CLI's start-up and this call.
//
//	sandboxed run ARGS ──request──▶ server: parse ARGS, run, record, audit
//	         ◀──frames── stdout/stderr as they come, then one of
//	                     exit (the run's code) │ declined (run it here)
//	                                           │ refused (not your server)
package serveclient

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/sandboxed-dev/sandboxed/internal/xdg"
)

// SocketEnv names the socket `sandboxed run` tries first.
const SocketEnv = "SANDBOXED_SERVE_SOCKET"

// NoServerEnv set to 1 makes `sandboxed run` run here (as --no-server).
const NoServerEnv = "SANDBOXED_NO_SERVER"

// ExitSandbox is the exit code of a run whose server refused it or went
// away during it (the sandbox failed, as far as the caller can tell).
const ExitSandbox = 125

// Request is one `sandboxed run` sent to a server: run's own arguments
// (what followed "run" on the caller's command line; the server parses
// them and resolves the paths they name against Cwd), the caller's
// working directory, environment and, for --params-json -, its stdin.
type Request struct {
	Args          []string `json:"args"`
	Cwd           string   `json:"cwd"`
	Env           []string `json:"env"`
	Stdin         []byte   `json:"stdin,omitempty"`
	StdinTerminal bool     `json:"stdin_terminal,omitempty"`
	CanAsk        bool     `json:"can_ask,omitempty"`
}

// Frame is one line of a server's answer: Taken once the run starts,
// output as it comes, then
// exactly one of Exit (the run ended: the exit status sandboxed run exits
// with), Declined (the server does not serve this call; nothing ran and
// nothing was recorded: run it here) or Refused (the caller may not use
// this server).
type Frame struct {
	// Taken says the server has started the run: from here on its
	// outcome is the run's, whatever happens to the server (a run is
	// never run twice).
	Taken    bool   `json:"taken,omitempty"`
	Stdout   []byte `json:"stdout,omitempty"`
	Stderr   []byte `json:"stderr,omitempty"`
	Exit     *int   `json:"exit,omitempty"`
	Declined string `json:"declined,omitempty"`
	Refused  string `json:"refused,omitempty"`
}

// Socket is the socket of this user's server: $SANDBOXED_SERVE_SOCKET,
// else serve.sock in the runtime directory.
func Socket() string {
	if p := os.Getenv(SocketEnv); p != "" {
		return p
	}
	return filepath.Join(xdg.RuntimeDir(), "serve.sock")
}

// clusterFlags are run's flags for a run on a cluster; a server runs this
// host's tiers only.
var clusterFlags = []string{"kubeconfig", "namespace", "runtime-class", "network-policy-enforced",
	"kube-concurrency", "image-pull-policy", "kube-seccomp-profile"}

// Cold says why the run with arguments args (what followed "run") in an
// environment read through getenv is not for a server, "" when it is:
// --no-server or SANDBOXED_NO_SERVER=1, a dry run, help, or a run for a
// cluster. It reads flags up to "--" the way run's parser does; where a
// value could be taken for a flag it errs towards running here, which
// is always correct.
func Cold(args []string, getenv func(string) string) string {
	if getenv(NoServerEnv) == "1" {
		return NoServerEnv + "=1"
	}
	if b := getenv("SANDBOXED_BACKEND"); b != "" && b != "local" {
		return "SANDBOXED_BACKEND=" + b
	}
	for i, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := flagOf(a)
		switch name {
		case "":
			continue
		case "no-server", "dry-run", "dump-plan":
			if !hasValue || value != "false" {
				return "--" + name
			}
		case "help", "h":
			return "--help"
		case "generate-bash-completion":
			// A shell asking for completions (sandboxed completion): the
			// CLI answers it before any command runs.
			return "--generate-bash-completion"
		case "backend":
			if !hasValue && i+1 < len(args) {
				value = args[i+1]
			}
			if value != "local" {
				return "--backend " + value
			}
		default:
			for _, f := range clusterFlags {
				if name == f {
					return "--" + name
				}
			}
		}
	}
	return ""
}

// ParamsFromStdin reports whether args take the parameters from stdin
// (--params-json -), which the caller then sends with the request.
func ParamsFromStdin(args []string) bool {
	for i, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := flagOf(a)
		if name != "params-json" {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		if value == "-" {
			return true
		}
	}
	return false
}

// flagOf splits "--name=value" or "-name" into its parts; name is "" for
// an argument that is not a flag.
func flagOf(a string) (name, value string, hasValue bool) {
	if len(a) < 2 || a[0] != '-' || a == "-" {
		return "", "", false
	}
	a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
	name, value, hasValue = strings.Cut(a, "=")
	return name, value, hasValue
}

// NewRequest is the request for run's arguments args from this process:
// its working directory, environment, and stdin when args read the
// parameters from it.
func NewRequest(args []string) (*Request, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	in, errw := isTerminal(0), isTerminal(2)
	req := &Request{Args: args, Cwd: cwd, Env: os.Environ(), StdinTerminal: in, CanAsk: in && errw}
	if ParamsFromStdin(args) {
		if req.Stdin, err = io.ReadAll(io.LimitReader(os.Stdin, 16<<20)); err != nil {
			return nil, fmt.Errorf("read --params-json: %w", err)
		}
	}
	return req, nil
}

// isTerminal reports whether fd is a terminal (a termios ioctl answers,
// which /dev/null, a character device too, does not).
func isTerminal(fd int) bool { return term.IsTerminal(fd) }

// Outcome is how a call ended. Taken false: no server took the run
// (none answers, the socket is another user's, or the server declined
// before it ran anything); nothing ran and nothing was recorded, so the
// caller runs it itself. Taken true: the run's outcome is the server's,
// never to be run again: its exit code, and Err when the caller must say
// why (the server refused the caller or went away during the run).
type Outcome struct {
	Taken    bool
	Code     int
	Err      error
	Declined string // why the server declined, when it did
}

// Call sends req to the server on path and copies its output to stdout
// and stderr until the run ends. Closing interrupt passes an interrupt
// on: the server tears the run down and reports, as a run here does.
func Call(path string, req *Request, stdout, stderr io.Writer, interrupt <-chan struct{}) Outcome {
	c, err := net.DialTimeout("unix", path, 200*time.Millisecond)
	if err != nil {
		// None listens, the socket is out of reach, or it does not
		// accept in time: the run runs here.
		return Outcome{}
	}
	conn := c.(*net.UnixConn)
	defer conn.Close()
	// The request carries the caller's arguments and environment: it goes
	// only to a server of the caller's own uid. A socket another user
	// made at that path (a runtime directory under /tmp) gets nothing.
	if uid, err := PeerUID(conn); err != nil || uid != os.Geteuid() {
		return Outcome{}
	}
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return Outcome{} // the server went away before it took the run
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-interrupt:
			conn.CloseWrite()
		case <-done:
		}
	}()
	dec := json.NewDecoder(bufio.NewReader(conn))
	taken := false
	for {
		var fr Frame
		if err := dec.Decode(&fr); err != nil {
			if !taken {
				return Outcome{} // gone before it took the run: run it here
			}
			return Outcome{Taken: true, Code: ExitSandbox, Err: fmt.Errorf("the server on %s went away during the run: %w", path, err)}
		}
		switch {
		case fr.Refused != "":
			return Outcome{Taken: true, Code: ExitSandbox, Err: fmt.Errorf("server on %s: %s", path, fr.Refused)}
		case fr.Declined != "":
			return Outcome{Declined: fr.Declined}
		case fr.Exit != nil:
			return Outcome{Taken: true, Code: *fr.Exit}
		case fr.Taken:
			taken = true
		}
		if fr.Stdout != nil {
			taken = true
			stdout.Write(fr.Stdout)
		}
		if fr.Stderr != nil {
			taken = true
			stderr.Write(fr.Stderr)
		}
	}
}
