package egress

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

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
