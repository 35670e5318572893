package egress

import (
	"fmt"
	"net/netip"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
)

// refusedAddrReason explains why the proxy will not connect to addr,
// reached as host.
func refusedAddrReason(host string, addr netip.Addr, c netrule.AddrClass) string {
	var s string
	if host == addr.String() {
		s = fmt.Sprintf("%s is a refused address (%s)", host, c)
	} else {
		s = fmt.Sprintf("%s resolves to %s, a refused address (%s)", host, addr, c)
	}
	s += "; the proxy never connects to loopback, private, link-local, CGNAT, multicast, reserved or cloud metadata addresses, whatever the grants say"
	if c == netrule.ClassLoopback {
		s += " (use network:localhost:PORT for a service on the host's 127.0.0.1)"
	}
	return s
}
