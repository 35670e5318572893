package sbinit

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// DefaultKillGrace is the time between SIGTERM and SIGKILL when an Exec's
// context ends and Client.KillGrace is zero.
const DefaultKillGrace = 2 * time.Second

// outputDrain is how long Exec waits, after the command exited, for
// processes it left behind to close its stdout and stderr.
const outputDrain = time.Second

// Client is the host side of one init's control channel over a Unix
// socket, which passes each command its own descriptors. It is safe for
// concurrent use; Exec may run concurrently.
type Client struct {
	// KillGrace is the time between SIGTERM and SIGKILL when an Exec's
	// context ends. Set it before the first Exec.
	KillGrace time.Duration

	session
	c *conn

	ready   chan *Message
	initPid int
	// landlock is the Landlock ABI the init reported enforcing.
	landlock int
	// listener is the watch filter's listener the init sent with ready
	// (Config.Watch); 0 when none.
	listener int
}

// NewClient wraps a connected control socket. The Client owns sock and
// starts reading it at once; call Handshake next.
func NewClient(sock *net.UnixConn) *Client {
	cl := &Client{
		c:     newConn(sock),
		ready: make(chan *Message, 2), // prepared, then ready or error
	}
	cl.open(func(m *Message) error { return cl.c.send(m) })
	go cl.readLoop()
	return cl
}

// Handshake sends cfg and waits until the init reports it is ready. It
// returns the init's pid as the init sees itself (1 in a new pid
// namespace). An init that failed to set up returns an error wrapping
// ErrSetup with its reason.
func (cl *Client) Handshake(ctx context.Context, cfg *Config) (int, error) {
	if err := cl.SendConfig(cfg); err != nil {
		return 0, err
	}
	return cl.WaitReady(ctx)
}

// SendConfig sends cfg without waiting. On a socketpair it may be sent
// before the init is even started: the frame waits in the socket buffer.
// fds ride with it (the prepared mounts of Mount.Tree); they stay the
// caller's.
func (cl *Client) SendConfig(cfg *Config, fds ...int) error {
	if cfg.Setup == nil && cfg.Spec != nil && (cfg.BuildRoot || cfg.DropPrivileges) {
		s, err := NewSetup(cfg.Spec, nil)
		if err != nil {
			return err
		}
		c := *cfg
		c.Setup = s
		cfg = &c
	}
	if err := cl.c.send(&Message{Type: MsgConfig, Config: cfg}, fds...); err != nil {
		return fmt.Errorf("configure sandbox init: %w", err)
	}
	return nil
}

// SendPrepare sends the prepare frame (MsgPrepare) without waiting: the
// init builds sk, the part of its root no run decides, then waits for its
// config, which must ask for the same skeleton (process tier). On a
// socketpair it may be sent before the init is even started.
func (cl *Client) SendPrepare(sk *Skeleton) error {
	if err := cl.c.send(&Message{Type: MsgPrepare, Skeleton: sk}); err != nil {
		return fmt.Errorf("prepare sandbox init: %w", err)
	}
	return nil
}

// SendSpare sends the spare frame (MsgSpare) of an init outside
// namespaces that waits for its config (a warm init of the landlock
// tier): it starts the confining start of its first command meanwhile.
// On a socketpair it may be sent before the init is even started.
func (cl *Client) SendSpare() error {
	if err := cl.c.send(&Message{Type: MsgSpare}); err != nil {
		return fmt.Errorf("sandbox init's spare: %w", err)
	}
	return nil
}

// Prepare sends the prepare frame and waits until the init has built the
// skeleton. An init that failed returns an error wrapping ErrSetup with
// its reason.
func (cl *Client) Prepare(ctx context.Context, sk *Skeleton) error {
	if err := cl.SendPrepare(sk); err != nil {
		return err
	}
	m, err := await(ctx, &cl.session, cl.ready, "prepare sandbox init")
	if err != nil {
		return err
	}
	if m.Type != MsgPrepared {
		return fmt.Errorf("prepare sandbox init: %w: %s", ErrSetup, m.Error)
	}
	return nil
}

