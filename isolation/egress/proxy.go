package egress

import (
	"bufio"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
	"github.com/sandboxed-dev/sandboxed/isolation/egress/relay"
)

// Defaults for the zero values of Config.
const (
	DefaultDialTimeout      = 10 * time.Second
	DefaultIdleTimeout      = 5 * time.Minute
	DefaultHandshakeTimeout = 30 * time.Second
	DefaultMaxConns         = 1024
	DefaultMaxRecords       = 10000
	DefaultSocketMode       = os.FileMode(0o666)
)

// maxSocketPath is the longest path a Unix socket address can hold.
const maxSocketPath = 107

// Config configures one run's proxy.
type Config struct {
	// SocketPath is where the proxy listens. It must not exist, and it must
	// lie in a private directory (mode 0700, such as Plan.HostDir): the
	// socket itself is made SocketMode so that the sandbox's user can
	// connect to it once it is bind-mounted, and only the directory keeps
	// other host users out.
	SocketPath string
	// SocketMode is the socket file's mode; 0 means DefaultSocketMode.
	SocketMode os.FileMode
	// Rules decide what the proxy admits.
	Rules Rules
	// Resolver resolves host names; nil means net.DefaultResolver. Only
	// tests and an operator-only test switch set it (see HostsResolver).
	Resolver Resolver
	// DialTimeout bounds each name lookup and each connection attempt.
	DialTimeout time.Duration
	// IdleTimeout closes a connection after this long without progress in
	// either direction.
	IdleTimeout time.Duration
	// HandshakeTimeout bounds the time a client takes to say where it wants
	// to go (request head, SOCKS5 greeting, localhost preamble).
	HandshakeTimeout time.Duration
	// MaxConns is the most client connections served at once; more are
	// closed at once and recorded as denied.
	MaxConns int
	// MaxRecords caps the records kept; later attempts are only counted
	// (Proxy.Dropped).
	MaxRecords int

	// Credentials are put into requests to their hosts in place of their
	// stand-ins; a stand-in on its way anywhere else is refused.
	Credentials []Credential
	// HTTPRules narrow the methods and paths of requests to their hosts.
	HTTPRules []HTTPRule
	// CA signs the certificates the proxy shows the sandbox for the hosts
	// of Credentials and HTTPRules, whose TLS it terminates to read the
	// requests. Start refuses credentials or rules without it.
	CA *CA
	// UpstreamRoots verify the certificates of those hosts' servers; nil
	// means the host's system roots.
	UpstreamRoots *x509.CertPool

	// Quotas cap the requests and bytes of hosts (quota.go); a request or
	// tunnel over a cap is refused with HTTP 429 (verdict QuotaExceeded).
	Quotas []Quota
	// QuotaDir keeps the counts of quotas with a window across runs
	// (private to the user: made 0700, files 0600).
	QuotaDir string

	// allowAddrs are addresses the address checks let through. Tests only:
	// it is unexported so that no caller outside the package can set it.
	allowAddrs []netip.Addr
}

