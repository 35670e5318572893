package egress

import (
	"bufio"
	"encoding/binary"
	"io"
	"net/netip"
	"strconv"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
	"github.com/sandboxed-dev/sandboxed/isolation/egress/relay"
)

// SOCKS5 constants (RFC 1928).
const (
	socksNoAuth       = 0x00
	socksNoAcceptable = 0xff
	socksCmdConnect   = 0x01
	socksAtypIPv4     = 0x01
	socksAtypDomain   = 0x03
	socksAtypIPv6     = 0x04

	socksSucceeded        = 0x00
	socksGeneralFailure   = 0x01
	socksNotAllowed       = 0x02
	socksNetUnreachable   = 0x03
	socksHostUnreachable  = 0x04
	socksConnRefused      = 0x05
	socksCmdNotSupported  = 0x07
	socksAtypNotSupported = 0x08
)

// socksReply writes a reply with an all-zero IPv4 bound address: the
// proxy does not tell the sandbox its host-side addresses.
func socksReply(w io.Writer, code byte) error {
	_, err := w.Write([]byte{socksVersion, code, 0, socksAtypIPv4, 0, 0, 0, 0, 0, 0})
	return err
}

// serveSOCKS handles a SOCKS5 client: no authentication, CONNECT only,
// with IPv4, IPv6 and host-name address types.
func (p *Proxy) serveSOCKS(c *deadlineConn, br *bufio.Reader) {
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return
	}
	noAuth := false
	for _, m := range methods {
		noAuth = noAuth || m == socksNoAuth
	}
	if !noAuth {
		p.addRecord(Record{Protocol: ProtoSOCKS5, Verdict: Deny, Start: time.Now(),
			Reason: "SOCKS5 client does not offer the no-authentication method, the only one the proxy speaks"})
		_, _ = c.Write([]byte{socksVersion, socksNoAcceptable})
		return
	}
	if _, err := c.Write([]byte{socksVersion, socksNoAuth}); err != nil {
		return
	}

	var req [4]byte // VER CMD RSV ATYP
	if _, err := io.ReadFull(br, req[:]); err != nil {
		return
	}
	rec := Record{Protocol: ProtoSOCKS5, Start: time.Now()}
	defer func() { p.addRecord(rec) }()
	refuse := func(code byte, why string) {
		rec.Verdict, rec.Reason = Deny, why
		_ = socksReply(c, code)
	}
	if req[0] != socksVersion {
		refuse(socksGeneralFailure, "malformed SOCKS5 request: version "+strconv.Itoa(int(req[0])))
		return
	}
	var host string
	switch req[3] {
	case socksAtypIPv4:
		var b [4]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return
		}
		host = netip.AddrFrom4(b).String()
	case socksAtypIPv6:
		var b [16]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return
		}
		host = netip.AddrFrom16(b).String()
	case socksAtypDomain:
		n, err := br.ReadByte()
		if err != nil {
			return
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return
		}
		host = string(b)
	default:
		refuse(socksAtypNotSupported, "SOCKS5 address type "+strconv.Itoa(int(req[3]))+" is not supported")
		return
	}
	var pb [2]byte
	if _, err := io.ReadFull(br, pb[:]); err != nil {
		return
	}
	port := int(binary.BigEndian.Uint16(pb[:]))
	rec.Host, rec.Port = host, port
	if req[1] != socksCmdConnect {
		refuse(socksCmdNotSupported, "SOCKS5 command "+strconv.Itoa(int(req[1]))+" is not supported; only CONNECT is")
		return
	}
	t, err := netrule.ParseTarget(host)
	if err != nil {
		refuse(socksNotAllowed, "invalid target: "+err.Error())
		return
	}
	if ref := p.standInTarget(host); ref != nil {
		refuse(socksNotAllowed, ref.reason)
		rec.Verdict = ref.verdict
		return
	}
	up, cerr := p.connect(t, port, &rec)
	if cerr != nil {
		_ = socksReply(c, socksCode(cerr))
		return
	}
	defer p.release(up, &rec)
	if !p.inspects(t) {
		if ref := p.takeQuota(t); ref != nil {
			rec.Verdict, rec.Reason = ref.verdict, ref.reason
			_ = socksReply(c, socksNotAllowed)
			return
		}
	}
	if err := socksReply(c, socksSucceeded); err != nil {
		return
	}
	c.setDeadlineMode(p.cfg.IdleTimeout)
	if p.inspects(t) {
		p.serveInspected(c, br, up, t, port, &rec)
		return
	}
	relay.Splice(c, br, up, up, p.cfg.IdleTimeout, &p.wg)
}

// socksCode maps a connect failure to a SOCKS5 reply code.
func socksCode(e *connectError) byte {
	switch {
	case e.kind == failDenied:
		return socksNotAllowed
	case e.kind == failResolve:
		return socksHostUnreachable
	case dialRefused(e.err):
		return socksConnRefused
	case dialUnreachable(e.err):
		return socksNetUnreachable
	case relay.IsTimeout(e.err):
		return socksHostUnreachable
	default:
		return socksGeneralFailure
	}
}
