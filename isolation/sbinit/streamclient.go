package sbinit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// StreamClient is the host side of the stream protocol (stream.go): the
// same requests as Client, over one byte stream with no descriptor
// passing. It is safe for concurrent use.
type StreamClient struct {
	// KillGrace is the time between SIGTERM and SIGKILL when an Exec's
	// context ends. Set it before the first Exec.
	KillGrace time.Duration
	// DialEgress, when set, connects one egress connection of the
	// sandbox to the run's proxy; nil refuses them. Set it before
	// Handshake.
	DialEgress func() (net.Conn, error)

	out *framer
	wc  io.Closer

	mu      sync.Mutex
	nextID  uint64
	execs   map[uint64]*streamExec
	ctrls   map[string]chan *streamMsg // hello, ready, stats: one waiter each
	xfers   map[uint32]*streamXfer
	egress  map[uint32]*inbox
	dead    chan struct{}
	deadErr error
	closed  bool
}

type streamExec struct {
	stdout, stderr io.Writer
	exit           chan *streamMsg
}

type streamXfer struct {
	w    io.Writer // get: where the tar goes
	done chan *streamMsg
}

// NewStreamClient speaks the stream protocol, reading r and writing w;
// Close closes w. It starts reading at once; call WaitHello next.
func NewStreamClient(r io.Reader, w io.WriteCloser) *StreamClient {
	c := &StreamClient{
		out:    &framer{w: w},
		wc:     w,
		execs:  make(map[uint64]*streamExec),
		ctrls:  make(map[string]chan *streamMsg),
		xfers:  make(map[uint32]*streamXfer),
		egress: make(map[uint32]*inbox),
		dead:   make(chan struct{}),
	}
	for _, t := range []string{MsgHello, MsgReady, MsgStats} {
		c.ctrls[t] = make(chan *streamMsg, 1)
	}
	go c.readLoop(r)
	return c
}

// Done is closed when the stream is gone.
func (c *StreamClient) Done() <-chan struct{} { return c.dead }

// Err is why the stream ended (nil while it is up).
func (c *StreamClient) Err() error {
	select {
	case <-c.dead:
		return c.deadErr
	default:
		return nil
	}
}

func (c *StreamClient) readLoop(r io.Reader) {
	var err error
	for {
		var fr frame
		if fr, err = readFrame(r); err != nil {
			break
		}
		switch fr.kind {
		case kindCtrl:
			var m *streamMsg
			if m, err = decodeCtrl(fr); err != nil {
				break
			}
			c.ctrl(m)
		case kindStdout, kindStderr:
			c.mu.Lock()
			e := c.execs[uint64(fr.ch)]
			c.mu.Unlock()
			if e == nil || len(fr.payload) == 0 {
				continue
			}
			w := e.stdout
			if fr.kind == kindStderr {
				w = e.stderr
			}
			if w != nil {
				w.Write(fr.payload)
			}
		case kindFile:
			c.mu.Lock()
			x := c.xfers[fr.ch]
			c.mu.Unlock()
			if x != nil && x.w != nil && len(fr.payload) > 0 {
				if _, werr := x.w.Write(fr.payload); werr != nil {
					x.w = nil // the taker gave up; the got frame still ends it
				}
			}
		case kindOpen:
			c.openEgress(fr.ch)
		case kindData, kindClose:
			c.mu.Lock()
			in := c.egress[fr.ch]
			c.mu.Unlock()
			if in != nil {
				if fr.kind == kindClose {
					in.put(nil)
				} else if len(fr.payload) > 0 {
					in.put(fr.payload)
				}
			}
		}
		if err != nil {
			break
		}
	}
	c.mu.Lock()
	if c.closed || errors.Is(err, io.EOF) {
		c.deadErr = ErrInitGone
	} else {
		c.deadErr = fmt.Errorf("%w: %v", ErrInitGone, err)
	}
	for _, in := range c.egress {
		in.abandon()
	}
	c.mu.Unlock()
	close(c.dead)
}

