package sbinit

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// bridge is the pod side of the stream protocol (see stream.go). It runs in
// the init's own process, beside the init's request loop, and is the host
// the init sees on its control socket.
type bridge struct {
	out  *framer
	init *conn // the bridge's end of the socketpair

	mu     sync.Mutex
	execs  map[uint64]*bridgeExec
	egress map[uint32]*egressConn
	nextCh uint32
	files  map[uint32]*inbox
	ln     net.Listener
}

// bridgeExec is one running command's pipes, on the bridge's side.
type bridgeExec struct {
	stdin  *os.File // write end; nil once closed
	copies sync.WaitGroup
	outs   [2]*os.File // read ends of stdout and stderr
}

type egressConn struct {
	c  net.Conn
	in *inbox
}

// streamSocket starts the bridge on the process's standard input and
// output and returns the init's end of its socketpair: the init and its
// bridge in one process (an init started with --stdio).
func streamSocket() (*net.UnixConn, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("make the bridge's socketpair: %w", err)
	}
	mine, err := fdConn(fds[0])
	if err != nil {
		unix.Close(fds[1])
		return nil, err
	}
	theirs, err := fdConn(fds[1])
	if err != nil {
		mine.Close()
		return nil, err
	}
	if err := startBridge(mine); err != nil {
		mine.Close()
		theirs.Close()
		return nil, err
	}
	return theirs, nil
}

// runBridge is a bridge in a process of its own (BridgeArgs): it listens
// on the Unix socket path, takes the one connection of the init that
// dials it (the sandbox's PID 1, started with ConnectArgs), then carries
// the stream on its standard input and output to it. It exits when
// either side is gone.
func runBridge(path string) int {
	// A command's kill(-1) must not cut the stream under the run.
	signal.Ignore(unix.SIGTERM, unix.SIGINT, unix.SIGHUP)
	_ = os.Remove(path)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandboxed bridge:", err)
		return 1
	}
	_ = ln.SetDeadline(time.Now().Add(bridgeAcceptTimeout))
	c, err := ln.AcceptUnix()
	// One connection only: nothing else may reach the init's channel.
	ln.Close()
	_ = os.Remove(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandboxed bridge: the init did not connect:", err)
		return 1
	}
	if err := startBridge(c); err != nil {
		fmt.Fprintln(os.Stderr, "sandboxed bridge:", err)
		return 1
	}
	select {} // the bridge's goroutines exit the process
}

// bridgeAcceptTimeout bounds the wait for the init to dial the bridge.
const bridgeAcceptTimeout = 30 * time.Second

// startBridge greets the host on standard output and starts carrying
// frames between the stream and the init's channel c.
func startBridge(c *net.UnixConn) error {
	b := &bridge{
		out:    &framer{w: os.Stdout},
		init:   newConn(c),
		execs:  make(map[uint64]*bridgeExec),
		egress: make(map[uint32]*egressConn),
		files:  make(map[uint32]*inbox),
	}
	if err := b.out.ctrl(&streamMsg{Message: Message{Type: MsgHello}}); err != nil {
		return fmt.Errorf("greet the host: %w", err)
	}
	go b.fromHost(os.Stdin)
	go b.fromInit()
	return nil
}

func fdConn(fd int) (*net.UnixConn, error) {
	f := os.NewFile(uintptr(fd), "bridge")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("open the bridge's socket: %w", err)
	}
	return c.(*net.UnixConn), nil
}

// fromHost reads the host's frames until the stream ends, then closes the
// init's channel: the init kills everything and exits.
func (b *bridge) fromHost(r io.Reader) {
	defer b.init.c.Close()
	for {
		fr, err := readFrame(r)
		if err != nil {
			return
		}
		switch fr.kind {
		case kindCtrl:
			m, err := decodeCtrl(fr)
			if err != nil {
				return
			}
			b.ctrl(m)
		case kindStdin:
			b.stdin(uint64(fr.ch), fr.payload)
		case kindData:
			b.mu.Lock()
			e := b.egress[fr.ch]
			b.mu.Unlock()
			if e != nil {
				e.in.put(fr.payload)
			}
		case kindClose:
			b.mu.Lock()
			e := b.egress[fr.ch]
			b.mu.Unlock()
			if e != nil {
				e.in.put(nil)
			}
		case kindFile:
			b.mu.Lock()
			in := b.files[fr.ch]
			b.mu.Unlock()
			if in != nil {
				in.put(fr.payload)
			}
		}
	}
}

