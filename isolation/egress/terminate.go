package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
	"github.com/sandboxed-dev/sandboxed/isolation/egress/relay"
)

// checkInspection checks the credentials and HTTP rules of a Config and
// normalises their host patterns.
func checkInspection(cfg *Config) error {
	for i := range cfg.Credentials {
		c := &cfg.Credentials[i]
		if c.StandIn == "" || c.Value == "" {
			return fmt.Errorf("credential %s: empty stand-in or value: %w", c.Name, ErrBadRule)
		}
		if strings.Contains(c.Value, c.StandIn) || strings.Contains(c.StandIn, c.Value) {
			return fmt.Errorf("credential %s: the value and its stand-in contain one another: %w", c.Name, ErrBadRule)
		}
		if len(c.Hosts) == 0 {
			return fmt.Errorf("credential %s: no hosts: %w", c.Name, ErrBadRule)
		}
		hosts := make([]string, len(c.Hosts))
		for j, h := range c.Hosts {
			n, err := CheckInspectHost(h)
			if err != nil {
				return fmt.Errorf("credential %s: %w", c.Name, err)
			}
			hosts[j] = n
		}
		c.Hosts = hosts
	}
	for i, r := range cfg.HTTPRules {
		n, err := CheckHTTPRule(r)
		if err != nil {
			return fmt.Errorf("http rule %d: %w", i+1, err)
		}
		cfg.HTTPRules[i] = n
	}
	if (len(cfg.Credentials) > 0 || len(cfg.HTTPRules) > 0) && cfg.CA == nil {
		return fmt.Errorf("credentials and HTTP rules need a run CA to terminate TLS with: %w", ErrBadRule)
	}
	return nil
}

// standInTarget refuses a CONNECT or SOCKS5 target that carries a
// stand-in (a host name cannot be a credential's destination).
func (p *Proxy) standInTarget(host string) *refusal {
	h := strings.ToLower(host)
	for _, c := range p.cfg.Credentials {
		if strings.Contains(h, strings.ToLower(c.StandIn)) {
			return &refusal{RefusedCredential, fmt.Sprintf("the target %s carries the stand-in of credential %s; refused", host, c.Name)}
		}
	}
	return nil
}

// readerConn reads through r (which holds what was peeked of Conn).
type readerConn struct {
	net.Conn
	r io.Reader
}