func (c *StreamClient) ctrl(m *streamMsg) {
	switch m.Type {
	case MsgExit:
		c.mu.Lock()
		e := c.execs[m.ID]
		c.mu.Unlock()
		if e != nil {
			e.exit <- m // buffered
		}
	case MsgPutDone, MsgGot:
		c.mu.Lock()
		x := c.xfers[uint32(m.ID)]
		c.mu.Unlock()
		if x != nil {
			x.done <- m // buffered
		}
	case MsgError:
		m.Type = MsgReady // answers the config; WaitReady tells them apart by Error
		fallthrough
	default:
		c.mu.Lock()
		w := c.ctrls[m.Type]
		c.mu.Unlock()
		if w != nil {
			select {
			case w <- m:
			default:
			}
		}
	}
}

// wait waits for the ctrl message of type t.
func (c *StreamClient) wait(ctx context.Context, t, what string) (*streamMsg, error) {
	select {
	case m := <-c.ctrls[t]:
		return m, nil
	case <-c.dead:
		return nil, fmt.Errorf("%s: %w", what, c.deadErr)
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", what, ctx.Err())
	}
}

// WaitHello waits until the bridge in the sandbox says it is up.
func (c *StreamClient) WaitHello(ctx context.Context) error {
	_, err := c.wait(ctx, MsgHello, "wait for the sandbox init to start")
	return err
}

// Handshake sends cfg and waits until the init is ready. An init that
// failed to set up returns an error wrapping ErrSetup with its reason.
func (c *StreamClient) Handshake(ctx context.Context, cfg *Config) error {
	if err := c.out.ctrl(&streamMsg{Message: Message{Type: MsgConfig, Config: cfg}}); err != nil {
		return fmt.Errorf("configure sandbox init: %w", err)
	}
	m, err := c.wait(ctx, MsgReady, "wait for sandbox init")
	if err != nil {
		return err
	}
	if m.Error != "" {
		return fmt.Errorf("%w: %s", ErrSetup, m.Error)
	}
	return nil
}

// Stats asks the sandbox for its cgroup's peak memory and OOM kills.
func (c *StreamClient) Stats(ctx context.Context) (SandboxStats, error) {
	if err := c.out.ctrl(&streamMsg{Message: Message{Type: MsgStats}}); err != nil {
		return SandboxStats{}, fmt.Errorf("ask for sandbox stats: %w", ErrInitGone)
	}
	m, err := c.wait(ctx, MsgStats, "read sandbox stats")
	if err != nil {
		return SandboxStats{}, err
	}
	return m.Stats, nil
}

// Signal sends sig to command id's process group, or to every process of
// the sandbox when id is 0.
func (c *StreamClient) Signal(id uint64, sig syscall.Signal) error {
	if err := c.out.ctrl(&streamMsg{Message: Message{Type: MsgSignal, ID: id, Signal: int(sig)}}); err != nil {
		return fmt.Errorf("signal sandbox: %w", ErrInitGone)
	}
	return nil
}

// SignalCommands sends sig to the process group of every command running,
// and to nothing else: where the bridge is a process of the sandbox
// (BridgeArgs), a signal to every process would reach it and cut the
// stream. What the commands left behind in other groups dies with the
// init when the stream ends.
func (c *StreamClient) SignalCommands(sig syscall.Signal) error {
	c.mu.Lock()
	ids := make([]uint64, 0, len(c.execs))
	for id := range c.execs {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	var err error
	for _, id := range ids {
		if e := c.Signal(id, sig); e != nil {
			err = e
		}
	}
	return err
}

// Close ends the stream; the init then kills every process of the
// sandbox and exits. It is idempotent.
func (c *StreamClient) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	return c.wc.Close()
}

func (c *StreamClient) newID() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextID++
	return c.nextID
}

// Put sends the tar stream tr into t.Path in the sandbox and waits until
// it is extracted.
func (c *StreamClient) Put(ctx context.Context, t Transfer, tr io.Reader) error {
	id := c.newID()
	x := &streamXfer{done: make(chan *streamMsg, 1)}
	c.mu.Lock()
	c.xfers[uint32(id)] = x
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.xfers, uint32(id))
		c.mu.Unlock()
	}()
	if err := c.out.ctrl(&streamMsg{Message: Message{Type: MsgPut, ID: id}, Transfer: &t}); err != nil {
		return fmt.Errorf("copy files into the sandbox: %w", ErrInitGone)
	}
	w := &chanWriter{f: c.out, kind: kindFile, ch: uint32(id)}
	_, err := io.Copy(w, tr)
	w.Close()
	if err != nil {
		return fmt.Errorf("copy files into %s: %w", t.Path, err)
	}
	return c.xferDone(ctx, x, "copy files into "+t.Path)
}

