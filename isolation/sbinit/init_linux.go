package sbinit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/isolation/egress/relay"
)

// IsInit reports whether this process was started as a sandbox init. A
// binary that may be re-executed as init calls it first thing in main and
// then Main.
func IsInit() bool {
	return len(os.Args) > 1 && os.Args[1] == InitArg
}

// Main runs the init and never returns. Preconditions: IsInit() is true.
func Main() {
	// Every credential change and every fork happens on this thread, so
	// commands inherit exactly the dropped credentials even where a
	// change is per-thread (capabilities, bounding set).
	runtime.LockOSThread()
	// Named for ps and top whatever path it was executed from (a memory
	// file's is /proc/PID/fd/N).
	_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&initComm[0])), 0, 0, 0)
	os.Exit(runInit(os.Args[2:]))
}

var initComm = []byte("sandboxed-init\x00")

// initState is the init's view of its commands.
type initState struct {
	c    *conn
	pid1 bool

	mu     sync.Mutex     // held from before a fork until its pid is registered
	byPid  map[int]uint64 // running command pid -> id
	pgids  map[uint64]int // command id -> process group
	forked chan struct{}  // wakes the reaper when it had no child
	setsid bool
	cwd    string // default working directory (the spec's)
	// landlock: the init and its commands are under a Landlock ruleset.
	landlock bool
	// nproc bounds the commands' tasks (Config.NprocLimit; 0: no bound).
	nproc int64
	// confine is the descriptor of the commands' Confine (confineFile),
	// -1 without one.
	confine int
	// tree: signal every descendant, not only the started groups
	// (Config.KillTree).
	tree bool
	// spares makes the init's spare threads before its first command.
	spares sync.Once
	// spare starts the first confined command (spare_linux.go), nil
	// when there is none; confined is the Confine it is handed.
	spare    *spare
	confined *Confine
}

type spawnRequest struct {
	id  uint64
	req *ExecReq
	fds []int
}

// runInit is the init's main: a helper mode when args name one
// (helperMode), else the init of a sandbox, which reads its config over the
// control socket, sets the sandbox up, reports ready and serves the host's
// requests until the socket closes.
func runInit(args []string) int {
	if run := helperMode(args); run != nil {
		return run()
	}
	// Nothing of the init may be read or written through /proc/1 by the
	// commands it runs, whichever tier (the process tier drops privileges
	// later and says so again).
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	sock, err := controlSocket(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandboxed init:", err)
		return 1
	}
	// Descriptors the init inherited (from whatever started sandboxed) must
	// not reach a command: an open directory of the host is a way out of
	// the new root. The control socket is already a close-on-exec dup.
	MarkInheritedCloseOnExec()
	st := &initState{
		c:       newConn(sock),
		pid1:    os.Getpid() == 1,
		byPid:   make(map[int]uint64),
		pgids:   make(map[uint64]int),
		forked:  make(chan struct{}, 1),
		confine: -1,
	}
	// Signals are caught before the first frame, so that a SIGTERM during
	// setup is not lost, and so that a warm init has paid for it before a
	// run claims it: the first Notify starts the runtime's signal thread
	// and waits for it, which costs a third of a millisecond of thread
	// hand-offs.
	sigs := make(chan os.Signal, 32)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP)
	cfg, fds, sk, ok := st.receiveConfig()
	if !ok {
		return 1
	}
	landlockABI, listener, err := st.configure(cfg, fds, sk)
	if err != nil {
		_ = st.c.send(&Message{Type: MsgError, Error: err.Error()})
		return 1
	}
	err = st.c.send(&Message{Type: MsgReady, Pid: os.Getpid(), Landlock: landlockABI}, listener...)
	closeFDs(listener)
	if err != nil {
		return 1
	}
	// While the host reads the ready frame and sends the first command:
	// made before, the spares would be stopped by each all-thread system
	// call of the setup (Landlock, the gid, the uid).
	st.spares.Do(spareThreads)
	go st.signals(sigs)
	go st.reaper()
	// The request loop runs on the locked main thread, which forks every
	// command itself: no hand-off to another thread per exec.
	st.readLoop()
	return 0
}

