package relay

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"
)

// relayDialTimeout bounds connecting to the proxy socket and waiting for
// its answer to a localhost preamble (the proxy's own dial included).
const relayDialTimeout = 30 * time.Second

// Config configures the in-sandbox half of the bridge.
type Config struct {
	// SocketPath is the proxy socket as the sandbox sees it
	// (isolation.SandboxSocket).
	SocketPath string
	// ProxyPort is the loopback port the tool's *_PROXY variables name
	// (Egress.ProxyPort); 0 picks a free port (see Relay.ProxyAddr).
	ProxyPort int
	// LocalhostPorts are the network:localhost ports; each is listened on
	// at the same port, or at a free one with LocalhostFreePorts.
	LocalhostPorts []int
	// LocalhostFreePorts listens for each localhost port at a free port
	// (LocalhostListenPort says which): the landlock tier's relay is on
	// the host's own loopback, where the port is the service's.
	LocalhostFreePorts bool

	// ListenIP is the loopback address to listen on; zero means
	// 127.0.0.1, which is what a sandbox always uses. Tests of the whole
	// bridge set a second loopback address so the relay and the host side
	// can share one network namespace.
	ListenIP netip.Addr

	// Admit, when set, decides whether a connection accepted from
	// remote is relayed; one it refuses is closed unread. The landlock
	// tier's relay listens on the host's own loopback, where any process
	// may connect, and admits only the connections its init made.
	Admit func(remote netip.AddrPort) bool
}

// Relay is the in-sandbox half of the egress bridge: loopback listeners
// whose connections it copies to the proxy socket. It makes no decisions;
// the proxy does. Listening (Listen) needs CAP_NET_BIND_SERVICE for
// ports below 1024; serving needs only the right to connect to the socket,
// so the init can drop privileges in between.
type Relay struct {
	cfg     Config
	proxyLn net.Listener
	localLn map[int]net.Listener

	wg        sync.WaitGroup
	mu        sync.Mutex
	closed    bool
	conns     map[net.Conn]struct{}
	serveOnce sync.Once
	closeOnce sync.Once
	stop      func() bool
}

// Listen opens the relay's listeners on 127.0.0.1: ProxyPort and
// every localhost port. It does not serve; call Serve. On error nothing is
// left open. The caller must Close the Relay.
func Listen(cfg Config) (_ *Relay, retErr error) {
	if !cfg.ListenIP.IsValid() {
		cfg.ListenIP = netip.MustParseAddr("127.0.0.1")
	}
	if cfg.SocketPath == "" {
		return nil, fmt.Errorf("listen egress relay: empty socket path")
	}
	if cfg.ProxyPort < 0 || cfg.ProxyPort > 65535 {
		return nil, fmt.Errorf("listen egress relay: proxy port %d: %w", cfg.ProxyPort, ErrBadPort)
	}
	r := &Relay{cfg: cfg, localLn: map[int]net.Listener{}, conns: map[net.Conn]struct{}{}, stop: func() bool { return false }}
	defer func() {
		if retErr != nil {
			r.closeListeners()
		}
	}()
	// Plain TCP: Go asks for Multipath TCP by default on listeners, and
	// the sandbox's Landlock and seccomp rules speak of TCP only.
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	listen := func(port int) (net.Listener, error) {
		addr := netip.AddrPortFrom(cfg.ListenIP, uint16(port)).String()
		ln, err := lc.Listen(context.Background(), "tcp4", addr)
		if err != nil {
			return nil, fmt.Errorf("listen egress relay on %s: %w", addr, err)
		}
		return ln, nil
	}
	var err error
	if r.proxyLn, err = listen(cfg.ProxyPort); err != nil {
		return nil, err
	}
	for _, port := range cfg.LocalhostPorts {
		if port < 1 || port > 65535 {
			return nil, fmt.Errorf("listen egress relay: localhost port %d: %w", port, ErrBadPort)
		}
		if _, dup := r.localLn[port]; dup {
			continue
		}
		at := port
		if cfg.LocalhostFreePorts {
			at = 0
		} else if port == r.ProxyPort() {
			return nil, fmt.Errorf("listen egress relay: localhost port %d is also the proxy port", port)
		}
		ln, err := listen(at)
		if err != nil {
			return nil, err
		}
		r.localLn[port] = ln
	}
	return r, nil
}

