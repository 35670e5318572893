package netrule

import (
	"net/netip"
	"strings"
)

// AddrClass is what kind of destination an IP address is. Every class but
// ClassPublic is refused by the proxy, whatever the grants say.
type AddrClass string

const (
	ClassPublic      AddrClass = "public"
	ClassLoopback    AddrClass = "loopback"
	ClassPrivate     AddrClass = "private"
	ClassLinkLocal   AddrClass = "link-local"
	ClassCGNAT       AddrClass = "shared (CGNAT)"
	ClassUnspecified AddrClass = "unspecified"
	ClassMulticast   AddrClass = "multicast"
	ClassBroadcast   AddrClass = "broadcast"
	ClassReserved    AddrClass = "reserved"
	ClassMetadata    AddrClass = "cloud metadata"
)

// Refused reports whether the proxy refuses addresses of this class.
func (c AddrClass) Refused() bool { return c != ClassPublic }

// metadataNames are host names of cloud metadata services. They are refused
// by name, before resolution, so that a split-horizon resolver cannot make
// them look public.
var metadataNames = map[string]bool{
	"metadata.google.internal": true,
	"metadata":                 true, // GCE's short name, resolved through the search path
}

// metadataAddrs are cloud metadata endpoints outside the ranges refused
// anyway, and inside them, named for clearer reasons.
var metadataAddrs = map[netip.Addr]bool{
	netip.MustParseAddr("169.254.169.254"): true, // AWS, GCP, Azure, OCI, DigitalOcean
	netip.MustParseAddr("fd00:ec2::254"):   true, // AWS IPv6
	netip.MustParseAddr("100.100.100.200"): true, // Alibaba Cloud
}

type prefixClass struct {
	p netip.Prefix
	c AddrClass
}

// v4Classes are checked in order; the first match wins. Documentation
// ranges (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24) are deliberately
// absent: they are public here, and tests put their hosts there.
var v4Classes = []prefixClass{
	{netip.MustParsePrefix("0.0.0.0/32"), ClassUnspecified},
	{netip.MustParsePrefix("0.0.0.0/8"), ClassReserved}, // "this network"
	{netip.MustParsePrefix("127.0.0.0/8"), ClassLoopback},
	{netip.MustParsePrefix("10.0.0.0/8"), ClassPrivate},
	{netip.MustParsePrefix("172.16.0.0/12"), ClassPrivate},
	{netip.MustParsePrefix("192.168.0.0/16"), ClassPrivate},
	{netip.MustParsePrefix("169.254.0.0/16"), ClassLinkLocal},
	{netip.MustParsePrefix("100.64.0.0/10"), ClassCGNAT},
	{netip.MustParsePrefix("192.0.0.0/24"), ClassReserved},  // IETF protocol assignments
	{netip.MustParsePrefix("198.18.0.0/15"), ClassReserved}, // benchmarking; fake-IP resolvers use it
	{netip.MustParsePrefix("224.0.0.0/4"), ClassMulticast},
	{netip.MustParsePrefix("255.255.255.255/32"), ClassBroadcast},
	{netip.MustParsePrefix("240.0.0.0/4"), ClassReserved},
}

var v6Classes = []prefixClass{
	{netip.MustParsePrefix("::/128"), ClassUnspecified},
	{netip.MustParsePrefix("::1/128"), ClassLoopback},
	{netip.MustParsePrefix("::/96"), ClassReserved},         // IPv4-compatible (deprecated)
	{netip.MustParsePrefix("100::/64"), ClassReserved},      // discard-only
	{netip.MustParsePrefix("64:ff9b:1::/48"), ClassPrivate}, // local-use NAT64
	{netip.MustParsePrefix("fc00::/7"), ClassPrivate},       // unique local
	{netip.MustParsePrefix("fe80::/10"), ClassLinkLocal},
	{netip.MustParsePrefix("fec0::/10"), ClassPrivate}, // site-local (deprecated)
	{netip.MustParsePrefix("ff00::/8"), ClassMulticast},
}

var (
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
	sixToF4 = netip.MustParsePrefix("2002::/16")
)

// ClassifyAddr says what kind of destination a is. IPv4-mapped IPv6
// (::ffff:a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses
// take the class of the IPv4 address they carry, so an internal IPv4
// address cannot be reached through its IPv6 spelling.
func ClassifyAddr(a netip.Addr) AddrClass {
	if !a.IsValid() {
		return ClassReserved
	}
	a = a.WithZone("")
	if metadataAddrs[a] {
		return ClassMetadata
	}
	if a.Is4In6() {
		return ClassifyAddr(a.Unmap())
	}
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			return ClassifyAddr(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		case sixToF4.Contains(a):
			return ClassifyAddr(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		}
		for _, pc := range v6Classes {
			if pc.p.Contains(a) {
				return pc.c
			}
		}
		return ClassPublic
	}
	for _, pc := range v4Classes {
		if pc.p.Contains(a) {
			return pc.c
		}
	}
	return ClassPublic
}

// IsMetadataName reports whether name (lower case, no trailing dot) is a
// cloud metadata service's host name, refused before any resolution.
func IsMetadataName(name string) bool { return metadataNames[name] }

// HostClass is the class of a grant's host as far as it is known before
// name resolution: an IP literal's (brackets allowed), a cloud metadata
// name's, and loopback for localhost and names under .localhost (RFC 6761:
// they always resolve to this machine). known is false for any other name,
// whose addresses the proxy classifies when it resolves them.
func HostClass(host string) (c AddrClass, known bool) {
	t, err := ParseTarget(host)
	switch {
	case err != nil:
		return ClassPublic, false
	case t.IsIP():
		return ClassifyAddr(t.IP), true
	case IsMetadataName(t.Name):
		return ClassMetadata, true
	case t.Name == "localhost" || strings.HasSuffix(t.Name, ".localhost"):
		return ClassLoopback, true
	}
	return ClassPublic, false
}

// RefusedHost reports whether the proxy refuses host whatever the grants
// say, and why, in words fit for a reviewer ("" when it does not).
func RefusedHost(host string) (refused bool, why string) {
	c, known := HostClass(host)
	if !known || !c.Refused() {
		return false, ""
	}
	why = host + " is a " + string(c) + " destination, which the egress proxy never connects to, whatever the grants say"
	if c == ClassLoopback {
		why += " (use network:localhost:PORT for a service on the host's 127.0.0.1)"
	}
	return true, why
}
