package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
)

// Resolver looks up the addresses of a host name. *net.Resolver satisfies
// it; Config.Resolver nil means net.DefaultResolver (the host's ordinary
// resolver).
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// HostsResolver answers from a fixed table and nothing else: a name not in
// the table is "not found". It exists for tests and for an operator-only
// test switch of the controller; a tool definition must never be able to
// select it.
type HostsResolver struct {
	m map[string][]netip.Addr
}

// LookupIPAddr implements Resolver.
func (h *HostsResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	name, err := netrule.ParseName(host)
	addrs, ok := h.m[name]
	if err != nil || !ok {
		return nil, &net.DNSError{Err: "no such host (test hosts file)", Name: host, IsNotFound: true}
	}
	out := make([]net.IPAddr, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, net.IPAddr{IP: a.AsSlice()})
	}
	return out, nil
}

// ParseHostsFile reads a test hosts table: one entry a line, a host name
// and one or more IP addresses separated by blanks, in either order
// ("api.example.test 192.0.2.10" or "/etc/hosts" style "192.0.2.10
// api.example.test"). '#' starts a comment; blank lines are skipped. A name
// listed twice collects the addresses of both lines.
func ParseHostsFile(r io.Reader) (*HostsResolver, error) {
	h := &HostsResolver{m: map[string][]netip.Addr{}}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		var names []string
		var addrs []netip.Addr
		for _, f := range fields {
			if a, err := netip.ParseAddr(f); err == nil {
				addrs = append(addrs, a.Unmap())
				continue
			}
			n, err := netrule.ParseName(f)
			if err != nil {
				return nil, fmt.Errorf("parse hosts file line %d: %v: %w", line, err, ErrBadHostsFile)
			}
			names = append(names, n)
		}
		if len(names) == 0 || len(addrs) == 0 {
			return nil, fmt.Errorf("parse hosts file line %d: want a host name and at least one IP address: %w", line, ErrBadHostsFile)
		}
		for _, n := range names {
			h.m[n] = append(h.m[n], addrs...)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read hosts file: %w", err)
	}
	return h, nil
}

// LoadHostsFile opens path and parses it with ParseHostsFile.
func LoadHostsFile(path string) (*HostsResolver, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open hosts file: %w", err)
	}
	defer f.Close()
	h, err := ParseHostsFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}