// Get receives the tar stream of t.Path in the sandbox into w.
func (c *StreamClient) Get(ctx context.Context, t Transfer, w io.Writer) error {
	id := c.newID()
	x := &streamXfer{w: w, done: make(chan *streamMsg, 1)}
	c.mu.Lock()
	c.xfers[uint32(id)] = x
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.xfers, uint32(id))
		c.mu.Unlock()
	}()
	if err := c.out.ctrl(&streamMsg{Message: Message{Type: MsgGet, ID: id}, Transfer: &t}); err != nil {
		return fmt.Errorf("copy files out of the sandbox: %w", ErrInitGone)
	}
	return c.xferDone(ctx, x, "copy files out of "+t.Path)
}

func (c *StreamClient) xferDone(ctx context.Context, x *streamXfer, what string) error {
	select {
	case m := <-x.done:
		if m.Error != "" {
			return fmt.Errorf("%s: %s", what, m.Error)
		}
		return nil
	case <-c.dead:
		return fmt.Errorf("%s: %w", what, c.deadErr)
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
}

// openEgress carries a new egress connection of the sandbox to the proxy.
func (c *StreamClient) openEgress(ch uint32) {
	in := newInbox()
	c.mu.Lock()
	c.egress[ch] = in
	c.mu.Unlock()
	go func() {
		forget := func() {
			c.mu.Lock()
			delete(c.egress, ch)
			c.mu.Unlock()
		}
		var conn net.Conn
		err := errors.New("no egress in this run")
		if c.DialEgress != nil {
			conn, err = c.DialEgress()
		}
		if err != nil {
			in.abandon()
			forget()
			_ = c.out.write(kindClose, ch, nil)
			return
		}
		spliceChannel(conn, in, c.out, ch, forget)
	}()
}

// Exec runs cmd in the sandbox and waits for it, as Client.Exec does.
func (c *StreamClient) Exec(ctx context.Context, cmd isolation.Command, stdio isolation.Stdio) (isolation.Exit, error) {
	if len(cmd.Args) == 0 {
		return isolation.Exit{}, fmt.Errorf("exec in sandbox: empty command: %w", ErrProtocol)
	}
	if err := ctx.Err(); err != nil {
		return isolation.Exit{}, err
	}
	e := &streamExec{stdout: stdio.Stdout, stderr: stdio.Stderr, exit: make(chan *streamMsg, 1)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return isolation.Exit{}, fmt.Errorf("exec in sandbox: %w", isolation.ErrClosed)
	}
	c.nextID++
	id := c.nextID
	c.execs[id] = e
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.execs, id)
		c.mu.Unlock()
	}()
	req := &streamMsg{Message: Message{Type: MsgExec, ID: id, Exec: &ExecReq{Args: cmd.Args, Env: cmd.Env, Cwd: cmd.Cwd}}}
	if err := c.out.ctrl(req); err != nil {
		return isolation.Exit{}, fmt.Errorf("exec %q in sandbox: %w: %v", cmd.Args[0], ErrInitGone, err)
	}
	in := &chanWriter{f: c.out, kind: kindStdin, ch: uint32(id)}
	if stdio.Stdin == nil {
		in.Close()
	} else {
		go func() {
			// Not waited for: a reader like os.Stdin may block forever.
			io.Copy(in, stdio.Stdin)
			in.Close()
		}()
	}
	grace := c.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	var (
		done   = ctx.Done()
		killC  <-chan time.Time
		ctxErr error
	)
	for {
		select {
		case m := <-e.exit:
			in.Close()
			return isolation.Exit{Code: m.Code, Signal: m.Signal}, ctxErr
		case <-done:
			ctxErr = ctx.Err()
			done = nil
			_ = c.Signal(id, syscall.SIGTERM)
			t := time.NewTimer(grace)
			defer t.Stop()
			killC = t.C
		case <-killC:
			killC = nil
			_ = c.Signal(id, syscall.SIGKILL)
		case <-c.dead:
			if ctxErr != nil {
				return isolation.Exit{Code: 128 + int(syscall.SIGKILL), Signal: int(syscall.SIGKILL)}, ctxErr
			}
			return isolation.Exit{}, fmt.Errorf("exec %q in sandbox: %w", cmd.Args[0], c.deadErr)
		}
	}
}