// helperMode is the main of the helper the init binary is run as when
// args name one (nproc, confine, spawner, reown, bridge); nil for the
// init itself.
func helperMode(args []string) func() int {
	if len(args) > 0 {
		switch {
		case strings.HasPrefix(args[0], nprocFlag):
			return func() int { return runNproc(args) }
		case args[0] == confineFlag:
			return func() int { return runConfine(args) }
		case args[0] == spareFlag:
			return runSpare
		case args[0] == spawnerFlag:
			return runSpawner
		case args[0] == ReownFlag:
			return runReown
		}
	}
	for _, a := range args {
		if path, ok := strings.CutPrefix(a, bridgeFlag); ok {
			return func() int {
				_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
				return runBridge(path)
			}
		}
	}
	return nil
}

// receiveConfig reads the init's config and the descriptors sent with it.
// The process tier sends the skeleton of the root first, which is built
// at once (sk) and answered; the config follows, at once or, for a warm
// init, when a run claims it. It reports a failure itself: false means
// exit.
func (st *initState) receiveConfig() (*Config, []int, *rootSkeleton, bool) {
	m, fds, err := st.c.recv()
	if err == nil && m.Type == MsgSpare {
		// A warm init of the landlock tier: the spare starts while it
		// waits for its config (none: the commands start as before).
		closeFDs(fds)
		st.spare, _ = startSpare()
		m, fds, err = st.c.recv()
	}
	var sk *rootSkeleton
	if err == nil && m.Type == MsgPrepare && m.Skeleton != nil {
		closeFDs(fds)
		if sk, err = prepareSkeleton(m.Skeleton); err != nil {
			_ = st.c.send(&Message{Type: MsgError, Error: err.Error()})
			return nil, nil, nil, false
		}
		if err := st.c.send(&Message{Type: MsgPrepared}); err != nil {
			return nil, nil, nil, false
		}
		if len(st.c.buf) == 0 {
			// No config yet (a warm init, which waits for a claim):
			// what it can do now it need not do on the claim.
			warmDecoder()
		}
		m, fds, err = st.c.recv()
	}
	if err != nil || m.Type != MsgConfig || m.Config == nil {
		fmt.Fprintln(os.Stderr, "sandboxed init: expected config frame:", err)
		return nil, nil, nil, false
	}
	return m.Config, fds, sk, true
}

// configure sets the sandbox up from cfg and the descriptors sent with it
// (fds, which it closes): the init's own state, the root (on sk, when the
// process tier sent a skeleton), the commands' confinement, the
// supervised connect (Config.Connect) and, last, the watch, whose
// listener it returns for the ready frame. It returns the
// Landlock ABI the setup applied, 0 for none.
func (st *initState) configure(cfg *Config, fds []int, sk *rootSkeleton) (int, []int, error) {
	st.setsid = cfg.NewSession
	st.nproc = cfg.NprocLimit
	st.tree = cfg.KillTree && !st.pid1
	if c := cfg.Confine; c != nil {
		if !cfg.NewSession || !cfg.KillTree || cfg.BuildRoot {
			closeFDs(fds)
			return 0, nil, errors.New("a confined config needs new sessions, the tree kill and no root of its own")
		}
		var err error
		if st.confine, err = confineFile(c); err != nil {
			closeFDs(fds)
			return 0, nil, err
		}
	}
	if spareFits(cfg) {
		st.confined = cfg.Confine
		if st.spare == nil {
			// Forked before the rest of the setup, which adds nothing
			// a command inherits (spareFits): its start overlaps the
			// host's until the first command.
			st.spare, _ = startSpare()
		}
	} else if st.spare != nil {
		st.spare.kill()
		st.spare = nil
	}
	if s := cfg.Setup; s != nil {
		st.cwd = s.Cwd
	}
	if !st.pid1 {
		// Outside a pid namespace, orphans of the commands still come
		// to the init to be reaped.
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	}
	landlockABI, err := setup(cfg, fds, sk)
	closeFDs(fds)
	if err != nil {
		return 0, nil, err
	}
	st.landlock = landlockABI > 0
	if c := cfg.Connect; c != nil {
		// Last, as the watch: from here on the commands' connect()
		// calls wait for the supervisor.
		if len(cfg.Watch) > 0 || st.confine < 0 {
			return 0, nil, fmt.Errorf("supervised connect needs confined commands and no watch: %w", ErrSetup)
		}
		st.spares.Do(spareThreads)
		if err := startConnect(c, cfg.Confine); err != nil {
			return 0, nil, err
		}
	}
	if len(cfg.Watch) == 0 {
		return landlockABI, nil, nil
	}
	// The watch may hold the runtime's clones: the spares first.
	st.spares.Do(spareThreads)
	// Last: from here on the watched syscalls of this thread, and of every
	// command it forks, wait for the host's answer.
	fd, err := loadWatch(cfg.Watch)
	if err != nil {
		return 0, nil, err
	}
	return landlockABI, []int{fd}, nil
}

