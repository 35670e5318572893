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

// session is the host side of the control protocol apart from its
// transport, shared by Client (a Unix socket that passes descriptors) and
// StreamClient (one multiplexed byte stream): the numbering of commands,
// the waiters of their exits, the end of the channel, and how a command is
// run and waited for. The transport sends the control messages (send) and
// carries each command's standard I/O (commandIO); its reader hands the
// init's started and exit messages to deliver and its own end to end.
type session struct {
	// send sends a control message that carries no descriptors.
	send func(*Message) error

	mu       sync.Mutex
	nextID   uint64
	commands map[uint64]*command
	dead     chan struct{} // closed when the channel broke
	deadErr  error
	closed   bool
}

// command is one command running in the sandbox.
type command struct {
	// stdio is where its output goes: StreamClient's reader writes the
	// stdout and stderr frames of the command's channel there.
	stdio isolation.Stdio
	// msgs receives its started and exit messages (buffered for both).
	msgs chan *Message
}

// commandIO carries one command's standard I/O over a transport.
type commandIO interface {
	// start sends req, the request to exec the command, and starts
	// carrying the command's I/O.
	start(req *Message) error
	// finish ends the carrying: the command exited (its output may still
	// be on its way) or, when exited is false, the channel broke.
	finish(exited bool)
	// close releases what is left, however the command ended.
	close()
}

func (s *session) open(send func(*Message) error) {
	s.send = send
	s.commands = make(map[uint64]*command)
	s.dead = make(chan struct{})
}

// Done is closed when the control channel is gone (the init exited, or
// Close).
func (s *session) Done() <-chan struct{} { return s.dead }

// Signal sends sig to the process group of command id, or to every
// process of the sandbox when id is 0.
func (s *session) Signal(id uint64, sig syscall.Signal) error {
	if err := s.send(&Message{Type: MsgSignal, ID: id, Signal: int(sig)}); err != nil {
		return fmt.Errorf("signal sandbox: %w", ErrInitGone)
	}
	return nil
}

// markClosed records Close and reports whether it is the first.
func (s *session) markClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := !s.closed
	s.closed = true
	return first
}

// newID numbers a command or a transfer.
func (s *session) newID() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	return s.nextID
}

// lookup returns the running command id, or nil.
func (s *session) lookup(id uint64) *command {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commands[id]
}

// deliver hands m, a started or exit message, to the Exec of its command.
func (s *session) deliver(m *Message) {
	if c := s.lookup(m.ID); c != nil {
		c.msgs <- m // buffered for started and exit
	}
}

// end records why the channel broke, err being what stopped the reader,
// and wakes everyone waiting on it. The reader calls it once, last.
func (s *session) end(err error) {
	s.mu.Lock()
	if s.closed || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		s.deadErr = ErrInitGone
	} else {
		s.deadErr = fmt.Errorf("%w: %v", ErrInitGone, err)
	}
	s.mu.Unlock()
	close(s.dead)
}

// await waits for one value on ch; what names the wait in its errors.
func await[T any](ctx context.Context, s *session, ch <-chan T, what string) (T, error) {
	var zero T
	select {
	case v := <-ch:
		return v, nil
	case <-s.dead:
		return zero, fmt.Errorf("%s: %w", what, s.deadErr)
	case <-ctx.Done():
		return zero, fmt.Errorf("%s: %w", what, ctx.Err())
	}
}

// exec runs cmd in the sandbox and waits for it, as Client.Exec says;
// grace is the time between SIGTERM and SIGKILL (0: DefaultKillGrace),
// and carry makes the transport's commandIO for stdio.
func (s *session) exec(ctx context.Context, cmd isolation.Command, stdio isolation.Stdio, grace time.Duration,
	carry func(isolation.Stdio) (commandIO, error)) (isolation.Exit, error) {
	if len(cmd.Args) == 0 {
		return isolation.Exit{}, fmt.Errorf("exec in sandbox: empty command: %w", ErrProtocol)
	}
	if err := ctx.Err(); err != nil {
		return isolation.Exit{}, err // never started
	}
	cio, err := carry(stdio)
	if err != nil {
		return isolation.Exit{}, err
	}
	defer cio.close()

	c := &command{stdio: stdio, msgs: make(chan *Message, 2)}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return isolation.Exit{}, fmt.Errorf("exec in sandbox: %w", isolation.ErrClosed)
	}
	s.nextID++
	id := s.nextID
	s.commands[id] = c
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.commands, id)
		s.mu.Unlock()
	}()

	req := &Message{Type: MsgExec, ID: id, Exec: &ExecReq{Args: cmd.Args, Env: cmd.Env, Cwd: cmd.Cwd}}
	if err := cio.start(req); err != nil {
		return isolation.Exit{}, fmt.Errorf("exec %q in sandbox: %w: %v", cmd.Args[0], ErrInitGone, err)
	}

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
		case m := <-c.msgs:
			if m.Type == MsgStarted {
				continue
			}
			cio.finish(true)
			return isolation.Exit{Code: m.Code, Signal: m.Signal}, ctxErr
		case <-done:
			ctxErr = ctx.Err()
			done = nil
			_ = s.Signal(id, syscall.SIGTERM)
			t := time.NewTimer(grace)
			defer t.Stop()
			killC = t.C
		case <-killC:
			killC = nil
			_ = s.Signal(id, syscall.SIGKILL)
		case <-s.dead:
			cio.finish(false)
			if ctxErr != nil {
				return isolation.Exit{Code: 128 + int(syscall.SIGKILL), Signal: int(syscall.SIGKILL)}, ctxErr
			}
			return isolation.Exit{}, fmt.Errorf("exec %q in sandbox: %w", cmd.Args[0], s.deadErr)
		}
	}
}
