package egress

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
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

func TestParseHostsFile(t *testing.T) {
	h, err := ParseHostsFile(strings.NewReader(`
# test hosts
api.example.test 192.0.2.10
203.0.113.5  other.example.test  alias.example.test # etc/hosts order
Multi.Example.Test. 192.0.2.1 2001:db8::1
multi.example.test 192.0.2.2
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]netip.Addr{
		"api.example.test":   {netip.MustParseAddr("192.0.2.10")},
		"other.example.test": {netip.MustParseAddr("203.0.113.5")},
		"alias.example.test": {netip.MustParseAddr("203.0.113.5")},
		"multi.example.test": {netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("192.0.2.2")},
	}
	if !reflect.DeepEqual(h.m, want) {
		t.Errorf("table = %v, want %v", h.m, want)
	}
	ips, err := h.LookupIPAddr(t.Context(), "API.example.test.")
	if err != nil || len(ips) != 1 || ips[0].IP.String() != "192.0.2.10" {
		t.Errorf("lookup = %v, %v", ips, err)
	}
	if _, err := h.LookupIPAddr(t.Context(), "missing.example.test"); err == nil {
		t.Error("lookup of a missing name succeeded")
	}
	for _, bad := range []string{"only-a-name\n", "192.0.2.1\n", "bad*name 192.0.2.1\n"} {
		if _, err := ParseHostsFile(strings.NewReader(bad)); !errors.Is(err, ErrBadHostsFile) {
			t.Errorf("ParseHostsFile(%q) error = %v, want ErrBadHostsFile", bad, err)
		}
	}
	if _, err := LoadHostsFile(t.TempDir() + "/missing"); err == nil {
		t.Error("LoadHostsFile of a missing file succeeded")
	}
}

func TestProxyEnv(t *testing.T) {
	want := []string{
		"HTTP_PROXY=http://127.0.0.1:3128",
		"HTTPS_PROXY=http://127.0.0.1:3128",
		"ALL_PROXY=socks5h://127.0.0.1:3128",
		"NO_PROXY=localhost,127.0.0.1",
		"http_proxy=http://127.0.0.1:3128",
		"https_proxy=http://127.0.0.1:3128",
		"all_proxy=socks5h://127.0.0.1:3128",
		"no_proxy=localhost,127.0.0.1",
	}
	if got := ProxyEnv(3128); !reflect.DeepEqual(got, want) {
		t.Errorf("ProxyEnv = %q, want %q", got, want)
	}
}
