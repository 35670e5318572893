package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
	"github.com/sandboxed-dev/sandboxed/isolation/egress/relay"
)

// hopByHop are the headers that describe one connection, not the message
// (RFC 9110 section 7.6.1); a proxy never forwards them. Proxy-Authorization
// is among them, so credentials meant for a proxy never reach an origin.
var hopByHop = []string{
	"Connection",
	"Proxy-Connection",
	"Keep-Alive",
	"Proxy-Authenticate",
	"Proxy-Authorization",
	"Te",
	"Trailer",
	"Transfer-Encoding",
	"Upgrade",
}

// stripHopByHop removes the hop-by-hop headers and the headers the
// Connection header names.
func stripHopByHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopByHop {
		h.Del(name)
	}
}

// forwardUpstream is the upstream connection of plain HTTP forwarding,
// reused for consecutive requests to the same host and port.
type forwardUpstream struct {
	key string
	up  *countConn
	br  *bufio.Reader
	bw  *bufio.Writer
	rec Record
}

func (p *Proxy) closeForward(f *forwardUpstream) {
	if f == nil {
		return
	}
	p.release(f.up, &f.rec)
	p.addRecord(f.rec)
}

// serveHTTP handles CONNECT and absolute-URI requests on one client
// connection until it closes, a CONNECT tunnel ends, or a request fails.
func (p *Proxy) serveHTTP(c *deadlineConn, br *bufio.Reader) {
	var fwd *forwardUpstream
	defer func() { p.closeForward(fwd) }()
	var cw *bufio.Writer // made on the first forwarded request
	for first := true; ; first = false {
		if !first {
			// Between requests: wait up to the idle timeout for the next.
			c.setDeadlineMode(p.cfg.IdleTimeout)
			if _, err := br.Peek(1); err != nil {
				return
			}
			c.setHandshakeDeadline(time.Now().Add(p.cfg.HandshakeTimeout))
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			if !errors.Is(err, io.EOF) && !relay.IsTimeout(err) {
				p.addRecord(Record{Verdict: Deny, Start: time.Now(), Reason: "malformed request: " + err.Error()})
				writeHTTPError(c, http.StatusBadRequest, "sandboxed egress proxy: malformed request: "+err.Error())
			}
			return
		}
		c.setDeadlineMode(p.cfg.IdleTimeout)
		if req.Method == http.MethodConnect {
			p.closeForward(fwd)
			fwd = nil
			p.serveConnect(c, br, req)
			return
		}
		if cw == nil {
			cw = bufio.NewWriter(c)
		}
		if !p.forward(c, cw, req, &fwd) {
			return
		}
	}
}