// ProxyAddr is the address of the proxy listener ("127.0.0.1:PORT").
func (r *Relay) ProxyAddr() string { return r.proxyLn.Addr().String() }

// ProxyPort is the port of the proxy listener.
func (r *Relay) ProxyPort() int { return r.proxyLn.Addr().(*net.TCPAddr).Port }

// LocalhostListenPort is the port the relay listens on for the localhost
// port port, 0 when it has none.
func (r *Relay) LocalhostListenPort(port int) int {
	ln, ok := r.localLn[port]
	if !ok {
		return 0
	}
	return ln.Addr().(*net.TCPAddr).Port
}

// Serve starts relaying in the background and returns at once. When ctx is
// done the relay shuts down as if closed; Close must still be called.
// Serving twice is a no-op.
func (r *Relay) Serve(ctx context.Context) {
	r.serveOnce.Do(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.closed {
			return
		}
		r.stop = context.AfterFunc(ctx, r.shutdown)
		r.wg.Add(1)
		go r.acceptLoop(r.proxyLn, 0)
		for port, ln := range r.localLn {
			r.wg.Add(1)
			go r.acceptLoop(ln, port)
		}
	})
}

// Close stops the listeners, closes every relayed connection and waits for
// every goroutine. It is idempotent.
func (r *Relay) Close() error {
	r.closeOnce.Do(func() {
		r.shutdown()
		r.wg.Wait()
		r.mu.Lock()
		stop := r.stop
		r.mu.Unlock()
		stop()
	})
	return nil
}

// Serve listens and serves in one step, for an init that keeps its
// privileges or uses ports above 1023. stop closes the relay and waits.
func Serve(ctx context.Context, proxyPort int, localhostPorts []int, socketPath string) (stop func(), err error) {
	r, err := Listen(Config{SocketPath: socketPath, ProxyPort: proxyPort, LocalhostPorts: localhostPorts})
	if err != nil {
		return nil, err
	}
	r.Serve(ctx)
	return func() { _ = r.Close() }, nil
}

func (r *Relay) closeListeners() {
	if r.proxyLn != nil {
		r.proxyLn.Close()
	}
	for _, ln := range r.localLn {
		ln.Close()
	}
}

func (r *Relay) shutdown() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	conns := r.conns
	r.conns = nil
	r.mu.Unlock()
	r.closeListeners()
	for c := range conns {
		c.Close()
	}
}

func (r *Relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *Relay) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	c.Close()
}

// acceptLoop serves one listener; localPort 0 is the proxy listener.
func (r *Relay) acceptLoop(ln net.Listener, localPort int) {
	defer r.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		c, err := ln.Accept()
		if err != nil {
			r.mu.Lock()
			closed := r.closed
			r.mu.Unlock()
			if closed {
				return
			}
			time.Sleep(backoff)
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		if r.cfg.Admit != nil && !r.cfg.Admit(remoteAddrPort(c)) {
			c.Close()
			continue
		}
		if !r.track(c) {
			c.Close()
			return
		}
		r.wg.Add(1)
		go r.relay(c, localPort)
	}
}

// relay copies one accepted connection to a new proxy connection, after
// the localhost preamble when localPort is set.
func (r *Relay) relay(c net.Conn, localPort int) {
	defer r.wg.Done()
	defer r.untrack(c)
	d := net.Dialer{Timeout: relayDialTimeout}
	u, err := d.Dial("unix", r.cfg.SocketPath)
	if err != nil {
		return
	}
	if !r.track(u) {
		u.Close()
		return
	}
	defer r.untrack(u)
	if localPort != 0 {
		_ = u.SetDeadline(time.Now().Add(relayDialTimeout))
		hdr := Preamble(localPort)
		if _, err := u.Write(hdr[:]); err != nil {
			return
		}
		var ans [1]byte
		if _, err := u.Read(ans[:]); err != nil || ans[0] != LocalOK {
			return
		}
		_ = u.SetDeadline(time.Time{})
	}
	Splice(c, c, u, u, 0, &r.wg)
}

// remoteAddrPort is the peer of an accepted TCP connection (IPv4 unmapped),
// the zero value for anything else.
func remoteAddrPort(c net.Conn) netip.AddrPort {
	a, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return netip.AddrPort{}
	}
	ap := a.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
