package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/isolation/cgroup"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

var serveCommand = &cli.Command{
	Name:  "serve",
	Usage: "run a resident controller with warm pools on a Unix socket; 'sandboxed run' uses it when it answers",
	Description: `Listens on a Unix socket (--socket; default serve.sock in the runtime
directory: $SANDBOXED_RUNTIME_DIR, /run/sandboxed as root, else
$XDG_RUNTIME_DIR/sandboxed), or on the socket systemd passes (socket
activation, LISTEN_FDS; units in contrib/systemd). 'sandboxed run' sends
its request there when a server answers and runs cold otherwise; the run
is the same either way: same policy decisions, results, exit codes, run
records and audit lines.

A server serves callers of its own uid only (SO_PEERCRED on every
connection): a caller gets exactly what its own uid would get. Run one
per user (the user unit); a root server refuses other users' calls.

Sandboxes are started ahead of time, --pool-size per kind (tier,
privilege, user namespace), handed each to one run and destroyed after
it; a kind unused for --pool-idle is given back.`,
	Flags: append([]cli.Flag{
		&cli.StringFlag{Name: "socket", Usage: "listen on `PATH` (default: serve.sock in the runtime directory)"},
		policyFlag,
	}, poolFlags()...),
	Action: serveAction,
}

// serveSocketEnv names the socket `sandboxed run` tries first.
const serveSocketEnv = "SANDBOXED_SERVE_SOCKET"

// noServerEnv set to 1 makes `sandboxed run` run cold (as --no-server).
const noServerEnv = "SANDBOXED_NO_SERVER"

// defaultServeSocket is the socket of a server of this user.
func defaultServeSocket() string {
	if p := os.Getenv(serveSocketEnv); p != "" {
		return p
	}
	return filepath.Join(sandbox.RuntimeDir(), "serve.sock")
}

// serverEnv are the variables that choose what a run reads and where it
// records: a server serves a caller whose values differ from its own
// only by declining (the caller runs cold), never with its own.
var serverEnv = []string{
	"HOME", "SUDO_USER", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "XDG_CACHE_HOME",
	"SANDBOXED_STATE_DIR", "SANDBOXED_RUNTIME_DIR", "SANDBOXED_GLOBAL_DIR", testHostsEnv, "DOCKER_HOST",
}

// serveRequest is one `sandboxed run` sent to a server: its arguments (as
// run takes them, with the paths it names made absolute), and the
// caller's working directory, environment and stdin.
type serveRequest struct {
	Args          []string `json:"args"`
	Cwd           string   `json:"cwd"`
	Env           []string `json:"env"`
	Stdin         []byte   `json:"stdin,omitempty"`
	StdinTerminal bool     `json:"stdin_terminal,omitempty"`
	CanAsk        bool     `json:"can_ask,omitempty"`
}

// serveFrame is one line of a server's answer: output as it comes, then
// exactly one of Exit (the run ended: the exit status sandboxed run
// exits with), Declined (the server does not serve this call; nothing
// ran and nothing was recorded: run it cold) or Refused (the caller may
// not use this server).
type serveFrame struct {
	Stdout   []byte `json:"stdout,omitempty"`
	Stderr   []byte `json:"stderr,omitempty"`
	Exit     *int   `json:"exit,omitempty"`
	Declined string `json:"declined,omitempty"`
	Refused  string `json:"refused,omitempty"`
}

// declined is a run the server leaves to its caller (errDecline).
type declined struct{ why string }

func (d *declined) Error() string { return "declined: " + d.why }

func errDecline(why string) error { return &declined{why: why} }

