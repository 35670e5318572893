package sbinit

import (
	"encoding/binary"
	"testing"
)

// sockaddrIn is a struct sockaddr_in of family fam (host order), port and
// a 4-byte address, padded to 16 bytes.
func sockaddrIn(fam uint16, port uint16, addr ...byte) []byte {
	b := make([]byte, 16)
	binary.NativeEndian.PutUint16(b, fam)
	binary.BigEndian.PutUint16(b[2:], port)
	copy(b[4:], addr)
	return b
}

// sockaddrIn6 is a struct sockaddr_in6 (28 bytes) of port and a 16-byte
// address.
func sockaddrIn6(port uint16, addr [16]byte) []byte {
	b := make([]byte, 28)
	binary.NativeEndian.PutUint16(b, 10)
	binary.BigEndian.PutUint16(b[2:], port)
	copy(b[8:], addr[:])
	return b
}

// sockaddrUn is a struct sockaddr_un of path (abstract when it starts
// with a NUL byte).
func sockaddrUn(path string) []byte {
	b := make([]byte, 2, 2+len(path)+1)
	binary.NativeEndian.PutUint16(b, 1)
	return append(append(b, path...), 0)
}

func TestSupervisedTarget(t *testing.T) {
	const port = 3128
	targets := map[int]int{port: 40001, 8080: 40002}
	loop6 := [16]byte{15: 1}
	mapped := [16]byte{10: 0xff, 11: 0xff, 12: 127, 15: 1}
	proxy := sockaddrIn(2, port, 127, 0, 0, 1)
	cases := []struct {
		name    string
		sa      []byte
		addrlen uint64
		want    int // 0: refused
	}{
		{"the proxy", proxy, 16, 40001},
		{"the proxy, a longer addrlen (sockaddr_storage)", proxy, 128, 40001},
		{"a localhost grant", sockaddrIn(2, 8080, 127, 0, 0, 1), 16, 40002},
		{"the proxy's port on 127.0.0.2", sockaddrIn(2, port, 127, 0, 0, 2), 16, 0},
		{"the proxy's port on 0.0.0.0", sockaddrIn(2, port, 0, 0, 0, 0), 16, 0},
		{"the proxy's port on 10.0.0.1", sockaddrIn(2, port, 10, 0, 0, 1), 16, 0},
		{"a localhost grant's port on 127.0.0.2", sockaddrIn(2, 8080, 127, 0, 0, 2), 16, 0},
		{"the proxy's port on ::1", sockaddrIn6(port, loop6), 28, 0},
		{"the proxy's port on ::ffff:127.0.0.1", sockaddrIn6(port, mapped), 28, 0},
		{"another port", sockaddrIn(2, 8081, 127, 0, 0, 1), 16, 0},
		{"the relay's own port", sockaddrIn(2, 40001, 127, 0, 0, 1), 16, 0},
		{"port 0", sockaddrIn(2, 0, 127, 0, 0, 1), 16, 0},
		{"the port byte-swapped", sockaddrIn(2, 0x380c, 127, 0, 0, 1), 16, 0},
		{"a named unix socket", sockaddrUn("/var/run/docker.sock"), 23, 0},
		{"an abstract unix socket", sockaddrUn("\x00sandboxed"), 13, 0},
		{"AF_UNSPEC (disconnect)", sockaddrIn(0, port, 127, 0, 0, 1), 16, 0},
		{"addrlen short of a sockaddr_in", proxy, 15, 0},
		{"addrlen of the family alone", proxy, 2, 0},
		{"addrlen 0", proxy, 0, 0},
		{"addrlen over sockaddr_storage", proxy, 129, 0},
		{"a negative addrlen", proxy, uint64(uint32(0xffffffff)), 0},
		{"fewer bytes read than an address", proxy[:7], 16, 0},
		{"nothing read", nil, 16, 0},
		{"garbage", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 16, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := SupervisedTarget(c.sa, c.addrlen, targets)
			if got != c.want || ok != (c.want != 0) {
				t.Fatalf("SupervisedTarget = %d, %v; want %d", got, ok, c.want)
			}
		})
	}
	for _, to := range []int{0, -1, 65536} {
		if _, ok := SupervisedTarget(proxy, 16, map[int]int{port: to}); ok {
			t.Errorf("relay port %d: a connect was let through", to)
		}
	}
	if _, ok := SupervisedTarget(proxy, 16, nil); ok {
		t.Error("no targets: a connect was let through")
	}
}

func TestFdinfoFlags(t *testing.T) {
	cases := []struct {
		in   string
		want uint32
		ok   bool
	}{
		{"pos:\t0\nflags:\t02004002\nmnt_id:\t15\nino:\t1234\n", 0o2004002, true},
		{"pos:\t0\nflags:\t02\n", 0o2, true},
		{"pos:\t0\nmnt_id:\t15\n", 0, false},
		{"flags:\tzz\n", 0, false},
		{"", 0, false},
	}
	for _, c := range cases {
		got, ok := fdinfoFlags([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("fdinfoFlags(%q) = %o, %v; want %o, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