func (c *Config) setDefaults() {
	if c.SocketMode == 0 {
		c.SocketMode = DefaultSocketMode
	}
	if c.Resolver == nil {
		c.Resolver = net.DefaultResolver
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.MaxRecords <= 0 {
		c.MaxRecords = DefaultMaxRecords
	}
}

// Proxy is one run's egress proxy. It serves HTTP CONNECT, plain HTTP
// forwarding, SOCKS5 and localhost forwarding on one Unix socket, telling
// them apart by the first byte of each connection. The caller must Close
// it.
type Proxy struct {
	cfg    Config
	ln     *net.UnixListener
	ctx    context.Context // cancelled on shutdown; bounds lookups and dials
	cancel context.CancelFunc
	stop   func() bool // unregisters the parent-context hook
	wg     sync.WaitGroup
	active atomic.Int64

	mu      sync.Mutex
	closed  bool
	conns   map[net.Conn]struct{} // every live client and upstream connection
	records []Record
	dropped int

	quotas quotas

	closeOnce sync.Once
	closeErr  error
}

// Start listens on cfg.SocketPath and serves until Close (or until ctx is
// done, which stops serving; Close must still be called to wait for the
// goroutines and remove the socket). On error nothing is left behind.
func Start(ctx context.Context, cfg Config) (*Proxy, error) {
	cfg.setDefaults()
	if cfg.SocketPath == "" {
		return nil, fmt.Errorf("start egress proxy: empty socket path")
	}
	if len(cfg.SocketPath) > maxSocketPath {
		return nil, fmt.Errorf("start egress proxy: socket path %s is longer than %d bytes; use a shorter state directory",
			cfg.SocketPath, maxSocketPath)
	}
	if err := cfg.Rules.Check(); err != nil {
		return nil, fmt.Errorf("start egress proxy: %w", err)
	}
	if err := checkInspection(&cfg); err != nil {
		return nil, fmt.Errorf("start egress proxy: %w", err)
	}
	cfg.Quotas = append([]Quota(nil), cfg.Quotas...)
	if err := checkQuotas(&cfg); err != nil {
		return nil, fmt.Errorf("start egress proxy: %w", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: cfg.SocketPath, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("start egress proxy: listen on %s: %w", cfg.SocketPath, err)
	}
	if err := os.Chmod(cfg.SocketPath, cfg.SocketMode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("start egress proxy: chmod %s: %w", cfg.SocketPath, err)
	}
	p := &Proxy{cfg: cfg, ln: ln, conns: map[net.Conn]struct{}{}}
	p.quotas = quotas{list: cfg.Quotas, dir: cfg.QuotaDir, run: make([]quotaEvent, len(cfg.Quotas))}
	p.ctx, p.cancel = context.WithCancel(context.WithoutCancel(ctx))
	p.stop = context.AfterFunc(ctx, p.shutdown)
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// SocketPath is the path the proxy listens on.
func (p *Proxy) SocketPath() string { return p.cfg.SocketPath }

// Close stops the proxy: it closes the listener and every live connection,
// waits for every goroutine to end and removes the socket file. It is
// idempotent.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.shutdown()
		p.wg.Wait()
		p.stop()
		if err := os.Remove(p.cfg.SocketPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			p.closeErr = fmt.Errorf("close egress proxy: remove %s: %w", p.cfg.SocketPath, err)
		}
	})
	return p.closeErr
}

// shutdown stops accepting and closes every live connection. It does not
// wait.
func (p *Proxy) shutdown() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	p.cancel()
	p.ln.Close()
	for c := range conns {
		c.Close()
	}
}

// track registers a live connection so shutdown can close it. It reports
// false (and the caller must close c) when the proxy is shutting down.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if p.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: wait and retry.
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		if !p.track(c) {
			c.Close()
			return
		}
		if p.active.Add(1) > int64(p.cfg.MaxConns) {
			p.active.Add(-1)
			p.untrack(c)
			p.addRecord(Record{Verdict: Deny, Start: time.Now(),
				Reason: fmt.Sprintf("too many concurrent connections (limit %d)", p.cfg.MaxConns)})
			continue
		}
		p.wg.Add(1)
		go p.handle(c)
	}
}

const socksVersion = 0x05

func (p *Proxy) handle(raw net.Conn) {
	defer p.wg.Done()
	defer p.active.Add(-1)
	defer p.untrack(raw)
	c := newDeadlineConn(raw, p.cfg.IdleTimeout)
	c.setHandshakeDeadline(time.Now().Add(p.cfg.HandshakeTimeout))
	br := bufio.NewReader(c)
	first, err := br.Peek(1)
	if err != nil {
		return // closed before saying anything: not an attempt
	}
	switch first[0] {
	case socksVersion:
		p.serveSOCKS(c, br)
	case relay.PreambleMagic:
		p.serveLocalhost(c, br)
	default:
		p.serveHTTP(c, br)
	}
}

// failKind classifies why connect did not produce a connection.
type failKind int

const (
	failDenied  failKind = iota // rules or address checks
	failResolve                 // the name did not resolve
	failDial                    // no address accepted the connection
)

type connectError struct {
	kind failKind
	msg  string
	err  error // underlying error for failResolve and failDial
}

func (e *connectError) Error() string { return e.msg }