func controlSocket(args []string) (*net.UnixConn, error) {
	for _, a := range args {
		if a == streamArg {
			return streamSocket()
		}
		if path, ok := strings.CutPrefix(a, connectFlag); ok {
			c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
			if err != nil {
				return nil, fmt.Errorf("connect control socket %s: %w", path, err)
			}
			return c, nil
		}
	}
	f := os.NewFile(ControlFD, "control")
	if f == nil {
		return nil, fmt.Errorf("open control socket: no fd %d", ControlFD)
	}
	fc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("open control socket on fd %d: %w", ControlFD, err)
	}
	uc, ok := fc.(*net.UnixConn)
	if !ok {
		fc.Close()
		return nil, fmt.Errorf("open control socket on fd %d: not a unix socket", ControlFD)
	}
	return uc, nil
}

// setup applies cfg in the order the kernel requires: mounts need
// privilege, so the root is built first and privileges dropped last;
// Landlock comes once every listener is bound and before the privileges
// to open any path go. trees are the descriptors of the config frame
// (Mount.Tree). sk is the skeleton the init built (MsgPrepare), which a
// config that builds a root needs and must ask for exactly. It returns the
// Landlock ABI it enforced.
func setup(cfg *Config, trees []int, sk *rootSkeleton) (int, error) {
	s := cfg.Setup
	if s == nil && (cfg.BuildRoot || cfg.DropPrivileges) {
		return 0, fmt.Errorf("config asks to build a root or drop privileges but has no setup")
	}
	if cfg.BuildRoot && sk == nil {
		return 0, fmt.Errorf("config asks to build a root, and no prepare frame came first: %w", ErrProtocol)
	}
	if sk != nil && (!cfg.BuildRoot || !sameSkeleton(cfg.Skeleton(), sk.asked)) {
		sk.close()
		return 0, fmt.Errorf("config of run %s does not ask for the root this sandbox prepared: %w", cfg.RunID, ErrSetup)
	}
	if cfg.Landlock != nil && !cfg.BuildRoot {
		// Its paths are those of the root the init builds.
		return 0, fmt.Errorf("config asks for Landlock without building the root")
	}
	var llBase *landlockBase
	if sk != nil {
		llBase, sk.landlock = sk.landlock, nil
		defer llBase.close()
	}
	if cfg.BuildRoot {
		if err := buildRoot(cfg, s, trees, sk); err != nil {
			return 0, err
		}
		host := s.Hostname
		if host == "" {
			host = "sandbox"
		}
		if err := unix.Sethostname([]byte(host)); err != nil {
			return 0, fmt.Errorf("set hostname: %w", err)
		}
	}
	if cfg.NetworkUp && !cfg.BuildRoot {
		// (With a root, the skeleton brought it up.)
		if err := loopbackUp(); err != nil {
			return 0, err
		}
	}
	if cfg.Egress != nil {
		if err := startEgressRelay(cfg.Egress); err != nil {
			return 0, err
		}
	}
	abi := 0
	if cfg.Landlock != nil {
		var err error
		if abi, err = applyLandlock(cfg.Landlock, llBase, s); err != nil {
			return 0, err
		}
	}
	if cfg.BuildAs != nil && !cfg.BuildRoot {
		if err := become(cfg.BuildAs); err != nil {
			return 0, err
		}
	}
	if cfg.DropPrivileges {
		if err := dropPrivileges(s, cfg.KeepGroups, abi > 0); err != nil {
			return 0, err
		}
	} else if abi > 0 {
		// A Landlock ruleset is in force: no_new_privs with it, as it
		// would be where the privileges are dropped.
		if err := allThreads(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0); err != nil {
			return 0, fmt.Errorf("set no_new_privs: %w", err)
		}
	}
	if !cfg.DropPrivileges && len(cfg.Filter) > 0 {
		if err := loadFilter(cfg.Filter); err != nil {
			return 0, err
		}
	}
	return abi, nil
}