func (b *bridge) ctrl(m *streamMsg) {
	switch m.Type {
	case MsgConfig:
		if m.Config == nil {
			b.reply(&streamMsg{Message: Message{Type: MsgError, Error: "config frame without a config"}})
			return
		}
		if e := m.Config.Egress; e != nil {
			if err := b.listenEgress(e.Socket); err != nil {
				b.reply(&streamMsg{Message: Message{Type: MsgError, Error: err.Error()}})
				return
			}
		}
		if err := b.init.send(&m.Message); err != nil {
			return
		}
	case MsgExec:
		b.exec(&m.Message)
	case MsgSignal:
		_ = b.init.send(&m.Message)
	case MsgPut:
		in := newInbox()
		b.mu.Lock()
		b.files[uint32(m.ID)] = in
		b.mu.Unlock()
		go func() {
			err := untarInto(in, m.Transfer)
			in.abandon()
			b.mu.Lock()
			delete(b.files, uint32(m.ID))
			b.mu.Unlock()
			b.reply(&streamMsg{Message: Message{Type: MsgPutDone, ID: m.ID, Error: errText(err)}})
		}()
	case MsgGet:
		go func() {
			w := &chanWriter{f: b.out, kind: kindFile, ch: uint32(m.ID)}
			err := WriteTar(w, m.Transfer)
			w.Close()
			b.reply(&streamMsg{Message: Message{Type: MsgGot, ID: m.ID, Error: errText(err)}})
		}()
	case MsgStats:
		b.reply(&streamMsg{Message: Message{Type: MsgStats}, Stats: cgroupStats()})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (b *bridge) reply(m *streamMsg) { _ = b.out.ctrl(m) }

// exec makes the command's pipes and hands the init the child ends.
func (b *bridge) exec(m *Message) {
	fail := func(err error) {
		b.reply(&streamMsg{Message: Message{Type: MsgExit, ID: m.ID, Code: 126, Error: err.Error()}})
	}
	var child [3]*os.File
	defer func() {
		for _, f := range child {
			if f != nil {
				f.Close()
			}
		}
	}()
	e := &bridgeExec{}
	var err error
	if child[0], e.stdin, err = os.Pipe(); err != nil {
		fail(err)
		return
	}
	for i := range e.outs {
		if e.outs[i], child[i+1], err = os.Pipe(); err != nil {
			e.closeAll()
			fail(err)
			return
		}
	}
	b.mu.Lock()
	b.execs[m.ID] = e
	b.mu.Unlock()
	fds := []int{int(child[0].Fd()), int(child[1].Fd()), int(child[2].Fd())}
	if err := b.init.send(m, fds...); err != nil {
		e.closeAll()
		fail(err)
		return
	}
	for i, r := range e.outs {
		w := &chanWriter{f: b.out, kind: kindStdout + byte(i), ch: uint32(m.ID)}
		e.copies.Add(1)
		go func() {
			defer e.copies.Done()
			io.Copy(w, r)
			w.Close()
		}()
	}
}

func (e *bridgeExec) closeAll() {
	if e.stdin != nil {
		e.stdin.Close()
	}
	for _, r := range e.outs {
		if r != nil {
			r.Close()
		}
	}
}

// stdin writes p to command id's stdin; an empty p closes it.
func (b *bridge) stdin(id uint64, p []byte) {
	b.mu.Lock()
	e := b.execs[id]
	var w *os.File
	if e != nil {
		w = e.stdin
		if len(p) == 0 {
			e.stdin = nil
		}
	}
	b.mu.Unlock()
	if w == nil {
		return
	}
	if len(p) == 0 {
		w.Close()
		return
	}
	// A command that does not read its input must not stall the stream.
	_ = w.SetWriteDeadline(time.Now().Add(outputDrain))
	_, _ = w.Write(p)
}

// fromInit forwards what the init says; an exit goes once the command's
// output has been sent (or cut off after outputDrain).
func (b *bridge) fromInit() {
	for {
		m, fds, err := b.init.recv()
		if err != nil {
			os.Exit(0) // the init is gone
		}
		closeFDs(fds)
		switch m.Type {
		case MsgExit:
			b.mu.Lock()
			e := b.execs[m.ID]
			delete(b.execs, m.ID)
			b.mu.Unlock()
			if e == nil {
				b.reply(&streamMsg{Message: *m})
				continue
			}
			go func() {
				e.finish()
				b.reply(&streamMsg{Message: *m})
			}()
		case MsgStarted:
		default:
			b.reply(&streamMsg{Message: *m})
		}
	}
}

// finish waits up to outputDrain for the command's output to end, then
// cuts it off.
func (e *bridgeExec) finish() {
	done := make(chan struct{})
	go func() { e.copies.Wait(); close(done) }()
	t := time.NewTimer(outputDrain)
	select {
	case <-done:
	case <-t.C:
		for _, r := range e.outs {
			r.SetReadDeadline(time.Now())
		}
		<-done
	}
	t.Stop()
	e.closeAll()
}

// listenEgress serves the egress socket at path: each connection the
// init's relay makes becomes a channel to the host, which carries it to
// the run's proxy.
func (b *bridge) listenEgress(path string) error {
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listen on the egress socket: %w", err)
	}
	b.ln = ln
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.nextCh++
			ch := b.nextCh
			e := &egressConn{c: c, in: newInbox()}
			b.egress[ch] = e
			b.mu.Unlock()
			if b.out.write(kindOpen, ch, nil) != nil {
				c.Close()
				return
			}
			go b.pumpEgress(ch, e)
		}
	}()
	return nil
}

// pumpEgress carries an egress connection until both sides closed it.
func (b *bridge) pumpEgress(ch uint32, e *egressConn) {
	spliceChannel(e.c, e.in, b.out, ch, func() {
		b.mu.Lock()
		delete(b.egress, ch)
		b.mu.Unlock()
	})
}

// cgroupStats reads the peak memory and OOM kills of the cgroup this
// process sees as its own root (cgroup v2, else v1's memory controller).
// Zero where the files are missing.
func cgroupStats() SandboxStats {
	var s SandboxStats
	if v, ok := readInt("/sys/fs/cgroup/memory.peak"); ok {
		s.PeakMemoryBytes = v
	} else if v, ok := readInt("/sys/fs/cgroup/memory/memory.max_usage_in_bytes"); ok {
		s.PeakMemoryBytes = v
	}
	for _, f := range []string{"/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "oom_kill "); ok {
				s.OOMKills, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			}
		}
		break
	}
	return s
}

func readInt(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v, err == nil
}
