package sbinit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
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

	session
	out *framer
	wc  io.Closer

	ctrls  map[string]chan *streamMsg // hello, ready, stats: one waiter each
	xfers  map[uint32]*streamXfer
	egress map[uint32]*inbox
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
		ctrls:  make(map[string]chan *streamMsg),
		xfers:  make(map[uint32]*streamXfer),
		egress: make(map[uint32]*inbox),
	}
	c.open(func(m *Message) error { return c.out.ctrl(&streamMsg{Message: *m}) })
	for _, t := range []string{MsgHello, MsgReady, MsgStats} {
		c.ctrls[t] = make(chan *streamMsg, 1)
	}
	go c.readLoop(r)
	return c
}

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
			cmd := c.lookup(uint64(fr.ch))
			if cmd == nil || len(fr.payload) == 0 {
				continue
			}
			w := cmd.stdio.Stdout
			if fr.kind == kindStderr {
				w = cmd.stdio.Stderr
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
	for _, in := range c.egress {
		in.abandon()
	}
	c.mu.Unlock()
	c.end(err)
}

func (c *StreamClient) ctrl(m *streamMsg) {
	switch m.Type {
	case MsgExit:
		c.deliver(&m.Message)
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
	return await(ctx, &c.session, c.ctrls[t], what)
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

// SignalCommands sends sig to the process group of every command running,
// and to nothing else: where the bridge is a process of the sandbox
// (BridgeArgs), a signal to every process would reach it and cut the
// stream. What the commands left behind in other groups dies with the
// init when the stream ends.
func (c *StreamClient) SignalCommands(sig syscall.Signal) error {
	c.mu.Lock()
	ids := make([]uint64, 0, len(c.commands))
	for id := range c.commands {
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
	if !c.markClosed() {
		return nil
	}
	return c.wc.Close()
}

// addXfer numbers the transfer x and makes the reader pass it its file
// frames and its end; the caller must call forget once x is over.
func (c *StreamClient) addXfer(x *streamXfer) (id uint64, forget func()) {
	id = c.newID()
	c.mu.Lock()
	c.xfers[uint32(id)] = x
	c.mu.Unlock()
	return id, func() {
		c.mu.Lock()
		delete(c.xfers, uint32(id))
		c.mu.Unlock()
	}
}

// Put sends the tar stream tr into t.Path in the sandbox and waits until
// it is extracted.
func (c *StreamClient) Put(ctx context.Context, t Transfer, tr io.Reader) error {
	x := &streamXfer{done: make(chan *streamMsg, 1)}
	id, forget := c.addXfer(x)
	defer forget()
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
	x := &streamXfer{w: w, done: make(chan *streamMsg, 1)}
	id, forget := c.addXfer(x)
	defer forget()
	if err := c.out.ctrl(&streamMsg{Message: Message{Type: MsgGet, ID: id}, Transfer: &t}); err != nil {
		return fmt.Errorf("copy files out of the sandbox: %w", ErrInitGone)
	}
	return c.xferDone(ctx, x, "copy files out of "+t.Path)
}

func (c *StreamClient) xferDone(ctx context.Context, x *streamXfer, what string) error {
	m, err := await(ctx, &c.session, x.done, what)
	if err != nil {
		return err
	}
	if m.Error != "" {
		return fmt.Errorf("%s: %s", what, m.Error)
	}
	return nil
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
	return c.exec(ctx, cmd, stdio, c.KillGrace, func(stdio isolation.Stdio) (commandIO, error) {
		return &streamIO{f: c.out, stdin: stdio.Stdin}, nil
	})
}

// streamIO carries a command's standard input as frames of its channel
// (commandIO); the reader writes its output frames to its Stdio.
type streamIO struct {
	f     *framer
	stdin io.Reader
	in    *chanWriter
}

func (s *streamIO) start(req *Message) error {
	if err := s.f.ctrl(&streamMsg{Message: *req}); err != nil {
		return err
	}
	s.in = &chanWriter{f: s.f, kind: kindStdin, ch: uint32(req.ID)}
	if s.stdin == nil {
		s.in.Close()
		return nil
	}
	go func() {
		// Not waited for: a reader like os.Stdin may block forever.
		io.Copy(s.in, s.stdin)
		s.in.Close()
	}()
	return nil
}

// finish ends the command's input once it exited; on a broken stream
// there is nobody to tell.
func (s *streamIO) finish(exited bool) {
	if exited {
		s.in.Close()
	}
}

func (s *streamIO) close() {}