// serveConnect opens a tunnel for "CONNECT host:port".
func (p *Proxy) serveConnect(c *deadlineConn, br *bufio.Reader, req *http.Request) {
	rec := Record{Protocol: ProtoConnect, Start: time.Now()}
	defer func() { p.addRecord(rec) }()
	host, portStr, err := net.SplitHostPort(req.RequestURI)
	port, perr := strconv.Atoi(portStr)
	if err != nil || perr != nil {
		rec.Host, rec.Verdict = req.RequestURI, Deny
		rec.Reason = "malformed CONNECT target " + strconv.Quote(req.RequestURI) + ": want HOST:PORT"
		writeHTTPError(c, http.StatusBadRequest, "sandboxed egress proxy: "+rec.Reason)
		return
	}
	t, err := netrule.ParseTarget(host)
	if err != nil {
		rec.Host, rec.Port, rec.Verdict, rec.Reason = host, port, Deny, "invalid target: "+err.Error()
		writeHTTPError(c, http.StatusBadRequest, "sandboxed egress proxy: "+rec.Reason)
		return
	}
	if ref := p.standInTarget(host); ref != nil {
		rec.Host, rec.Port, rec.Verdict, rec.Reason = t.String(), port, ref.verdict, ref.reason
		writeHTTPError(c, http.StatusForbidden, "sandboxed egress proxy: refused CONNECT "+req.RequestURI+"\nreason: "+ref.reason)
		return
	}
	up, cerr := p.connect(t, port, &rec)
	if cerr != nil {
		writeConnectError(c, "CONNECT "+req.RequestURI, cerr)
		return
	}
	defer p.release(up, &rec)
	if !p.inspects(t) {
		// An opaque tunnel: the proxy sees one connection, not requests.
		if ref := p.takeQuota(t); ref != nil {
			rec.Verdict, rec.Reason = ref.verdict, ref.reason
			writeHTTPError(c, http.StatusTooManyRequests, "sandboxed egress proxy: refused CONNECT "+req.RequestURI+"\nreason: "+ref.reason)
			return
		}
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	if p.inspects(t) {
		p.serveInspected(c, br, up, t, port, &rec)
		return
	}
	relay.Splice(c, br, up, up, p.cfg.IdleTimeout, &p.wg)
}

// forward sends one absolute-URI request upstream and its response back.
// It reports whether the client connection may carry another request.
func (p *Proxy) forward(c *deadlineConn, cw *bufio.Writer, req *http.Request, fwdp **forwardUpstream) bool {
	u := req.URL
	if !u.IsAbs() || u.Host == "" || !strings.EqualFold(u.Scheme, "http") {
		why := fmt.Sprintf("request target %q is not an absolute http:// URL; send absolute http:// URLs, or CONNECT HOST:PORT for https and anything else", req.RequestURI)
		p.addRecord(Record{Protocol: ProtoHTTP, Verdict: Deny, Start: time.Now(), Reason: why})
		writeHTTPError(c, http.StatusBadRequest, "sandboxed egress proxy: "+why)
		return false
	}
	port := 80
	if s := u.Port(); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			writeHTTPError(c, http.StatusBadRequest, "sandboxed egress proxy: bad port in "+u.Host)
			return false
		}
		port = n
	}
	t, err := netrule.ParseTarget(u.Hostname())
	if err != nil {
		why := "invalid target: " + err.Error()
		p.addRecord(Record{Protocol: ProtoHTTP, Host: u.Hostname(), Port: port, Verdict: Deny, Start: time.Now(), Reason: why})
		writeHTTPError(c, http.StatusBadRequest, "sandboxed egress proxy: "+why)
		return false
	}
	var names []string
	if v, _ := p.cfg.Rules.decide(t, port); v == Allow {
		// A granted host: the request itself may still be refused (a
		// stand-in not meant for it, a method or path its rules refuse,
		// a quota used up).
		var ref *refusal
		if names, ref = p.inspectRequest(req, t); ref != nil {
			p.refuseRequest(c, ProtoHTTP, t, port, req.Method+" "+u.String(), ref)
			return false
		}
		if ref := p.takeQuota(t); ref != nil {
			p.refuseQuota(c, ProtoHTTP, t, port, req.Method+" "+u.String(), ref)
			return false
		}
	}
	key := t.String() + " " + strconv.Itoa(port)
	fwd := *fwdp
	if fwd != nil && fwd.key != key {
		p.closeForward(fwd)
		fwd, *fwdp = nil, nil
	}
	if fwd == nil {
		rec := Record{Protocol: ProtoHTTP, Start: time.Now()}
		up, cerr := p.connect(t, port, &rec)
		if cerr != nil {
			p.addRecord(rec)
			writeConnectError(c, req.Method+" "+u.String(), cerr)
			return false
		}
		fwd = &forwardUpstream{key: key, up: up, br: bufio.NewReader(up), bw: bufio.NewWriter(up), rec: rec}
		*fwdp = fwd
	}
	fwd.rec.Credentials = addNames(fwd.rec.Credentials, names)
	req.Host = u.Host // an absolute URI overrides any Host header (RFC 9112 3.2.2)
	x := p.exchange(c, cw, req, fwd.br, fwd.bw, p.scrubberFor(names))
	if x.err != "" {
		fwd.rec.Error = x.err
	}
	if !x.keepUpstream || x.err != "" {
		p.closeForward(fwd)
		*fwdp = nil
	}
	return x.keepClient
}

// writeConnectError answers a refused or failed CONNECT or forward.
func writeConnectError(w io.Writer, what string, e *connectError) {
	switch e.kind {
	case failDenied:
		writeHTTPError(w, http.StatusForbidden, "sandboxed egress proxy: refused "+what+"\nreason: "+e.msg)
	case failResolve:
		writeHTTPError(w, http.StatusBadGateway, "sandboxed egress proxy: "+e.msg)
	default:
		code := http.StatusBadGateway
		if relay.IsTimeout(e.err) {
			code = http.StatusGatewayTimeout
		}
		writeHTTPError(w, code, "sandboxed egress proxy: "+e.msg)
	}
}

// writeHTTPError writes a complete plain-text response that closes the
// connection.
func writeHTTPError(w io.Writer, code int, body string) {
	body += "\n"
	_, _ = fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), len(body), body)
}

// dialRefused reports whether a dial failed because nothing listened.
func dialRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// dialUnreachable reports whether a dial failed for lack of a route.
func dialUnreachable(err error) bool {
	return errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EHOSTUNREACH)
}