func serveAction(c *cli.Context) error {
	if c.NArg() != 0 {
		return usageError(errors.New("serve takes no arguments; usage: sandboxed serve [--socket PATH] [--pool-size N] [--pool-idle DURATION]"))
	}
	pol, _, err := loadPolicy(c)
	if err != nil {
		return err
	}
	settings, err := poolSettings(c, pol)
	if err != nil {
		return err
	}
	ln, path, err := serveListener(c.String("socket"))
	if err != nil {
		return err
	}
	logw := c.App.ErrWriter
	// Started by systemd in a unit with Delegate=yes (contrib/systemd):
	// the runs go in the unit's cgroup, where stopping the unit reaches
	// them.
	unitCg, err := cgroup.AdoptUnitCgroup()
	if err != nil {
		ln.Close()
		return fmt.Errorf("serve: %w", err)
	}
	ctl := residentController(settings, logw)
	srv := &server{ctl: ctl, log: logw, uid: os.Geteuid()}
	where := path
	if where == "" {
		where = ln.Addr().String() + " (from systemd)"
	}
	fmt.Fprintf(logw, "sandboxed: serve: listening on %s (uid %d; pool size %d, idle %s)\n", where, srv.uid, settings.Size, settings.Idle)
	if unitCg != "" {
		fmt.Fprintf(logw, "sandboxed: serve: runs in the cgroup systemd delegated: %s\n", unitCg)
	}

	ctx, stop := signalContext(c.Context)
	defer stop()
	go func() { <-ctx.Done(); ln.Close() }()
	srv.serve(ln)
	// Stopping: the calls in progress end, then their teardown, then the
	// pool's sandboxes are discarded.
	srv.wg.Wait()
	ctl.Behind.Wait()
	ctl.Pool.Close()
	if path != "" {
		os.Remove(path)
	}
	return nil
}

// residentController is the controller of a long-lived process (serve,
// mcp): warm pools of the given settings, teardown behind the results,
// and crashed runs' leftovers reaped every few seconds rather than by
// every run.
func residentController(s sandbox.PoolSettings, logw io.Writer) *sandbox.Controller {
	ctl := newController()
	ctl.Behind = sandbox.NewBehind(logw)
	ctl.GCEvery = 10 * time.Second
	if s.Size > 0 {
		ctl.Pool = sandbox.NewPool(s, ctl.RuntimeDir, logw)
	}
	return ctl
}

// serveListener is the socket systemd passed, else a socket made at path
// ("" the default), which it returns to be removed when the server stops.
func serveListener(path string) (net.Listener, string, error) {
	lns, err := activation.Listeners()
	if err != nil {
		return nil, "", fmt.Errorf("serve: sockets from systemd: %w", err)
	}
	for _, ln := range lns {
		if ln != nil && ln.Addr().Network() == "unix" {
			return ln, "", nil
		}
	}
	if path == "" {
		path = defaultServeSocket()
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, "", fmt.Errorf("serve: create %s: %w", dir, err)
	}
	if _, err := os.Lstat(path); err == nil {
		if conn, derr := net.DialTimeout("unix", path, time.Second); derr == nil {
			conn.Close()
			return nil, "", fmt.Errorf("serve: a server already answers on %s", path)
		}
		os.Remove(path) // a server that died left it
	}
	old := unix.Umask(0o177) // the socket is the user's alone
	ln, err := net.Listen("unix", path)
	unix.Umask(old)
	if err != nil {
		return nil, "", fmt.Errorf("serve: listen on %s: %w", path, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	return ln, path, nil
}

// server serves `sandboxed run` requests on a socket.
type server struct {
	ctl *sandbox.Controller
	log io.Writer
	uid int
	wg  sync.WaitGroup
}

func (s *server) serve(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer conn.Close()
			s.handle(conn.(*net.UnixConn))
		}()
	}
}

// peerUID is the uid of the process at the other end of conn.
func peerUID(conn *net.UnixConn) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, cerr
	}
	return int(cred.Uid), nil
}

// frames writes a server's answer; safe for concurrent use.
type frames struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (f *frames) send(fr serveFrame) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.enc.Encode(fr)
}

type frameWriter struct {
	f      *frames
	stderr bool
}

func (w frameWriter) Write(p []byte) (int, error) {
	b := append([]byte(nil), p...)
	fr := serveFrame{Stdout: b}
	if w.stderr {
		fr = serveFrame{Stderr: b}
	}
	if err := w.f.send(fr); err != nil {
		return 0, err
	}
	return len(p), nil
}

