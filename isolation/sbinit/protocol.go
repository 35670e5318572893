package sbinit

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

const (
	// InitArg is argv[1] of a re-executed init.
	InitArg = "__sandboxed-init"
	// ControlFD is the descriptor on which a re-executed init finds its
	// control socket when no --connect is given.
	ControlFD = 3
	// connectFlag selects a dialled control socket (container tier).
	connectFlag = "--connect="

	// maxFrame bounds one message (argv+env of a command fit easily).
	maxFrame = 16 << 20
	// maxFDs bounds the descriptors one frame may carry: an exec's three,
	// or a config's prepared grant mounts (Mount.Tree).
	maxFDs = 64
)

// ConnectArgs is the argv (after the binary) of an init that dials the
// host's Unix socket at path (as seen inside the sandbox).
func ConnectArgs(path string) []string {
	return []string{InitArg, connectFlag + path}
}

// Message types.
const (
	MsgConfig  = "config"  // host -> init, first frame
	MsgReady   = "ready"   // init -> host: set up, serving
	MsgError   = "error"   // init -> host: setup failed (Error), init exits
	MsgExec    = "exec"    // host -> init, with 3 fds
	MsgStarted = "started" // init -> host: command pid
	MsgExit    = "exit"    // init -> host: command ended
	MsgSignal  = "signal"  // host -> init
	// MsgPrepare (host -> init, the first frame of a warm init: Skeleton)
	// builds the part of the root no run decides; the init answers
	// MsgPrepared (or MsgError, then exits) and waits for its config.
	MsgPrepare  = "prepare"
	MsgPrepared = "prepared"
	// MsgSpare (host -> init, before the config of a warm init outside
	// namespaces) starts the confining start of its first command ahead
	// (spare_linux.go). No answer.
	MsgSpare = "spare"
)

// Message is one frame of the control protocol. Fields not used by a type
// are left zero.
type Message struct {
	Type string `json:"type"`
	// ID names the command of exec/started/exit/signal; 0 in signal means
	// every process of the sandbox.
	ID     uint64  `json:"id,omitempty"`
	Config *Config `json:"config,omitempty"`
	// Skeleton is what a prepare frame asks a warm init to build.
	Skeleton *Skeleton `json:"skeleton,omitempty"`
	Exec     *ExecReq  `json:"exec,omitempty"`
	Pid      int       `json:"pid,omitempty"`
	Code     int       `json:"code,omitempty"`
	Signal   int       `json:"signal,omitempty"`
	Error    string    `json:"error,omitempty"`
	// Landlock is, in ready, the Landlock ABI the init enforced (0: none).
	Landlock int `json:"landlock,omitempty"`
	// NFDs is the number of descriptors attached to this frame.
	NFDs int `json:"nfds,omitempty"`
}

// ExecReq is one command to start.
type ExecReq struct {
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Cwd  string   `json:"cwd"`
}

