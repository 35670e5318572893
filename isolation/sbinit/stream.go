package sbinit

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// The stream protocol carries the control protocol over one byte stream
// with no descriptor passing: a Kubernetes pod's exec session, whose
// process is a bridge (BridgeArgs) that the pod's PID 1, the init, dials
// (ConnectArgs); or, with streamArg, the standard input and output of the
// init itself, which then runs the bridge in its own process. The bridge
// speaks the ordinary protocol to the init, makes each command's pipes
// itself, and multiplexes everything on the stream as frames:
//
//	4-byte big-endian length of the rest | 1-byte kind | 4-byte channel | payload
//
//	host (StreamClient)                      pod: bridge in PID 1 ── init
//	    | <---------------------------- hello   (the init binary is in place)
//	    | ---- ctrl config ------------------>  | listen on the egress socket
//	    | <------------------------ ctrl ready  |
//	    | ---- ctrl put{ch,path} + file ch --->  | extract tar into path
//	    | <-------------------- ctrl put-done  |
//	    | ---- ctrl exec{id} ----------------->  | pipes, exec{id}+3 fds
//	    | ---- stdin id ---------------------->  |
//	    | <------------------ stdout/stderr id  |
//	    | <------------ ctrl exit{id,code,sig}  | (after its output drained)
//	    | ---- ctrl signal{id,sig} ----------->  |
//	    | <----------------------- open ch      | a command dialled the egress
//	    | <---> data ch / close ch              |   socket: relayed to the proxy
//	    | ---- ctrl get{ch,path} ------------->  | tar of path
//	    | <----------------- file ch ... ctrl got
//	    | ---- ctrl stats -------------------->  |
//	    | <---------------- ctrl stats{peak,oom}|
//	    | ---- end of stream ----------------->  | init kills everything, exits
//
// An empty payload on stdin, stdout, stderr or file ends that direction
// of the channel; close ends an egress channel both ways.
const (
	kindCtrl   byte = 1 // JSON Message, channel 0
	kindStdin  byte = 2 // host -> pod, channel = exec id
	kindStdout byte = 3 // pod -> host
	kindStderr byte = 4 // pod -> host
	kindOpen   byte = 5 // pod -> host: a new egress connection
	kindData   byte = 6 // both ways: egress bytes
	kindClose  byte = 7 // both ways: egress connection closed
	kindFile   byte = 8 // both ways: tar bytes of a put or get
)

// streamArg, after InitArg, makes the init take its control channel from
// its standard input and output, the bridge in its own process.
const streamArg = "--stdio"

// bridgeFlag selects a bridge in a process of its own (BridgeArgs).
const bridgeFlag = "--bridge="

// BridgeArgs is the argv (after the binary) of a bridge that speaks the
// stream protocol on its standard input and output to an init that dials
// the Unix socket path (ConnectArgs(path)), where the init must be
// another process: a pod's PID 1, while the stream is a later exec
// session in the pod.
func BridgeArgs(path string) []string { return []string{InitArg, bridgeFlag + path} }

// StdioArgs is the argv (after the binary) of an init that speaks the
// stream protocol on its own standard input and output, its bridge in its
// process: a container's PID 1 whose streams the host attached to.
func StdioArgs() []string { return []string{InitArg, streamArg} }

// Stream message types (ctrl frames only).
const (
	MsgHello   = "hello"    // pod -> host: the bridge is up
	MsgPut     = "put"      // host -> pod: tar on file channel ID into Path
	MsgPutDone = "put-done" // pod -> host: Error when it failed
	MsgGet     = "get"      // host -> pod: tar of Path on file channel ID
	MsgGot     = "got"      // pod -> host: after the last file frame
	MsgStats   = "stats"    // both: request, and the answer in Stats
)

// maxPayload bounds one data frame; ctrl frames may be up to maxFrame.
const maxPayload = 32 << 10

// Transfer is a put or get of files through the stream protocol.
type Transfer struct {
	// Path is the directory inside the sandbox.
	Path string `json:"path"`
	// Skip are paths relative to Path left out of a get (nested mounts,
	// masked files).
	Skip []string `json:"skip,omitempty"`
	// MaxBytes caps the file bytes of the transfer; more is an error.
	MaxBytes int64 `json:"max_bytes"`
}

// SandboxStats is the bridge's answer to a stats request, read from the
// cgroup the sandbox sees as its own.
type SandboxStats struct {
	PeakMemoryBytes int64 `json:"peak_memory_bytes"`
	OOMKills        int64 `json:"oom_kills"`
}

// streamMsg is a ctrl frame of the stream protocol: a Message plus the
// stream's own requests.
type streamMsg struct {
	Message
	Transfer *Transfer    `json:"transfer,omitempty"`
	Stats    SandboxStats `json:"stats"`
}

// frame is one decoded frame.
type frame struct {
	kind    byte
	ch      uint32
	payload []byte
}