// sameSkeleton reports whether a and b are the same skeleton.
func sameSkeleton(a, b Skeleton) bool {
	sameID := a.BuildAs == b.BuildAs || (a.BuildAs != nil && b.BuildAs != nil && *a.BuildAs == *b.BuildAs)
	return a.RootBase == b.RootBase && a.NetworkUp == b.NetworkUp && a.Bounding == b.Bounding && sameID &&
		slices.Equal(a.MaskedPaths, b.MaskedPaths) && slices.Equal(a.ReadonlyPaths, b.ReadonlyPaths) &&
		a.UID == b.UID && a.GID == b.GID && a.Hostname == b.Hostname && a.TmpfsBytes == b.TmpfsBytes
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bring up lo: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("bring up lo: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring up lo: read flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring up lo: set flags: %w", err)
	}
	return nil
}

// startEgressRelay opens the in-sandbox listeners of the egress bridge —
// 127.0.0.1:Port for the proxy and each granted localhost port — while the
// init still has its privileges, then serves them for the sandbox's life.
func startEgressRelay(e *EgressRelay) error {
	r, err := relay.Listen(relay.Config{SocketPath: e.Socket, ProxyPort: e.Port, LocalhostPorts: e.LocalhostPorts})
	if err != nil {
		return fmt.Errorf("start egress relay: %w", err)
	}
	r.Serve(context.Background())
	return nil
}

func (st *initState) readLoop() {
	for {
		m, fds, err := st.c.recv()
		if err != nil {
			break
		}
		switch m.Type {
		case MsgExec:
			if m.Exec == nil || len(m.Exec.Args) == 0 || len(fds) != 3 {
				closeFDs(fds)
				_ = st.c.send(&Message{Type: MsgExit, ID: m.ID, Code: 126, Error: "malformed exec request"})
				continue
			}
			st.start(spawnRequest{id: m.ID, req: m.Exec, fds: fds})
		case MsgSignal:
			closeFDs(fds)
			st.signal(m.ID, syscall.Signal(m.Signal))
		default:
			closeFDs(fds)
		}
	}
	// The host is gone or closed the channel: nothing may outlive it.
	if st.spare != nil {
		st.spare.kill()
		st.spare = nil
	}
	st.killAll(unix.SIGKILL)
	if st.tree {
		st.killTreeEmpty()
	}
	os.Exit(0)
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// signal sends sig to command id's process group, or to everything.
func (st *initState) signal(id uint64, sig syscall.Signal) {
	if sig <= 0 || sig > 64 {
		return
	}
	if id == 0 {
		st.killAll(sig)
		return
	}
	st.mu.Lock()
	pgid, ok := st.pgids[id]
	st.mu.Unlock()
	if ok {
		_ = unix.Kill(-pgid, sig)
	}
}

// killAll signals every process of the sandbox. As PID 1 of its pid
// namespace, kill(-1) reaches exactly the sandbox; otherwise (never in a
// real sandbox) only the process groups the init started.
func (st *initState) killAll(sig syscall.Signal) {
	if st.pid1 {
		_ = unix.Kill(-1, sig)
		return
	}
	if st.tree {
		signalTree(os.Getpid(), sig)
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, pgid := range st.pgids {
		_ = unix.Kill(-pgid, sig)
	}
}

func (st *initState) signals(sigs <-chan os.Signal) {
	for s := range sigs {
		st.killAll(s.(syscall.Signal))
	}
}

// reaper waits for every child of the init, commands and the orphans that
// reparent to it, and reports the commands' exits. A thread blocked in
// wait4 wakes straight on the exit, without the SIGCHLD round trip through
// the runtime's signal handling.
func (st *initState) reaper() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			// ECHILD: nothing to wait for until the next fork.
			<-st.forked
			continue
		}
		// start holds mu from before the fork until the pid is
		// registered, so a command is always found here.
		st.mu.Lock()
		id, ok := st.byPid[pid]
		delete(st.byPid, pid)
		st.mu.Unlock()
		if !ok {
			continue
		}
		m := &Message{Type: MsgExit, ID: id}
		switch {
		case ws.Exited():
			m.Code = ws.ExitStatus()
		case ws.Signaled():
			m.Signal = int(ws.Signal())
			m.Code = 128 + m.Signal
		}
		_ = st.c.send(m)
	}
}