// Config tells the init what to build and enforce. It is sent as the first
// frame of the control channel.
type Config struct {
	RunID string `json:"run_id"`
	// Setup is what a process-tier init builds and applies (NewSetup).
	Setup *Setup `json:"setup,omitempty"`
	// Spec stays on the host: when Setup is nil and the init must build a
	// root or drop privileges, SendConfig sends NewSetup(Spec, nil)
	// instead (so a spec with a seccomp profile must come as a Setup).
	// (Merely having the OCI types in the message costs a fresh init
	// about half a millisecond of JSON decoding.)
	Spec *specs.Spec `json:"-"`
	// BuildRoot makes the init build the sandbox root (process tier). The
	// container tier leaves it false: the engine built the root.
	BuildRoot bool `json:"build_root"`
	// DropPrivileges makes the init switch to Setup's user, set the
	// capability sets, no_new_privs, rlimits and load the seccomp filter
	// before serving (process tier).
	DropPrivileges bool `json:"drop_privileges"`
	// NetworkUp brings the loopback interface up (a fresh network namespace
	// starts with it down).
	NetworkUp bool `json:"network_up"`
	// TmpfsBytes caps /tmp (process tier); 0 means 64 MiB.
	TmpfsBytes int64 `json:"tmpfs_bytes"`
	// RootBase is the directory (inside the init's private mount namespace)
	// on which the new root tmpfs is mounted before pivot_root; default /tmp.
	RootBase string `json:"root_base,omitempty"`
	// NewSession starts every command in its own session (setsid) rather
	// than only its own process group (none tier: detach from the
	// controller's terminal).
	NewSession bool `json:"new_session,omitempty"`
	// Confine, when set, confines each command in its own process
	// before it executes (the landlock tier; see Confine); the init
	// itself stays outside. It needs NewSession and KillTree.
	Confine *Confine `json:"confine,omitempty"`
	// KillTree makes the init, a child subreaper outside any pid
	// namespace, signal every process descending from it when it signals
	// everything (not only the process groups it started: a daemon that
	// left its session too), and, when the host goes, kill them all and
	// wait until none is left before it exits.
	KillTree bool `json:"kill_tree,omitempty"`
	// Landlock, when set, is the ruleset the init applies to itself and
	// every command (process tier; needs BuildRoot). NewLandlock makes it.
	Landlock *Landlock `json:"landlock,omitempty"`
	// Egress, when set, makes the init relay 127.0.0.1:Port to the Unix
	// socket Socket (a path inside the sandbox).
	Egress *EgressRelay `json:"egress,omitempty"`
	// BuildAs, when set, is the identity (inside its user namespace) the
	// init takes right after it opened the root's sources and before it
	// mounts anything: an init started as an id its namespace does not
	// map (host root, mapped to an unprivileged range) could not create a
	// file in its own tmpfs. Its capabilities in the namespace stay.
	BuildAs *ID `json:"build_as,omitempty"`
	// Filter, when set and DropPrivileges is not, is a compiled seccomp
	// filter (Setup.Seccomp's encoding) the init loads on itself, with
	// no_new_privs, before it serves: where the runtime that made the
	// sandbox could not be given the plan's profile (a Kubernetes pod,
	// which gets only the runtime's default) it narrows it.
	Filter []byte `json:"filter,omitempty"`
	// KeepGroups leaves the supplementary groups as they are: in a user
	// namespace whose maps an unprivileged user wrote, setgroups is
	// denied, and the groups are that user's own.
	KeepGroups bool `json:"keep_groups,omitempty"`
	// NprocLimit, when positive, bounds the tasks (processes and
	// threads) of the commands: each runs with RLIMIT_NPROC, soft and
	// hard, of NprocLimit plus the tasks of the sandbox that are not the
	// commands' at its start (the init's threads and an exec session's,
	// such as a pod's bridge), set in the command's own process before it
	// executes (nproc_linux.go). RLIMIT_NPROC counts the tasks of the
	// real uid in the whole kernel: it is a per-sandbox bound only where
	// the sandbox has a kernel of its own (gVisor), and only for a uid
	// without CAP_SYS_ADMIN or CAP_SYS_RESOURCE. The init itself keeps
	// its own limit, so a command that used the budget up cannot starve
	// the init of the threads it needs.
	NprocLimit int64 `json:"nproc_limit,omitempty"`
	// Watch, when set, is a seccomp filter (encoded like Setup.Seccomp)
	// whose watched syscalls go to a user-notification listener: the init
	// loads it on the thread that forks every command, once every other
	// step of its setup is done, and sends the listener's descriptor with
	// ready. Whoever holds it must answer every notification (permissions
	// learn observes; it never refuses).
	Watch []byte `json:"watch,omitempty"`
	// Connect, when set, makes the init the supervisor of its commands'
	// connect() calls (the landlock tier's network; see Connect). It needs
	// Confine and excludes Watch: a filter chain has one listener.
	Connect *Connect `json:"connect,omitempty"`
}