// framer writes frames to w; it is safe for concurrent use.
type framer struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func (f *framer) write(kind byte, ch uint32, payload []byte) error {
	var hdr [9]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(5+len(payload)))
	hdr[4] = kind
	binary.BigEndian.PutUint32(hdr[5:], ch)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	// One write per frame: a stream that is a pipe or an HTTP body keeps
	// frames whole even when writers interleave.
	buf := make([]byte, 0, len(hdr)+len(payload))
	buf = append(append(buf, hdr[:]...), payload...)
	if _, err := f.w.Write(buf); err != nil {
		f.err = err
		return err
	}
	return nil
}

// data writes p as frames of at most maxPayload bytes.
func (f *framer) data(kind byte, ch uint32, p []byte) error {
	for len(p) > 0 {
		n := min(len(p), maxPayload)
		if err := f.write(kind, ch, p[:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

func (f *framer) ctrl(m *streamMsg) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s: %w", m.Type, err)
	}
	if len(b) > maxFrame {
		return fmt.Errorf("send %s: message of %d bytes too large: %w", m.Type, len(b), ErrProtocol)
	}
	return f.write(kindCtrl, 0, b)
}

// readFrame reads one frame from r.
func readFrame(r io.Reader) (frame, error) {
	var hdr [9]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return frame{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n < 5 || n-5 > maxFrame {
		return frame{}, fmt.Errorf("receive: frame of %d bytes: %w", n, ErrProtocol)
	}
	fr := frame{kind: hdr[4], ch: binary.BigEndian.Uint32(hdr[5:])}
	if fr.kind == kindCtrl || n-5 <= maxPayload {
		fr.payload = make([]byte, n-5)
		if _, err := io.ReadFull(r, fr.payload); err != nil {
			return frame{}, fmt.Errorf("receive: %w", io.ErrUnexpectedEOF)
		}
		return fr, nil
	}
	return frame{}, fmt.Errorf("receive: data frame of %d bytes: %w", n-5, ErrProtocol)
}

func decodeCtrl(fr frame) (*streamMsg, error) {
	var m streamMsg
	if err := json.Unmarshal(fr.payload, &m); err != nil {
		return nil, fmt.Errorf("decode message: %v: %w", err, ErrProtocol)
	}
	return &m, nil
}

// chanWriter is an io.Writer that sends what it is given as frames of one
// kind and channel; Close sends the empty frame that ends the direction.
type chanWriter struct {
	f    *framer
	kind byte
	ch   uint32
	once sync.Once
}

func (w *chanWriter) Write(p []byte) (int, error) {
	if err := w.f.data(w.kind, w.ch, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *chanWriter) Close() error {
	var err error
	w.once.Do(func() { err = w.f.write(w.kind, w.ch, nil) })
	return err
}

// inbox is the receiving end of one channel direction: frames are queued
// by the reader goroutine and read in order. It never blocks the reader
// for longer than the queue is full.
type inbox struct {
	ch     chan []byte
	closed chan struct{}
	once   sync.Once
	rest   []byte
	eof    bool
}

func newInbox() *inbox {
	return &inbox{ch: make(chan []byte, 64), closed: make(chan struct{})}
}

// put queues p; an empty p is the end of the direction. It returns false
// when the inbox was abandoned.
func (b *inbox) put(p []byte) bool {
	select {
	case b.ch <- p:
		return true
	case <-b.closed:
		return false
	}
}

func (b *inbox) Read(p []byte) (int, error) {
	for len(b.rest) == 0 {
		if b.eof {
			return 0, io.EOF
		}
		select {
		case d := <-b.ch:
			if len(d) == 0 {
				b.eof = true
				continue
			}
			b.rest = d
		case <-b.closed:
			return 0, io.EOF
		}
	}
	n := copy(p, b.rest)
	b.rest = b.rest[n:]
	return n, nil
}

// abandon stops the inbox: readers see EOF, writers drop their frames.
func (b *inbox) abandon() { b.once.Do(func() { close(b.closed) }) }

// CleanRel returns name as a clean relative path, and false when it is
// absolute or climbs out of its root.
func CleanRel(name string) (string, bool) {
	c := path.Clean(strings.TrimSuffix(name, "/"))
	if path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") {
		return "", false
	}
	return filepath.FromSlash(c), true
}

// Skipped reports whether rel is one of skip or below one.
func Skipped(rel string, skip []string) bool {
	return slices.ContainsFunc(skip, func(s string) bool {
		return rel == s || strings.HasPrefix(rel, s+string(filepath.Separator))
	})
}

// spliceChannel carries egress channel ch both ways between c and the
// stream until both directions ended, then closes c and calls done. in
// receives the peer's data frames; an empty frame (its close) is the end
// of that direction.
func spliceChannel(c net.Conn, in *inbox, f *framer, ch uint32, done func()) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := io.Copy(c, in); err != nil {
			// This end is gone: stop reading it, and drop what comes.
			in.abandon()
			c.Close()
			return
		}
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
	}()
	io.Copy(&chanWriter{f: f, kind: kindData, ch: ch}, c)
	_ = f.write(kindClose, ch, nil)
	wg.Wait()
	in.abandon()
	c.Close()
	done()
}
