package landlock_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// fakeProxy listens on path and greets each connection with "proxied",
// counting them.
func fakeProxy(t *testing.T, path string) *atomic.Int64 {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o666)
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Write([]byte("proxied\n"))
			c.Close()
		}
	}()
	return &n
}

// A run with egress reaches its proxy at 127.0.0.1:ProxyPort and nothing
// else: not the proxy's port on another address, not another port, not
// IPv6, not a Unix socket; and the relay the init runs on the host's
// loopback serves no one but the init's own connections.
func TestSupervisedConnect(t *testing.T) {
	ctx := context.Background()
	p := plan(t, isolation.Limits{})
	dir := filepath.Dir(p.Scratch)
	os.Chmod(dir, 0o755)
	withEgress(p, nil)
	proxied := fakeProxy(t, p.Egress.ProxySocket)
	// A listener of the host's on loopback: the tool must not reach it.
	other, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var strays atomic.Int64
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			strays.Add(1)
			c.Close()
		}
	}()
	otherPort := other.Addr().(*net.TCPAddr).Port
	unixSock := filepath.Join(dir, "host.sock")
	if ul, err := net.Listen("unix", unixSock); err == nil {
		os.Chmod(unixSock, 0o666)
		defer ul.Close()
	}
	sb := start(t, p)
	tcp := func(host string, port int) string {
		return fmt.Sprintf("bash -c 'exec 3<>/dev/tcp/%s/%d && head -c 7 <&3' || echo refused", host, port)
	}
	// The system's python (a user's may live where the tool cannot read).
	py := func(code string) string {
		return "/usr/bin/python3 -c 'import socket\ntry:\n    " + code + "\n    print(\"reached\")\nexcept OSError as e:\n    print(\"refused\", e.errno)'"
	}
	cases := []struct{ name, script, want string }{
		{"the proxy", tcp("127.0.0.1", 3128), "proxied"},
		// Python's sockets are close-on-exec; this one is non-blocking
		// too: the injected socket keeps both.
		{"the proxy, non-blocking", py("import fcntl, os, select; s=socket.socket(); s.setblocking(False); print(s.connect_ex((\"127.0.0.1\", 3128)), fcntl.fcntl(s, fcntl.F_GETFL) & os.O_NONBLOCK != 0, fcntl.fcntl(s, fcntl.F_GETFD)); select.select([s], [], [], 5); print(s.recv(7).decode())"),
			"0 True 1\nproxied"},
		{"the proxy's port on 127.0.0.2", tcp("127.0.0.2", 3128), "refused"},
		{"the proxy's port on 0.0.0.0", tcp("0.0.0.0", 3128), "refused"},
		{"the proxy's port on ::1", tcp("::1", 3128), "refused"},
		{"a host listener", tcp("127.0.0.1", otherPort), "refused"},
		{"a unix socket", py("socket.socket(socket.AF_UNIX).connect(\"" + unixSock + "\")"), "refused 97"},
		{"udp", py("socket.socket(socket.AF_INET, socket.SOCK_DGRAM)"), "refused 97"},
		{"bind", py("socket.socket().bind((\"127.0.0.1\", 0))"), "refused 1"},
		{"the proxy's port on 127.0.0.2, errno", py("socket.create_connection((\"127.0.0.2\", 3128))"), "refused 111"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, exit := run(t, ctx, sb, p, c.script)
			if !strings.Contains(out, c.want) || (strings.HasPrefix(c.want, "refused") && strings.Contains(out, "proxied")) {
				t.Fatalf("%s: want %q in (exit %+v):\n%s", c.script, c.want, exit, out)
			}
		})
	}
	if strays.Load() != 0 {
		t.Fatalf("the host's listener accepted %d connections from the tool", strays.Load())
	}
	// Another process of the host that finds the relay's port gets
	// nothing through it.
	before := proxied.Load()
	ports := initListeners(t)
	if len(ports) == 0 {
		t.Fatal("found no listener of the init")
	}
	for _, port := range ports {
		c, err := net.DialTimeout("tcp4", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err != nil {
			continue
		}
		c.SetDeadline(time.Now().Add(2 * time.Second))
		c.Write([]byte("GET http://x/ HTTP/1.0\r\n\r\n"))
		b, _ := io.ReadAll(c)
		c.Close()
		if len(b) > 0 {
			t.Fatalf("the relay on port %d served a stranger: %q", port, b)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if proxied.Load() != before {
		t.Fatal("a stranger's connection reached the proxy")
	}
}

// initListeners are the TCP ports the landlock-tier inits this process
// started listen on.
func initListeners(t *testing.T) []int {
	t.Helper()
	inodes := map[string]bool{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil || !strings.Contains(string(b), "(sandboxed-init)") {
			continue
		}
		f := strings.Fields(string(b)[strings.LastIndex(string(b), ")")+1:])
		if len(f) < 2 || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		fds, _ := os.ReadDir("/proc/" + e.Name() + "/fd")
		for _, fd := range fds {
			l, _ := os.Readlink("/proc/" + e.Name() + "/fd/" + fd.Name())
			if ino, ok := strings.CutPrefix(l, "socket:["); ok {
				inodes[strings.TrimSuffix(ino, "]")] = true
			}
		}
	}
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ports []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		// local_address st ... inode: a listener (0A) of an init's.
		if len(fl) < 10 || fl[3] != "0A" || !inodes[fl[9]] {
			continue
		}
		if i := strings.IndexByte(fl[1], ':'); i > 0 {
			if port, err := strconv.ParseInt(fl[1][i+1:], 16, 32); err == nil {
				ports = append(ports, int(port))
			}
		}
	}
	return ports
}