// handle serves one connection: one request, its answer.
func (s *server) handle(conn *net.UnixConn) {
	out := &frames{enc: json.NewEncoder(conn)}
	uid, err := peerUID(conn)
	if err != nil {
		out.send(serveFrame{Refused: "read the caller's credentials: " + err.Error()})
		return
	}
	if uid != s.uid {
		out.send(serveFrame{Refused: fmt.Sprintf("this server runs as uid %d and serves that uid only, not uid %d: run your own (the user unit contrib/systemd/sandboxed.socket, or `sandboxed serve`), or run with --no-server", s.uid, uid)})
		return
	}
	rd := bufio.NewReader(io.LimitReader(conn, 64<<20))
	var req serveRequest
	if err := json.NewDecoder(rd).Decode(&req); err != nil {
		out.send(serveFrame{Declined: "read the request: " + err.Error()})
		return
	}
	if why := envMismatch(req.Env); why != "" {
		out.send(serveFrame{Declined: why})
		return
	}
	// The caller going away (or interrupted) interrupts the run, as a
	// signal interrupts a cold one.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		io.Copy(io.Discard, conn)
		cancel(sandbox.ErrInterrupted)
	}()
	inv := &invocation{cwd: req.Cwd, env: req.Env, in: bytes.NewReader(req.Stdin), stdinTerminal: req.StdinTerminal,
		canAsk: req.CanAsk, ctl: s.ctl, served: true}
	app := newServeApp(frameWriter{out, false}, frameWriter{out, true})
	err = app.RunContext(withInvocation(ctx, inv), append([]string{"sandboxed", "run"}, req.Args...))
	var d *declined
	if errors.As(err, &d) {
		// Declined before anything ran or was recorded (only trace lines
		// may have been sent): the caller runs it cold.
		out.send(serveFrame{Declined: d.why})
		return
	}
	code := exitCode(err)
	if err != nil && !isSilent(err) {
		fmt.Fprintln(app.ErrWriter, "sandboxed:", err)
	}
	// The caller first: the log (a terminal, the journal) may be slow.
	out.send(serveFrame{Exit: &code})
	fmt.Fprintf(s.log, "sandboxed: serve: call %s: exit %d (pool: %d warm claims so far, %d ready)\n",
		strings.Join(req.Args, " "), code, s.ctl.Pool.Claims(), s.ctl.Pool.Ready())
}

// envMismatch says why a caller's environment is not one this server can
// run for ("" when it is).
func envMismatch(env []string) string {
	inv := &invocation{env: env}
	for _, name := range serverEnv {
		if name == "XDG_RUNTIME_DIR" && os.Geteuid() == 0 {
			// Root's runtime directory is /run/sandboxed whatever it
			// says; a root login has it, root's unit has not.
			continue
		}
		if inv.getenv(name) != os.Getenv(name) {
			return fmt.Sprintf("the caller's %s differs from the server's", name)
		}
	}
	return ""
}

// newServeApp is the CLI as a server runs it for a caller: the run
// command alone (its own flag values: calls run concurrently), writing
// to the caller.
func newServeApp(stdout, stderr io.Writer) *cli.App {
	run := newRunCommand(false)
	setUsageErrors(run)
	return &cli.App{
		Name: "sandboxed", Commands: []*cli.Command{run}, Writer: stdout, ErrWriter: stderr,
		HideHelpCommand: true,
		OnUsageError:    func(c *cli.Context, err error, _ bool) error { return usageError(err) },
		ExitErrHandler:  func(*cli.Context, error) {},
	}
}