func (c *readerConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// tlsRecordHandshake is the first byte of a TLS ClientHello.
const tlsRecordHandshake = 0x16

// serveInspected serves a tunnel (CONNECT or SOCKS5) to a host the proxy
// inspects, after the client was told it is connected: it terminates the
// client's TLS with a certificate of the run CA (or reads plain HTTP when
// the client does not start TLS), opens TLS to the upstream verified
// against UpstreamRoots, and passes requests one by one through
// inspectRequest. Anything that is not HTTP/1.x is refused.
func (p *Proxy) serveInspected(c *deadlineConn, br *bufio.Reader, up *countConn, t target, port int, rec *Record) {
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	var client net.Conn = c
	var upstream net.Conn = up
	cr := br
	upErr := ""
	if first[0] == tlsRecordHandshake {
		name := t.String()
		tc := tls.Server(&readerConn{Conn: c, r: br}, &tls.Config{
			GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return p.cfg.CA.leaf(name) },
			NextProtos:     []string{"http/1.1"},
			MinVersion:     tls.VersionTLS12,
		})
		c.setHandshakeDeadline(time.Now().Add(p.cfg.HandshakeTimeout))
		if err := tc.Handshake(); err != nil {
			rec.Error = "TLS handshake with the sandbox: " + err.Error()
			return
		}
		c.setDeadlineMode(p.cfg.IdleTimeout)
		uc := tls.Client(up, &tls.Config{ServerName: name, RootCAs: p.cfg.UpstreamRoots, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
		ctx, cancel := context.WithTimeout(p.ctx, p.cfg.DialTimeout)
		err := uc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			upErr = fmt.Sprintf("TLS to %s:%d: %v", name, port, err)
		}
		client, upstream, cr = tc, uc, bufio.NewReader(tc)
	}
	ubr, ubw := bufio.NewReader(upstream), bufio.NewWriter(upstream)
	cw := bufio.NewWriter(client)
	for n := 0; ; n++ {
		if n > 0 {
			c.setDeadlineMode(p.cfg.IdleTimeout)
			if _, err := cr.Peek(1); err != nil {
				return
			}
			c.setHandshakeDeadline(time.Now().Add(p.cfg.HandshakeTimeout))
		}
		req, err := http.ReadRequest(cr)
		if err != nil {
			if !errors.Is(err, io.EOF) && !relay.IsTimeout(err) {
				why := fmt.Sprintf("%s:%d is inspected (credentials or HTTP rules) and takes only HTTP/1.x: %v", t.String(), port, err)
				p.addRecord(Record{Protocol: rec.Protocol, Host: t.String(), Port: port, Verdict: Deny, Start: time.Now(), Reason: why})
				writeHTTPError(client, http.StatusBadRequest, "sandboxed egress proxy: refused: "+why)
			}
			return
		}
		c.setDeadlineMode(p.cfg.IdleTimeout)
		if upErr != "" {
			rec.Error = upErr
			writeHTTPError(client, http.StatusBadGateway, "sandboxed egress proxy: "+upErr)
			return
		}
		what := req.Method + " " + requestLine(req, t, port, client != net.Conn(c))
		if req.ProtoMajor != 1 {
			p.refuseRequest(client, rec.Protocol, t, port, what, &refusal{Deny, req.Proto + " is not forwarded to an inspected host; speak HTTP/1.1"})
			return
		}
		if req.Method == http.MethodConnect {
			p.addRecord(Record{Protocol: rec.Protocol, Host: t.String(), Port: port, Verdict: Deny, Start: time.Now(), Reason: "CONNECT inside a tunnel is not forwarded"})
			writeHTTPError(client, http.StatusBadRequest, "sandboxed egress proxy: CONNECT inside a tunnel is not forwarded")
			return
		}
		if ref := hostHeaderRefusal(req, t, port); ref != nil {
			p.refuseRequest(client, rec.Protocol, t, port, what, ref)
			return
		}
		names, ref := p.inspectRequest(req, t)
		if ref != nil {
			p.refuseRequest(client, rec.Protocol, t, port, what, ref)
			return
		}
		if ref := p.takeQuota(t); ref != nil {
			p.refuseQuota(client, rec.Protocol, t, port, what, ref)
			return
		}
		rec.Credentials = addNames(rec.Credentials, names)
		x := p.exchange(client, cw, req, ubr, ubw, p.scrubberFor(names))
		if x.err != "" {
			rec.Error = x.err
		}
		if !x.keepClient || !x.keepUpstream {
			return
		}
	}
}

// requestLine is the request's URL as messages show it.
func requestLine(req *http.Request, t target, port int, secure bool) string {
	scheme, def := "http", 80
	if secure {
		scheme, def = "https", 443
	}
	host := t.String()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != def {
		host += ":" + strconv.Itoa(port)
	}
	return scheme + "://" + host + req.URL.EscapedPath()
}

// refuseRequest records a request refused after reading it and answers
// 403, closing the connection.
func (p *Proxy) refuseRequest(w io.Writer, proto Protocol, t target, port int, what string, ref *refusal) {
	p.addRecord(Record{Protocol: proto, Host: t.String(), Port: port, Verdict: ref.verdict, Start: time.Now(), Reason: ref.reason})
	writeHTTPError(w, http.StatusForbidden, "sandboxed egress proxy: refused "+what+"\nreason: "+ref.reason)
}

func addNames(have, add []string) []string {
	for _, n := range add {
		if !slices.Contains(have, n) {
			have = append(have, n)
		}
	}
	return have
}

// exchanged is how one request and its response went.
type exchanged struct {
	keepClient   bool   // the client connection may carry another request
	keepUpstream bool   // the upstream connection may carry another request
	err          string // the upstream failed (the client got a 502)
}

// exchange sends req (hop-by-hop headers stripped) to the upstream and
// relays its response (informational ones first) to the client.
//
// scrub, when set, puts the stand-ins back where the response holds the
// real values the request carried.
func (p *Proxy) exchange(c io.Writer, cw *bufio.Writer, req *http.Request, ubr *bufio.Reader, ubw *bufio.Writer, scrub *scrubber) exchanged {
	clientClose := req.Close
	stripHopByHop(req.Header)
	req.RequestURI = ""
	req.Close = false
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // keep Go from adding its own
	}
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		// Answer for the origin, so the client sends its body now.
		req.Header.Del("Expect")
		if _, err := io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return exchanged{}
		}
	}
	fail := func(msg string) exchanged {
		msg = scrub.text(msg) // an error may quote what the server sent
		writeHTTPError(c, http.StatusBadGateway, "sandboxed egress proxy: "+msg)
		return exchanged{err: msg}
	}
	err := req.Write(ubw)
	if err == nil {
		err = ubw.Flush()
	}
	if err != nil {
		return fail("send request: " + err.Error())
	}
	var resp *http.Response
	for {
		resp, err = http.ReadResponse(ubr, req)
		if err != nil {
			return fail("read response: " + err.Error())
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			// Informational (103 Early Hints): pass on, then read the final one.
			stripHopByHop(resp.Header)
			if err := resp.Write(c); err != nil {
				return exchanged{}
			}
			continue
		}
		break
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// Upgrade is hop-by-hop and was not forwarded; an origin that
		// switches anyway cannot be relayed as HTTP.
		writeHTTPError(c, http.StatusBadGateway, "sandboxed egress proxy: protocol upgrades are not forwarded; use CONNECT")
		return exchanged{}
	}
	upstreamClose := resp.Close
	stripHopByHop(resp.Header)
	scrub.response(resp, req)
	clientClose = clientClose || resp.Close // a scrubbed HTTP/1.0 body ends with the connection
	resp.Close = clientClose
	err = resp.Write(cw)
	if err == nil {
		err = cw.Flush()
	}
	if err != nil {
		return exchanged{keepUpstream: false}
	}
	knownLength := resp.ContentLength >= 0 || len(resp.TransferEncoding) > 0
	return exchanged{keepClient: !clientClose && knownLength, keepUpstream: !upstreamClose}
}

// scrubberFor is the scrubber of the credentials named, nil for none.
func (p *Proxy) scrubberFor(names []string) *scrubber {
	var creds []Credential
	for _, c := range p.cfg.Credentials {
		if slices.Contains(names, c.Name) {
			creds = append(creds, c)
		}
	}
	return newScrubber(creds)
}

// hostHeaderRefusal refuses a request inside a tunnel to t:port whose
// Host names another host: a front end shared by several sites routes by
// Host, so it could carry a credential meant for t elsewhere.
func hostHeaderRefusal(req *http.Request, t target, port int) *refusal {
	h := req.Host
	if h == "" {
		return nil
	}
	name, p, err := net.SplitHostPort(h)
	if err != nil {
		name, p = h, ""
	}
	if ht, err := netrule.ParseTarget(name); err == nil && ht == t && (p == "" || p == strconv.Itoa(port)) {
		return nil
	}
	return &refusal{Deny, fmt.Sprintf("the Host header names %q, not %s, the host of the tunnel; refused", h, t.String())}
}