// WaitReady waits until the init reports it is ready (see Handshake). A
// prepared message nobody waited for (SendPrepare) is passed over.
func (cl *Client) WaitReady(ctx context.Context) (int, error) {
	for {
		m, err := await(ctx, &cl.session, cl.ready, "wait for sandbox init")
		if err != nil {
			return 0, err
		}
		if m.Type == MsgPrepared {
			continue
		}
		if m.Type != MsgReady {
			return 0, fmt.Errorf("%w: %s", ErrSetup, m.Error)
		}
		cl.mu.Lock()
		cl.initPid = m.Pid
		cl.landlock = m.Landlock
		cl.mu.Unlock()
		return m.Pid, nil
	}
}

// Landlock reports the Landlock ABI the init enforced on itself and its
// commands: 0 before it is ready, without a ruleset, or on a kernel
// without Landlock.
func (cl *Client) Landlock() int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.landlock
}

// TakeListener returns the seccomp user-notification listener of the
// watch filter (Config.Watch) the init sent with ready, and forgets it:
// the caller owns it and must answer its notifications, or the sandbox's
// commands wait forever. It returns -1 when there is none.
func (cl *Client) TakeListener() int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	fd := cl.listener
	cl.listener = 0
	if fd == 0 {
		return -1
	}
	return fd
}

func (cl *Client) readLoop() {
	var err error
	for {
		var m *Message
		var fds []int
		m, fds, err = cl.c.recv()
		if err != nil {
			break
		}
		if m.Type == MsgReady && len(fds) == 1 {
			// The watch filter's listener (Config.Watch).
			cl.mu.Lock()
			cl.listener = fds[0]
			cl.mu.Unlock()
			fds = nil
		}
		for _, fd := range fds {
			syscall.Close(fd) // init sends no other descriptors
		}
		switch m.Type {
		case MsgReady, MsgPrepared, MsgError:
			select {
			case cl.ready <- m:
			default:
			}
		case MsgStarted, MsgExit:
			cl.deliver(m)
		}
	}
	cl.c.dropFDs()
	cl.end(err)
}

// Close closes the control channel; the init then kills every process of
// the sandbox and exits. Close is idempotent.
func (cl *Client) Close() error {
	if !cl.markClosed() {
		return nil
	}
	err := cl.c.c.Close()
	<-cl.dead
	if fd := cl.TakeListener(); fd >= 0 {
		syscall.Close(fd) // nobody took it: nobody answers it
	}
	return err
}

// Exec runs cmd in the sandbox and waits for it. When ctx ends, the
// command's process group gets SIGTERM, then SIGKILL after KillGrace; Exec
// then returns the exit and ctx.Err(). A command that cannot be started
// (not found, not executable, bad cwd) exits 127 or 126 with the reason on
// its stderr, like a shell.
func (cl *Client) Exec(ctx context.Context, cmd isolation.Command, stdio isolation.Stdio) (isolation.Exit, error) {
	return cl.exec(ctx, cmd, stdio, cl.KillGrace, func(stdio isolation.Stdio) (commandIO, error) {
		p, err := newStdioPipes(cl.c, stdio)
		if err != nil {
			return nil, err
		}
		return p, nil
	})
}

// stdioPipes holds both ends of a command's three standard descriptors;
// the child ends go to the init with the exec request (commandIO).
type stdioPipes struct {
	c     *conn
	child [3]*os.File // sent to the init, closed after sending
	// parent ends: in[0] is written from Stdin; out[1], out[2] are read into
	// Stdout/Stderr. nil where the child got /dev/null.
	stdinW *os.File
	outR   [3]*os.File
	stdio  isolation.Stdio
	copies sync.WaitGroup
}