// connect decides on t:port, resolves, checks every address and dials the
// checked addresses, filling in rec as it goes. On success the returned
// connection is tracked and counts its bytes; the caller must untrack it.
func (p *Proxy) connect(t target, port int, rec *Record) (*countConn, *connectError) {
	rec.Host, rec.Port = t.String(), port
	deny := func(why string) (*countConn, *connectError) {
		rec.Verdict, rec.Reason = Deny, why
		return nil, &connectError{kind: failDenied, msg: why}
	}
	// Targets no grant can allow are refused first, with that reason.
	v, reason := p.cfg.Rules.admit(t, port, p.testAllowed)
	if v == Deny {
		return deny(reason)
	}
	rec.Verdict, rec.Reason = v, reason

	var addrs []netip.Addr
	if t.IsIP() {
		addrs = []netip.Addr{t.IP}
	} else {
		ctx, cancel := context.WithTimeout(p.ctx, p.cfg.DialTimeout)
		ips, err := p.cfg.Resolver.LookupIPAddr(ctx, t.Name)
		cancel()
		if err == nil && len(ips) == 0 {
			err = fmt.Errorf("no addresses")
		}
		if err != nil {
			rec.Error = fmt.Sprintf("resolve %s: %v", t.Name, err)
			return nil, &connectError{kind: failResolve, msg: rec.Error, err: err}
		}
		seen := map[netip.Addr]bool{}
		for _, ip := range ips {
			a, ok := netip.AddrFromSlice(ip.IP)
			if !ok {
				continue
			}
			a = a.Unmap()
			if !seen[a] {
				seen[a] = true
				addrs = append(addrs, a)
			}
		}
	}
	// Every address must pass: one refused address refuses the name.
	for _, a := range addrs {
		if p.testAllowed(a) {
			continue
		}
		if c := netrule.ClassifyAddr(a); c.Refused() {
			return deny(refusedAddrReason(t.String(), a, c))
		}
		if r, ok := p.cfg.Rules.deniedAddr(a, port); ok {
			return deny(fmt.Sprintf("%s resolves to %s, which is denied by the operator's policy (deny %s); no permission can allow it",
				t.String(), a, r.String()))
		}
	}

	var lastErr error
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a, uint16(port))
		d := net.Dialer{Timeout: p.cfg.DialTimeout}
		raw, err := d.DialContext(p.ctx, "tcp", ap.String())
		if err != nil {
			lastErr = err
			continue
		}
		if !p.track(raw) {
			raw.Close()
			lastErr = ErrClosed
			break
		}
		rec.Addr = ap.String()
		return &countConn{Conn: newDeadlineConn(raw, p.cfg.IdleTimeout)}, nil
	}
	rec.Error = fmt.Sprintf("connect to %s:%d: %v", t.String(), port, lastErr)
	return nil, &connectError{kind: failDial, msg: rec.Error, err: lastErr}
}

// release closes an upstream connection returned by connect and copies its
// byte counts into rec.
func (p *Proxy) release(up *countConn, rec *Record) {
	if up == nil {
		return
	}
	rec.BytesUp, rec.BytesDown = up.up.Load(), up.down.Load()
	p.addQuotaBytes(rec.Host, rec.BytesUp+rec.BytesDown)
	p.untrack(up.Conn.(*deadlineConn).Conn)
}

func (p *Proxy) testAllowed(a netip.Addr) bool {
	for _, x := range p.cfg.allowAddrs {
		if x == a {
			return true
		}
	}
	return false
}

// serveLocalhost handles a connection that starts with the localhost
// preamble.
func (p *Proxy) serveLocalhost(c *deadlineConn, br *bufio.Reader) {
	var hdr [relay.PreambleLen]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return
	}
	rec := Record{Protocol: ProtoLocalhost, Host: "127.0.0.1", Start: time.Now()}
	port, err := relay.ParsePreamble(hdr)
	if err != nil {
		rec.Verdict, rec.Reason = Deny, err.Error()
		p.addRecord(rec)
		return
	}
	rec.Port = port
	if !p.cfg.Rules.localhostAllowed(port) {
		rec.Verdict = Deny
		rec.Reason = fmt.Sprintf("no permission grants the host's 127.0.0.1:%d; the permission that would allow it is network:localhost:%d", port, port)
		_, _ = c.Write([]byte{relay.LocalNotGrant})
		p.addRecord(rec)
		return
	}
	rec.Verdict, rec.Reason = Allow, "granted by network:localhost:"+strconv.Itoa(port)
	d := net.Dialer{Timeout: p.cfg.DialTimeout}
	raw, err := d.DialContext(p.ctx, "tcp4", "127.0.0.1:"+strconv.Itoa(port))
	if err == nil && !p.track(raw) {
		raw.Close()
		err = ErrClosed
	}
	if err != nil {
		rec.Error = fmt.Sprintf("connect to 127.0.0.1:%d: %v", port, err)
		_, _ = c.Write([]byte{relay.LocalDialError})
		p.addRecord(rec)
		return
	}
	rec.Addr = raw.RemoteAddr().String()
	up := &countConn{Conn: newDeadlineConn(raw, p.cfg.IdleTimeout)}
	defer func() { p.release(up, &rec); p.addRecord(rec) }()
	if _, err := c.Write([]byte{relay.LocalOK}); err != nil {
		return
	}
	c.setDeadlineMode(p.cfg.IdleTimeout)
	relay.Splice(c, br, up, up, p.cfg.IdleTimeout, &p.wg)
}