// runServed sends the run of c to a server when one answers on the
// socket. done is false when the run is to run cold: no server answers
// (no socket, connection refused, the socket out of reach),
// --no-server (or SANDBOXED_NO_SERVER=1), a dry run, a run for a cluster
// (--backend kubernetes), or the server
// declined before it ran anything. Once a server took the run, its
// outcome is the run's (never run twice).
func runServed(c *cli.Context) (done bool, err error) {
	if c.Bool("no-server") || os.Getenv(noServerEnv) == "1" || c.Bool("dry-run") || c.Bool("dump-plan") {
		return false, nil
	}
	if b := c.String("backend"); b != "" && b != "local" {
		return false, nil // a cluster's run: the server runs this host's tiers
	}
	path := defaultServeSocket()
	conn, err := net.DialTimeout("unix", path, 200*time.Millisecond)
	if err != nil {
		// No server took the run (none listens, the socket is out of
		// reach, it does not accept in time): it runs here.
		return false, nil
	}
	defer conn.Close()
	// The request carries the caller's arguments and environment: it goes
	// only to a server of the caller's own uid. A socket another user
	// made at that path (a runtime directory under /tmp) gets nothing,
	// and the run runs here.
	if uid, err := peerUID(conn.(*net.UnixConn)); err != nil || uid != os.Geteuid() {
		return false, nil
	}
	req, err := serveRequestOf(c)
	if err != nil {
		return true, err
	}
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return false, nil // the server went away before it took the run
	}
	// An interrupt is passed on: the server tears the run down and
	// reports, as a cold run does.
	ctx, stop := signalContext(c.Context)
	defer stop()
	go func() {
		<-ctx.Done()
		if context.Cause(ctx) == sandbox.ErrInterrupted {
			conn.(*net.UnixConn).CloseWrite()
		}
	}()
	dec := json.NewDecoder(bufio.NewReader(conn))
	taken := false
	for {
		var fr serveFrame
		if err := dec.Decode(&fr); err != nil {
			if !taken {
				return false, nil // gone before it took the run: run cold
			}
			return true, &codeError{code: exitSandbox, err: fmt.Errorf("the server on %s went away during the run: %w", path, err)}
		}
		switch {
		case fr.Refused != "":
			return true, &codeError{code: exitSandbox, err: fmt.Errorf("server on %s: %s", path, fr.Refused)}
		case fr.Declined != "":
			return false, nil
		case fr.Exit != nil:
			if *fr.Exit != 0 {
				return true, exitWith(*fr.Exit)
			}
			return true, nil
		}
		if fr.Stdout != nil {
			taken = true
			c.App.Writer.Write(fr.Stdout)
		}
		if fr.Stderr != nil {
			taken = true
			c.App.ErrWriter.Write(fr.Stderr)
		}
	}
}

// serveRequestOf is the request for the run of c: its flags and
// arguments, with the tool's and the policy's paths made absolute (the
// server's working directory is not the caller's).
func serveRequestOf(c *cli.Context) (*serveRequest, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	req := &serveRequest{Cwd: cwd, Env: os.Environ(), StdinTerminal: isTerminal(os.Stdin),
		CanAsk: isTerminal(os.Stdin) && isTerminal(os.Stderr)}
	var args []string
	if c.Bool("json") {
		args = append(args, "--json")
	}
	if p := c.String("policy"); p != "" {
		args = append(args, "--policy", absFrom(cwd, p))
	}
	for _, name := range []string{"scope", "isolation"} {
		if c.IsSet(name) {
			args = append(args, "--"+name, c.String(name))
		}
	}
	for _, a := range c.StringSlice("approve") {
		args = append(args, "--approve", a)
	}
	for _, p := range c.StringSlice("param") {
		args = append(args, "--param", p)
	}
	if pj := c.String("params-json"); pj != "" {
		args = append(args, "--params-json", pj)
		if pj == "-" {
			data, err := io.ReadAll(io.LimitReader(os.Stdin, 16<<20))
			if err != nil {
				return nil, fmt.Errorf("read --params-json: %w", err)
			}
			req.Stdin = data
		}
	}
	args = append(args, "--")
	args = append(args, absToolArg(cwd, c.Args().First()))
	args = append(args, c.Args().Tail()...)
	req.Args = args
	return req, nil
}

// absToolArg is TOOL as a server must see it: a definition file named by a
// relative path becomes absolute (a name stays a name: the server looks
// it up in the caller's scopes).
func absToolArg(cwd, arg string) string {
	lower := strings.ToLower(arg)
	looksPath := strings.ContainsRune(arg, '/') || strings.HasSuffix(lower, ".yaml") || strings.HasSuffix(lower, ".yml")
	if !looksPath || filepath.IsAbs(arg) {
		return arg
	}
	if fi, err := os.Stat(arg); err == nil && !fi.IsDir() {
		return filepath.Join(cwd, arg)
	}
	return arg
}

func absFrom(cwd, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(cwd, p)
}

// staleServeSocket removes the default server socket when no server
// answers on it (the server was killed) and returns its path; "" when
// there is none or a server answers.
func staleServeSocket() string {
	path := defaultServeSocket()
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Type() != os.ModeSocket {
		return ""
	}
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		conn.Close()
		return ""
	}
	if !errors.Is(err, syscall.ECONNREFUSED) || os.Remove(path) != nil {
		return ""
	}
	return path
}