// Skeleton is the part of a process-tier root that no run decides,
// which a warm init builds before a run claims it (MsgPrepare): the root
// tmpfs on RootBase, the system paths, /dev, /proc with the masked and
// read-only paths below it (ProcPaths of the spec's lists), the
// generated /etc files, /tmp, the loopback interface up and the bounding
// set cut; with BuildAs, the init takes that identity once it has opened
// the system paths. The config that claims it must ask for the same
// (Config.Skeleton); what it adds is applied as a cold start would.
type Skeleton struct {
	RootBase      string   `json:"root_base,omitempty"`
	MaskedPaths   []string `json:"masked_paths,omitempty"`
	ReadonlyPaths []string `json:"readonly_paths,omitempty"`
	NetworkUp     bool     `json:"network_up,omitempty"`
	// Bounding is Setup.Bounding: the bounding set is cut to it at once
	// (it binds only what commands may gain, never what the init holds).
	Bounding uint64 `json:"bounding"`
	// BuildAs is Config.BuildAs: the identity the init builds the root
	// as. With it every grant of the claiming config must come prepared
	// by the host (Mount.Tree): the init no longer has the identity that
	// could open its source.
	BuildAs *ID `json:"build_as,omitempty"`
	// UID, GID and Hostname are Setup's, which the generated /etc files
	// name (passwd, group, hosts, hostname); TmpfsBytes is
	// Config.TmpfsBytes, the size of /tmp.
	UID        uint32 `json:"uid"`
	GID        uint32 `json:"gid"`
	Hostname   string `json:"hostname,omitempty"`
	TmpfsBytes int64  `json:"tmpfs_bytes,omitempty"`
}

// Skeleton is the skeleton of c's root: what a warm init that serves c
// must have built. Preconditions: c builds a root (BuildRoot, Setup).
func (c *Config) Skeleton() Skeleton {
	return Skeleton{
		RootBase:      c.RootBase,
		MaskedPaths:   ProcPaths(c.Setup.MaskedPaths),
		ReadonlyPaths: ProcPaths(c.Setup.ReadonlyPaths),
		NetworkUp:     c.NetworkUp,
		Bounding:      c.Setup.Bounding,
		BuildAs:       c.BuildAs,
		UID:           c.Setup.UID,
		GID:           c.Setup.GID,
		Hostname:      c.Setup.Hostname,
		TmpfsBytes:    c.TmpfsBytes,
	}
}

// ID is a uid and gid.
type ID struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

// EgressRelay is the loopback listener the init runs for the egress proxy.
type EgressRelay struct {
	// Port is relayed byte for byte to Socket (the proxy speaks HTTP
	// CONNECT, plain HTTP and SOCKS5 there).
	Port   int    `json:"port"`
	Socket string `json:"socket"`
	// LocalhostPorts are also listened on at 127.0.0.1; each connection
	// is relayed to Socket after "CONNECT 127.0.0.1:PORT HTTP/1.1" got a
	// 2xx answer, so the proxy decides and records it like any other.
	LocalhostPorts []int `json:"localhost_ports,omitempty"`
}

// NewEgressRelay is the relay the init runs for a run's egress eg, to the
// proxy socket every backend mounts at isolation.SandboxSocket; nil when
// eg is nil (the run has no network).
func NewEgressRelay(eg *isolation.Egress) *EgressRelay {
	if eg == nil {
		return nil
	}
	return &EgressRelay{Port: eg.ProxyPort, Socket: isolation.SandboxSocket, LocalhostPorts: eg.LocalhostPorts}
}

// conn frames Messages over a Unix stream socket. Writes are serialised;
// a single goroutine must call recv.
type conn struct {
	c   *net.UnixConn
	wmu sync.Mutex

	buf []byte // received, unparsed bytes
	fds []int  // received, unclaimed descriptors in arrival order
}

func newConn(c *net.UnixConn) *conn { return &conn{c: c} }

// send writes m with fds attached. The descriptors stay owned by the caller.
func (c *conn) send(m *Message, fds ...int) error {
	if len(fds) > maxFDs {
		return fmt.Errorf("send %s: %d descriptors: %w", m.Type, len(fds), ErrProtocol)
	}
	m.NFDs = len(fds)
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s: %w", m.Type, err)
	}
	if len(body) > maxFrame {
		return fmt.Errorf("send %s: message of %d bytes too large: %w", m.Type, len(body), ErrProtocol)
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(body)))
	c.wmu.Lock()
	defer c.wmu.Unlock()
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	// The descriptors ride on the header; the body follows as plain data.
	n, _, err := c.c.WriteMsgUnix(hdr[:], oob, nil)
	if err == nil && n != len(hdr) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return fmt.Errorf("send %s: %w", m.Type, err)
	}
	if _, err := c.c.Write(body); err != nil {
		return fmt.Errorf("send %s: %w", m.Type, err)
	}
	return nil
}

