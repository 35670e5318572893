package netrule

import (
	"net/netip"
	"testing"
)

func TestClassifyAddr(t *testing.T) {
	tests := map[string]AddrClass{
		// Public, including the documentation ranges tests use.
		"8.8.8.8":          ClassPublic,
		"192.0.2.10":       ClassPublic,
		"198.51.100.1":     ClassPublic,
		"203.0.113.255":    ClassPublic,
		"2606:4700::1111":  ClassPublic,
		"2001:db8::1":      ClassPublic,
		"172.32.0.1":       ClassPublic,
		"100.128.0.1":      ClassPublic,
		"::ffff:8.8.8.8":   ClassPublic,
		"64:ff9b::808:808": ClassPublic,

		"127.0.0.1":       ClassLoopback,
		"127.255.255.254": ClassLoopback,
		"::1":             ClassLoopback,
		"10.1.2.3":        ClassPrivate,
		"172.16.0.1":      ClassPrivate,
		"172.31.255.255":  ClassPrivate,
		"192.168.1.1":     ClassPrivate,
		"fc00::1":         ClassPrivate,
		"fd12:3456::1":    ClassPrivate,
		"fec0::1":         ClassPrivate,
		"64:ff9b:1::1":    ClassPrivate,
		"169.254.1.1":     ClassLinkLocal,
		"fe80::1":         ClassLinkLocal,
		"fe80::1%eth0":    ClassLinkLocal,
		"100.64.0.1":      ClassCGNAT,
		"100.127.255.255": ClassCGNAT,
		"0.0.0.0":         ClassUnspecified,
		"::":              ClassUnspecified,
		"0.1.2.3":         ClassReserved,
		"224.0.0.1":       ClassMulticast,
		"239.255.255.250": ClassMulticast,
		"ff02::1":         ClassMulticast,
		"255.255.255.255": ClassBroadcast,
		"240.0.0.1":       ClassReserved,
		"192.0.0.8":       ClassReserved,
		"198.18.0.1":      ClassReserved,
		"100::1":          ClassReserved,
		"::7f00:1":        ClassReserved, // IPv4-compatible

		"169.254.169.254": ClassMetadata,
		"fd00:ec2::254":   ClassMetadata,
		"100.100.100.200": ClassMetadata,

		// IPv4-mapped, NAT64 and 6to4 spellings take the inner class.
		"::ffff:127.0.0.1":       ClassLoopback,
		"::ffff:10.0.0.1":        ClassPrivate,
		"::ffff:169.254.169.254": ClassMetadata,
		"::ffff:169.254.0.1":     ClassLinkLocal,
		"::ffff:100.64.0.1":      ClassCGNAT,
		"::ffff:0.0.0.0":         ClassUnspecified,
		"::ffff:224.0.0.1":       ClassMulticast,
		"::ffff:255.255.255.255": ClassBroadcast,
		"::ffff:192.168.0.1":     ClassPrivate,
		"::ffff:172.16.0.1":      ClassPrivate,
		"64:ff9b::7f00:1":        ClassLoopback,
		"64:ff9b::a9fe:a9fe":     ClassMetadata,
		"2002:7f00:1::":          ClassLoopback,
		"2002:0a00:0001::1":      ClassPrivate,
		"2002:0808:0808::1":      ClassPublic,
	}
	for in, want := range tests {
		a := netip.MustParseAddr(in)
		if got := ClassifyAddr(a); got != want {
			t.Errorf("ClassifyAddr(%s) = %q, want %q", in, got, want)
		}
		if ClassifyAddr(a).Refused() != (want != ClassPublic) {
			t.Errorf("%s: Refused() wrong", in)
		}
	}
	if got := ClassifyAddr(netip.Addr{}); got != ClassReserved {
		t.Errorf("zero Addr: %q", got)
	}
}

// A grant's host is classed before resolution only where that is certain.
func TestHostClass(t *testing.T) {
	for _, c := range []struct {
		host    string
		class   AddrClass
		known   bool
		refused bool
	}{
		{"api.example.com", ClassPublic, false, false},
		{"192.0.2.10", ClassPublic, true, false},
		{"0.1.2.3", ClassReserved, true, true},
		{"[::1]", ClassLoopback, true, true},
		{"169.254.169.254", ClassMetadata, true, true},
		{"metadata.google.internal", ClassMetadata, true, true},
		{"Metadata.Google.Internal.", ClassMetadata, true, true},
		{"metadata", ClassMetadata, true, true},
		{"localhost", ClassLoopback, true, true},
		{"db.localhost", ClassLoopback, true, true},
		{"localhost.example.com", ClassPublic, false, false},
		{"10.0.0.1", ClassPrivate, true, true},
	} {
		cl, known := HostClass(c.host)
		if cl != c.class || known != c.known {
			t.Errorf("HostClass(%q) = %q, %v; want %q, %v", c.host, cl, known, c.class, c.known)
		}
		if refused, why := RefusedHost(c.host); refused != c.refused || refused != (why != "") {
			t.Errorf("RefusedHost(%q) = %v %q, want %v", c.host, refused, why, c.refused)
		}
	}
}