// start forks and execs one command. It runs on the locked main thread,
// whose credentials every command inherits.
func (st *initState) start(r spawnRequest) {
	if st.landlock {
		ownDevNull(r.fds)
	}
	defer closeFDs(r.fds)
	fail := func(code int, msg string) {
		_, _ = unix.Write(r.fds[2], []byte("sandboxed: "+msg+"\n"))
		_ = st.c.send(&Message{Type: MsgExit, ID: r.id, Code: code, Error: msg})
	}
	cwd := r.req.Cwd
	if cwd == "" {
		cwd = st.cwd
	}
	if cwd == "" {
		cwd = "/"
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		fail(126, fmt.Sprintf("working directory %s: not a directory in the sandbox", cwd))
		return
	}
	path, code, err := lookPath(r.req.Args[0], r.req.Env, cwd)
	if err != nil {
		fail(code, err.Error())
		return
	}
	if sp := st.spare; sp != nil {
		st.spare = nil
		if st.startOnSpare(sp, r, path, cwd) {
			return
		}
	}
	argv := r.req.Args
	files := []uintptr{uintptr(r.fds[0]), uintptr(r.fds[1]), uintptr(r.fds[2])}
	if st.confine >= 0 {
		// The command confines itself, then executes path (confine.go).
		argv = confineArgs(path, argv)
		path = "/proc/self/exe"
		files = append(files, uintptr(st.confine))
	} else if st.nproc > 0 {
		// The command starts as the init binary, which sets the limit
		// on itself and executes path (nproc_linux.go).
		argv = nprocArgs(st.nproc+outsideTasks(), path, argv)
		path = "/proc/self/exe"
	}
	attr := &syscall.ProcAttr{
		Dir:   cwd,
		Env:   r.req.Env,
		Files: files,
		Sys:   &syscall.SysProcAttr{Setpgid: !st.setsid, Setsid: st.setsid},
	}
	st.mu.Lock()
	pid, err := syscall.ForkExec(path, argv, attr)
	if err == nil {
		st.byPid[pid] = r.id
		st.pgids[r.id] = pid
	}
	st.mu.Unlock()
	if err != nil {
		code := 126
		if err == syscall.ENOENT {
			code = 127
		}
		fail(code, fmt.Sprintf("exec %s: %v", r.req.Args[0], err))
		return
	}
	if st.confine < 0 && !st.pid1 {
		// Outside a cgroup of its own, as a confined command does for
		// itself (confineWith); it may have run briefly before.
		raiseOOMScore(strconv.Itoa(pid))
	}
	select {
	case st.forked <- struct{}{}:
	default:
	}
	_ = st.c.send(&Message{Type: MsgStarted, ID: r.id, Pid: pid})
}