// recv reads the next Message and the descriptors it announced. The caller
// owns the returned descriptors (close-on-exec is set).
func (c *conn) recv() (*Message, []int, error) {
	for {
		if len(c.buf) >= 4 {
			n := binary.BigEndian.Uint32(c.buf[:4])
			if n > maxFrame {
				return nil, nil, fmt.Errorf("receive: frame of %d bytes: %w", n, ErrProtocol)
			}
			if uint32(len(c.buf)-4) >= n {
				var m Message
				err := json.Unmarshal(c.buf[4:4+n], &m)
				c.buf = append(c.buf[:0], c.buf[4+n:]...)
				if err != nil {
					return nil, nil, fmt.Errorf("decode message: %v: %w", err, ErrProtocol)
				}
				if m.NFDs < 0 || m.NFDs > maxFDs || m.NFDs > len(c.fds) {
					return nil, nil, fmt.Errorf("receive %s: %d descriptors announced, %d received: %w", m.Type, m.NFDs, len(c.fds), ErrProtocol)
				}
				fds := append([]int(nil), c.fds[:m.NFDs]...)
				c.fds = c.fds[m.NFDs:]
				return &m, fds, nil
			}
		}
		if err := c.fill(); err != nil {
			return nil, nil, err
		}
	}
}

func (c *conn) fill() error {
	var data [64 << 10]byte
	oob := make([]byte, unix.CmsgSpace(maxFDs*4)*4)
	n, oobn, _, _, err := c.c.ReadMsgUnix(data[:], oob)
	if n < 0 {
		n = 0
	}
	if oobn > 0 {
		msgs, perr := unix.ParseSocketControlMessage(oob[:oobn])
		if perr == nil {
			for _, cm := range msgs {
				fds, ferr := unix.ParseUnixRights(&cm)
				if ferr == nil {
					c.fds = append(c.fds, fds...)
				}
			}
		}
	}
	c.buf = append(c.buf, data[:n]...)
	if n == 0 && err == nil {
		err = io.EOF
	}
	if err != nil && n == 0 {
		return err
	}
	return nil
}

// dropFDs closes every descriptor received but not claimed. Only the
// receiving goroutine may call it.
func (c *conn) dropFDs() {
	for _, fd := range c.fds {
		unix.Close(fd)
	}
	c.fds = nil
}

// warmDecoder decodes once a frame that holds every struct type the host
// sends (config, exec), so that encoding/json has built its per-type
// tables before the real frames come: in a fresh process the first
// config frame decodes in twice the time of the next (the prepare frame
// built only the tables of its own types). A warm init calls it while it
// waits for its config.
func warmDecoder() {
	sample := &Message{Type: MsgConfig,
		Config: &Config{
			Setup: &Setup{Groups: []uint32{0}, Rlimits: []Rlimit{{}}, Mounts: []Mount{{}}, Seccomp: []byte{0},
				MaskedPaths: []string{""}, ReadonlyPaths: []string{""}},
			Landlock: &Landlock{Paths: []LandlockPath{{}}, ConnectTCP: []int{0}},
			Egress:   &EgressRelay{LocalhostPorts: []int{0}},
			BuildAs:  &ID{},
			Filter:   []byte{0},
			Watch:    []byte{0},
		},
		Exec: &ExecReq{Args: []string{""}, Env: []string{""}},
	}
	b, err := json.Marshal(sample)
	if err != nil {
		return
	}
	var m Message
	_ = json.Unmarshal(b, &m)
}

// SpareThreads is how many idle threads the init keeps for its Go runtime
// (isolation.InitSpareThreads, which the planner adds to the spec's pids
// limit).
const SpareThreads = isolation.InitSpareThreads
