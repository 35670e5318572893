package egress

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
	"os"
	"sync"
	"time"
)

// CA is one run's certificate authority: the proxy signs with it the
// certificates it shows the sandbox for the hosts whose TLS it terminates
// (the hosts of credentials and HTTP rules). Its key exists only in this
// process's memory; the sandbox gets the certificate alone (CertPEM), in
// its trust bundle. It is valid for a short time from its creation.
type CA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	expires time.Time

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// NewCA makes a CA (ECDSA P-256) named after the run, valid from an hour
// ago (clock skew) for validity.
func NewCA(runID string, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("make run CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "sandboxed run " + runID, Organization: []string{"sandboxed egress proxy"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("make run CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("make run CA certificate: %w", err)
	}
	return &CA{cert: cert, key: key, expires: tmpl.NotAfter,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		leaves:  map[string]*tls.Certificate{}}, nil
}

// CertPEM is the CA's certificate, PEM-encoded: what the sandbox trusts.
func (ca *CA) CertPEM() []byte { return append([]byte(nil), ca.certPEM...) }

// leaf returns the certificate the proxy shows for host (a DNS name or an
// IP literal), signing it on first use.
func (ca *CA) leaf(host string) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c, ok := ca.leaves[host]; ok {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("make certificate for %s: %w", host, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    ca.cert.NotBefore,
		NotAfter:     ca.expires,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("make certificate for %s: %w", host, err)
	}
	c := &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key}
	ca.leaves[host] = c
	return c, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(fmt.Sprintf("read random: %v", err))
	}
	return n
}

// UpstreamRoots is the pool the proxy verifies the upstream certificates
// of terminated hosts against: the host's system roots plus the PEM
// certificates of extraCA files (an operator setting; tests use it for
// their own CA).
func UpstreamRoots(extraCA ...string) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	for _, f := range extraCA {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read extra CA: %w", err)
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("read extra CA %s: no PEM certificate in it", f)
		}
	}
	return pool, nil
}
