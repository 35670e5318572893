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

	"github.com/sandboxed-dev/sandboxed/internal/serveclient"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/cgroup"
	"github.com/sandboxed-dev/sandboxed/isolation/landlock"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
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

// defaultServeSocket is the socket of a server of this user.
func defaultServeSocket() string { return serveclient.Socket() }

// serverEnv are the variables that choose what a run reads and where it
// records: a server serves a caller whose values differ from its own
// only by declining (the caller runs cold), never with its own.
var serverEnv = []string{
	"HOME", "SUDO_USER", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "XDG_CACHE_HOME",
	"SANDBOXED_STATE_DIR", "SANDBOXED_RUNTIME_DIR", "SANDBOXED_GLOBAL_DIR", testHostsEnv, "DOCKER_HOST",
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
	// A caller or a log reader that goes away must not kill the server
	// (SIGPIPE on stderr) before its runs are torn down.
	catchBrokenPipes()
	logw := dropOnError(c.App.ErrWriter)
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
	if pb, ok := ctl.Backends[isolation.TierProcess].(*process.Backend); ok {
		pb.Spawner, pb.Log = true, logw
		// The landlock tier's warm inits start through the same spawner.
		if lb, ok := ctl.Backends[isolation.TierLandlock].(*landlock.Backend); ok {
			lb.Process = pb
		}
	}
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

// frames writes a server's answer; safe for concurrent use.
type frames struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (f *frames) send(fr serveclient.Frame) error {
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
	fr := serveclient.Frame{Stdout: b}
	if w.stderr {
		fr = serveclient.Frame{Stderr: b}
	}
	if err := w.f.send(fr); err != nil {
		return 0, err
	}
	return len(p), nil
}

// handle serves one connection: one request, its answer.
func (s *server) handle(conn *net.UnixConn) {
	start := time.Now()
	out := &frames{enc: json.NewEncoder(conn)}
	uid, err := serveclient.PeerUID(conn)
	if err != nil {
		out.send(serveclient.Frame{Refused: "read the caller's credentials: " + err.Error()})
		return
	}
	if uid != s.uid {
		out.send(serveclient.Frame{Refused: fmt.Sprintf("this server runs as uid %d and serves that uid only, not uid %d: run your own (the user unit contrib/systemd/sandboxed.socket, or `sandboxed serve`), or run with --no-server", s.uid, uid)})
		return
	}
	rd := bufio.NewReader(io.LimitReader(conn, 64<<20))
	var req serveclient.Request
	if err := json.NewDecoder(rd).Decode(&req); err != nil {
		out.send(serveclient.Frame{Declined: "read the request: " + err.Error()})
		return
	}
	if why := envMismatch(req.Env); why != "" {
		out.send(serveclient.Frame{Declined: why})
		return
	}
	callerEnv := &invocation{env: req.Env}
	if why := serveclient.Cold(req.Args, callerEnv.getenv); why != "" {
		out.send(serveclient.Frame{Declined: why + " runs in the caller"})
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
		canAsk: req.CanAsk, ctl: s.ctl, served: true, start: start,
		taken: func() { out.send(serveclient.Frame{Taken: true}) }}
	app := newServeApp(frameWriter{out, false}, frameWriter{out, true})
	err = app.RunContext(withInvocation(ctx, inv), append([]string{"sandboxed", "run"}, req.Args...))
	var d *declined
	if errors.As(err, &d) {
		// Declined before anything ran or was recorded (only trace lines
		// may have been sent): the caller runs it cold.
		out.send(serveclient.Frame{Declined: d.why})
		return
	}
	code := exitCode(err)
	if err != nil && !isSilent(err) {
		fmt.Fprintln(app.ErrWriter, "sandboxed:", err)
	}
	// The caller first: the log (a terminal, the journal) may be slow.
	out.send(serveclient.Frame{Exit: &code})
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
// socket. done is false when the run is to run here: no server answers
// (no socket, connection refused, the socket out of reach),
// --no-server (or SANDBOXED_NO_SERVER=1), a dry run, a run for a
// cluster (--backend kubernetes), or the server declined before it ran
// anything; parameters it read from stdin for the server are then inv's
// stdin. Once a server took the run, its outcome is the run's (never run
// twice).
func runServed(c *cli.Context, inv *invocation) (done bool, err error) {
	args := serveArgsOf(c)
	if serveclient.Cold(args, os.Getenv) != "" || c.Bool("no-server") || c.Bool("dry-run") || c.Bool("dump-plan") {
		return false, nil
	}
	if b := c.String("backend"); b != "" && b != "local" {
		return false, nil // a cluster's run: the server runs this host's tiers
	}
	req, err := serveclient.NewRequest(args)
	if err != nil {
		return true, err
	}
	// An interrupt is passed on: the server tears the run down and
	// reports, as a run here does.
	ctx, stop := signalContext(c.Context)
	defer stop()
	interrupt := make(chan struct{})
	go func() {
		<-ctx.Done()
		if context.Cause(ctx) == sandbox.ErrInterrupted {
			close(interrupt)
		}
	}()
	o := serveclient.Call(serveclient.Socket(), req, c.App.Writer, c.App.ErrWriter, interrupt)
	switch {
	case !o.Taken:
		if req.Stdin != nil {
			inv.in = bytes.NewReader(req.Stdin) // read for the server, run here
		}
		return false, nil
	case o.Err != nil:
		return true, &codeError{code: o.Code, err: o.Err}
	case o.Code != 0:
		return true, exitWith(o.Code)
	}
	return true, nil
}

// serveArgsOf is run's arguments as c parsed them, for a server: the
// flags a server takes and the tool with its parameters (the server
// resolves the paths they name against the caller's directory).
func serveArgsOf(c *cli.Context) []string {
	var args []string
	if c.Bool("json") {
		args = append(args, "--json")
	}
	for _, name := range []string{"policy", "scope", "isolation", "params-json"} {
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
	args = append(args, "--")
	return append(args, c.Args().Slice()...)
}

// absToolArg is TOOL as a server sees it for a caller in cwd: a
// definition file named by a relative path becomes absolute (a name stays
// a name: the server looks it up in the caller's scopes).
func absToolArg(cwd, arg string) string {
	lower := strings.ToLower(arg)
	looksPath := strings.ContainsRune(arg, '/') || strings.HasSuffix(lower, ".yaml") || strings.HasSuffix(lower, ".yml")
	if !looksPath || filepath.IsAbs(arg) {
		return arg
	}
	if fi, err := os.Stat(filepath.Join(cwd, arg)); err == nil && !fi.IsDir() {
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