// startOnSpare hands the command r (path, in cwd) to the spare sp and
// reports whether it started; when it did not (the spare is gone), the
// caller starts it as it would without a spare. Like start, it holds mu
// from before the hand-off until the pid is registered.
func (st *initState) startOnSpare(sp *spare, r spawnRequest, path, cwd string) bool {
	req := &spareReq{Confine: st.confined, Path: path, Args: r.req.Args, Env: r.req.Env, Cwd: cwd}
	st.mu.Lock()
	err := sp.hand(req, r.fds)
	if err == nil {
		st.byPid[sp.pid] = r.id
		st.pgids[r.id] = sp.pid
	}
	st.mu.Unlock()
	if err != nil {
		sp.kill()
		return false
	}
	sp.close()
	select {
	case st.forked <- struct{}{}:
	default:
	}
	_ = st.c.send(&Message{Type: MsgStarted, ID: r.id, Pid: sp.pid})
	return true
}

// ownDevNull replaces each of a command's stdio descriptors that is the
// host's /dev/null with the sandbox's own. Under Landlock a command may
// reopen its stdio through /dev/stdin (/proc/self/fd/0): a pipe it may,
// but not a device node outside the sandbox's tree. Where the sandbox's
// /dev/null cannot be opened the host's stays.
func ownDevNull(fds []int) {
	for i, fd := range fds {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != unix.Mkdev(1, 3) {
			continue
		}
		flags := unix.O_WRONLY
		if i == 0 {
			flags = unix.O_RDONLY
		}
		own, err := unix.Open("/dev/null", flags|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		unix.Close(fd)
		fds[i] = own
	}
}

// lookPath finds name like a shell would, with the command's own PATH.
func lookPath(name string, env []string, cwd string) (string, int, error) {
	check := func(p string) error {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return syscall.EACCES
		}
		return nil
	}
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		if err := check(p); err != nil {
			if os.IsNotExist(err) {
				return "", 127, fmt.Errorf("%s: command not found", name)
			}
			return "", 126, fmt.Errorf("%s: %v", name, err)
		}
		return p, 0, nil
	}
	pathEnv := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	denied := false
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		err := check(p)
		if err == nil {
			return p, 0, nil
		}
		if !os.IsNotExist(err) {
			denied = true
		}
	}
	if denied {
		return "", 126, fmt.Errorf("%s: permission denied", name)
	}
	return "", 127, fmt.Errorf("%s: command not found", name)
}

// MarkInheritedCloseOnExec sets close-on-exec on every descriptor from 3
// up, so descriptors this process inherited without it are not passed on
// to the processes it starts. Go opens its own descriptors close-on-exec,
// and descriptors meant for a child are passed explicitly (ExtraFiles,
// ProcAttr.Files), which clears the flag on the child's copy.
func MarkInheritedCloseOnExec() {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return
	}
	// Kernels before 5.11: walk /proc/self/fd.
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		var fd int
		if _, err := fmt.Sscan(e.Name(), &fd); err == nil && fd >= 3 {
			unix.CloseOnExec(fd)
		}
	}
}

// spareThreads leaves SpareThreads idle threads to the Go runtime
// before the first command runs. The runtime starts a thread whenever a
// goroutine blocks in a system call (the reaper in wait4) and no thread is
// idle; the init shares its cgroup's pids limit with the commands, and a
// fork bomb that takes the last pid would make that start fail, which
// kills the init ("failed to create new OS thread"), and the run as a
// sandbox failure. Threads the runtime once made are never given back:
// these are its own to reuse. Each goroutine locked to its thread and
// blocked holds one; unlocked, the threads go idle.
func spareThreads() {
	var held, freed sync.WaitGroup
	release := make(chan struct{})
	held.Add(SpareThreads)
	freed.Add(SpareThreads)
	for range SpareThreads {
		go func() {
			runtime.LockOSThread()
			held.Done()
			<-release
			runtime.UnlockOSThread()
			freed.Done()
		}()
	}
	held.Wait()
	close(release)
	// Until each is unlocked its thread is not idle: the runtime would
	// start another for a goroutine blocking in a system call.
	freed.Wait()
}
