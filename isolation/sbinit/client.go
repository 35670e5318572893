package sbinit

import (
	"context"
	"errors"
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

// Client is the host side of one init's control channel. It is safe for
// concurrent use; Exec may run concurrently.
type Client struct {
	// KillGrace is the time between SIGTERM and SIGKILL when an Exec's
	// context ends. Set it before the first Exec.
	KillGrace time.Duration

	c *conn

	mu      sync.Mutex
	nextID  uint64
	waiters map[uint64]chan *Message
	ready   chan *Message
	dead    chan struct{} // closed when the channel broke
	deadErr error
	closed  bool
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
		c:       newConn(sock),
		waiters: make(map[uint64]chan *Message),
		ready:   make(chan *Message, 2), // prepared, then ready or error
		dead:    make(chan struct{}),
	}
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

// Prepare sends the prepare frame and waits until the init has built the
// skeleton. An init that failed returns an error wrapping ErrSetup with
// its reason.
func (cl *Client) Prepare(ctx context.Context, sk *Skeleton) error {
	if err := cl.SendPrepare(sk); err != nil {
		return err
	}
	select {
	case m := <-cl.ready:
		if m.Type != MsgPrepared {
			return fmt.Errorf("prepare sandbox init: %w: %s", ErrSetup, m.Error)
		}
		return nil
	case <-cl.dead:
		return fmt.Errorf("prepare sandbox init: %w", cl.deadErr)
	case <-ctx.Done():
		return fmt.Errorf("prepare sandbox init: %w", ctx.Err())
	}
}

// WaitReady waits until the init reports it is ready (see Handshake). A
// prepared message nobody waited for (SendPrepare) is passed over.
func (cl *Client) WaitReady(ctx context.Context) (int, error) {
	for {
		select {
		case m := <-cl.ready:
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
		case <-cl.dead:
			return 0, fmt.Errorf("wait for sandbox init: %w", cl.deadErr)
		case <-ctx.Done():
			return 0, fmt.Errorf("wait for sandbox init: %w", ctx.Err())
		}
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

// Done is closed when the control channel is gone (init exited or Close).
func (cl *Client) Done() <-chan struct{} { return cl.dead }

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
			cl.mu.Lock()
			w := cl.waiters[m.ID]
			cl.mu.Unlock()
			if w != nil {
				w <- m // buffered for started and exit
			}
		}
	}
	cl.c.dropFDs()
	cl.mu.Lock()
	if cl.closed || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		cl.deadErr = ErrInitGone
	} else {
		cl.deadErr = fmt.Errorf("%w: %v", ErrInitGone, err)
	}
	cl.mu.Unlock()
	close(cl.dead)
}

// Signal sends sig to the process group of command id, or to every
// process of the sandbox when id is 0.
func (cl *Client) Signal(id uint64, sig syscall.Signal) error {
	if err := cl.c.send(&Message{Type: MsgSignal, ID: id, Signal: int(sig)}); err != nil {
		return fmt.Errorf("signal sandbox: %w", ErrInitGone)
	}
	return nil
}

// Close closes the control channel; the init then kills every process of
// the sandbox and exits. Close is idempotent.
func (cl *Client) Close() error {
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		return nil
	}
	cl.closed = true
	cl.mu.Unlock()
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
	if len(cmd.Args) == 0 {
		return isolation.Exit{}, fmt.Errorf("exec in sandbox: empty command: %w", ErrProtocol)
	}
	if err := ctx.Err(); err != nil {
		return isolation.Exit{}, err // never started
	}
	ends, err := newStdioPipes(stdio)
	if err != nil {
		return isolation.Exit{}, err
	}
	defer ends.closeAll()

	ch := make(chan *Message, 2)
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		return isolation.Exit{}, fmt.Errorf("exec in sandbox: %w", isolation.ErrClosed)
	}
	cl.nextID++
	id := cl.nextID
	cl.waiters[id] = ch
	cl.mu.Unlock()
	defer func() {
		cl.mu.Lock()
		delete(cl.waiters, id)
		cl.mu.Unlock()
	}()

	req := &Message{Type: MsgExec, ID: id, Exec: &ExecReq{Args: cmd.Args, Env: cmd.Env, Cwd: cmd.Cwd}}
	if err := cl.c.send(req, ends.childFDs()...); err != nil {
		return isolation.Exit{}, fmt.Errorf("exec %q in sandbox: %w: %v", cmd.Args[0], ErrInitGone, err)
	}
	ends.closeChild()
	ends.startCopy()

	grace := cl.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	var (
		done   = ctx.Done()
		killC  <-chan time.Time
		ctxErr error
		exit   isolation.Exit
	)
	for {
		select {
		case m := <-ch:
			if m.Type == MsgStarted {
				continue
			}
			exit = isolation.Exit{Code: m.Code, Signal: m.Signal}
			ends.finish(outputDrain)
			return exit, ctxErr
		case <-done:
			ctxErr = ctx.Err()
			done = nil
			_ = cl.Signal(id, syscall.SIGTERM)
			t := time.NewTimer(grace)
			defer t.Stop()
			killC = t.C
		case <-killC:
			killC = nil
			_ = cl.Signal(id, syscall.SIGKILL)
		case <-cl.dead:
			ends.finish(0)
			if ctxErr != nil {
				return isolation.Exit{Code: 128 + int(syscall.SIGKILL), Signal: int(syscall.SIGKILL)}, ctxErr
			}
			return isolation.Exit{}, fmt.Errorf("exec %q in sandbox: %w", cmd.Args[0], cl.deadErr)
		}
	}
}

// stdioPipes holds both ends of a command's three standard descriptors.
type stdioPipes struct {
	child [3]*os.File // sent to the init, closed after sending
	// parent ends: in[0] is written from Stdin; out[1], out[2] are read into
	// Stdout/Stderr. nil where the child got /dev/null.
	stdinW *os.File
	outR   [3]*os.File
	stdio  isolation.Stdio
	copies sync.WaitGroup
}

func newStdioPipes(s isolation.Stdio) (_ *stdioPipes, retErr error) {
	p := &stdioPipes{stdio: s}
	defer func() {
		if retErr != nil {
			p.closeAll()
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

func (p *stdioPipes) childFDs() []int {
	return []int{int(p.child[0].Fd()), int(p.child[1].Fd()), int(p.child[2].Fd())}
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

// finish waits up to drain for the output copies to reach EOF, then cuts
// them off by closing the read ends.
func (p *stdioPipes) finish(drain time.Duration) {
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

func (p *stdioPipes) closeAll() {
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