func newStdioPipes(c *conn, s isolation.Stdio) (_ *stdioPipes, retErr error) {
	p := &stdioPipes{c: c, stdio: s}
	defer func() {
		if retErr != nil {
			p.close()
		}
	}()
	var err error
	if s.Stdin == nil {
		if p.child[0], err = os.Open(os.DevNull); err != nil {
			return nil, fmt.Errorf("open stdin: %w", err)
		}
	} else {
		if p.child[0], p.stdinW, err = os.Pipe(); err != nil {
			return nil, fmt.Errorf("make stdin pipe: %w", err)
		}
		if err := openToAnyUID(p.stdinW); err != nil {
			return nil, err
		}
	}
	for i, w := range []io.Writer{s.Stdout, s.Stderr} {
		fd := i + 1
		if w == nil {
			if p.child[fd], err = os.OpenFile(os.DevNull, os.O_WRONLY, 0); err != nil {
				return nil, fmt.Errorf("open output: %w", err)
			}
			continue
		}
		if p.outR[fd], p.child[fd], err = os.Pipe(); err != nil {
			return nil, fmt.Errorf("make output pipe: %w", err)
		}
		if err := openToAnyUID(p.outR[fd]); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// openToAnyUID lets the command reopen its pipe through /dev/stdout,
// /dev/stderr or /dev/stdin (/proc/self/fd/N), which checks the pipe's
// mode against the command's uid. A pipe is made 0600 for this process,
// and the command often runs as another host id (a reduced user, or a
// user namespace's id when root has no invoking user), so `echo x >
// /dev/stderr` failed. Only processes that may read another's
// /proc/PID/fd (its own uid, or root) can reach an anonymous pipe, so
// 0666 shows it to nobody new. The mode is the pipe's, shared by both ends.
func openToAnyUID(f *os.File) error {
	if err := f.Chmod(0o666); err != nil {
		return fmt.Errorf("open the command's pipe to its uid: %w", err)
	}
	return nil
}

// start sends req with the child ends, which it then closes, and starts
// copying the parent ends.
func (p *stdioPipes) start(req *Message) error {
	fds := []int{int(p.child[0].Fd()), int(p.child[1].Fd()), int(p.child[2].Fd())}
	if err := p.c.send(req, fds...); err != nil {
		return err
	}
	p.closeChild()
	p.startCopy()
	return nil
}

func (p *stdioPipes) closeChild() {
	for i, f := range p.child {
		if f != nil {
			f.Close()
			p.child[i] = nil
		}
	}
}

func (p *stdioPipes) startCopy() {
	if p.stdinW != nil {
		w := p.stdinW
		go func() {
			// Not waited for: a reader like os.Stdin may block forever.
			io.Copy(w, p.stdio.Stdin)
			w.Close()
		}()
	}
	for fd, w := range map[int]io.Writer{1: p.stdio.Stdout, 2: p.stdio.Stderr} {
		r := p.outR[fd]
		if r == nil {
			continue
		}
		p.copies.Add(1)
		go func() {
			defer p.copies.Done()
			io.Copy(w, r)
		}()
	}
}

// finish waits up to outputDrain, when the command exited, for the output
// copies to reach EOF, then cuts them off by closing the read ends.
func (p *stdioPipes) finish(exited bool) {
	var drain time.Duration
	if exited {
		drain = outputDrain
	}
	done := make(chan struct{})
	go func() { p.copies.Wait(); close(done) }()
	if drain > 0 {
		t := time.NewTimer(drain)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
	}
	for _, r := range p.outR {
		if r != nil {
			r.SetReadDeadline(time.Now())
		}
	}
	<-done
	if p.stdinW != nil {
		p.stdinW.Close() // the command is gone; stop feeding it
	}
}

func (p *stdioPipes) close() {
	p.closeChild()
	if p.stdinW != nil {
		p.stdinW.Close()
	}
	for _, r := range p.outR {
		if r != nil {
			r.Close()
		}
	}
}
