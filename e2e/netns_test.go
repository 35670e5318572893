package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The test network: one test host in its own network namespace, reached
// from the host over a veth pair in the documentation range 198.51.100.0/24.
// It serves HTTP on :80 and HTTPS on :443 (a certificate for every test
// name, signed by a CA the tests hand to curl). Names reach the egress
// proxy through the operator-only hosts file (SANDBOXED_TEST_HOSTS_FILE).
const (
	testNS     = "sbxe2e-web"
	hostVeth   = "sbxe2e-h"
	nsVeth     = "sbxe2e-n"
	hostAddr   = "198.51.100.1"
	webAddr    = "198.51.100.2"
	serveEnv   = "SANDBOXED_E2E_SERVE" // set in the re-executed test binary
	webBody    = "hello from the test host\n"
	bigBodyLen = 1024
)

// testNames are the names the hosts file gives the proxy.
var testNames = map[string]string{
	"web.test":      webAddr,
	"other.test":    webAddr, // another name on the same address
	"wild.test":     webAddr, // the apex of *.wild.test
	"a.wild.test":   webAddr,
	"rebind.test":   "127.0.0.1",       // a granted name that resolves to loopback
	"metadata.test": "169.254.169.254", // ... or to the cloud metadata address
}

var testNet struct {
	hostsFile string
	caFile    string
	server    *exec.Cmd
}

// serveIfAsked turns the re-executed test binary into the test host's
// servers. It never returns when asked.
func serveIfAsked() {
	dir := os.Getenv(serveEnv)
	if dir == "" {
		return
	}
	// The servers never outlive the test binary that started them, even
	// when it is killed before its teardown (a test timeout, SIGKILL): an
	// orphan would keep the test network's address, and every descriptor
	// it inherited, such as a lock the suite's caller holds.
	parent := os.Getppid()
	go func() {
		for range time.Tick(200 * time.Millisecond) {
			if os.Getppid() != parent {
				os.Exit(1)
			}
		}
	}()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s", webBody)
	})
	mux.HandleFunc("/1k", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat("x", bigBodyLen)))
	})
	mux.HandleFunc("/echo/", echoRequest)
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Millisecond)
		fmt.Fprintf(w, "slow ok\n")
	})
	go func() {
		err := http.ListenAndServeTLS(webAddr+":443", filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), mux)
		fmt.Fprintln(os.Stderr, "tls server:", err)
		os.Exit(1)
	}()
	err := http.ListenAndServe(webAddr+":80", mux)
	fmt.Fprintln(os.Stderr, "http server:", err)
	os.Exit(1)
}

// setupNet builds the namespace, the veth pair and the servers. It is
// undone by teardownNet, also after a failed setup.
func setupNet(root string) error {
	teardownNet() // a previous run that crashed
	steps := [][]string{
		{"ip", "netns", "add", testNS},
		{"ip", "link", "add", hostVeth, "type", "veth", "peer", "name", nsVeth},
		{"ip", "link", "set", nsVeth, "netns", testNS},
		{"ip", "addr", "add", hostAddr + "/24", "dev", hostVeth},
		{"ip", "link", "set", hostVeth, "up"},
		{"ip", "netns", "exec", testNS, "ip", "addr", "add", webAddr + "/24", "dev", nsVeth},
		{"ip", "netns", "exec", testNS, "ip", "link", "set", nsVeth, "up"},
		{"ip", "netns", "exec", testNS, "ip", "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	dir := filepath.Join(root, "net")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeCerts(dir); err != nil {
		return err
	}
	testNet.caFile = filepath.Join(dir, "ca.crt") // not *.pem: secrets.mask names those
	var hosts strings.Builder
	for name, addr := range testNames {
		fmt.Fprintf(&hosts, "%s %s\n", name, addr)
	}
	testNet.hostsFile = filepath.Join(dir, "hosts")
	if err := os.WriteFile(testNet.hostsFile, []byte(hosts.String()), 0o644); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	srv := exec.Command("ip", "netns", "exec", testNS, self)
	srv.Env = append(os.Environ(), serveEnv+"="+dir)
	srv.Stderr = os.Stderr
	srv.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := srv.Start(); err != nil {
		return fmt.Errorf("start test host servers: %w", err)
	}
	testNet.server = srv
	for i := 0; i < 100; i++ {
		if c, err := net.DialTimeout("tcp", webAddr+":80", 100*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("the test host at %s does not answer", webAddr)
}

func teardownNet() {
	if testNet.server != nil && testNet.server.Process != nil {
		testNet.server.Process.Kill()
		testNet.server.Wait()
		testNet.server = nil
	}
	exec.Command("ip", "link", "del", hostVeth).Run()
	exec.Command("ip", "netns", "del", testNS).Run()
}

// writeCerts makes a CA and a server certificate for every test name.
func writeCerts(dir string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sandboxed e2e CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	var names []string
	for n := range testNames {
		names = append(names, n)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "web.test"}, DNSNames: names,
		IPAddresses: []net.IP{net.ParseIP(webAddr)},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"ca.crt":   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		"cert.pem": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"key.pem":  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			return err
		}
	}
	_ = tls.VersionTLS12
	return nil
}
