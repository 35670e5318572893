// Package dockerapi is the small Docker Engine API client the container tier
// and the image builder use: JSON over HTTP on the engine's socket, with the
// API version negotiated on first use, and the request and response types of
// github.com/docker/docker/api/types.
//
// It exists because github.com/docker/docker/client links packages whose
// init every command of the CLI would pay, `sandboxed run` on the process
// tier included: distribution/reference compiles its regular expressions
// (1.5 ms), and OpenTelemetry sets up its globals. The methods here keep
// that client's names and signatures, for the few calls sandboxed makes.
//
// Errors carry containerd/errdefs kinds (errdefs.IsNotFound,
// errdefs.IsConflict, ...) from the engine's status codes, and an engine
// that cannot be reached gives an error for which IsConnectionFailed holds.
package dockerapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	cerrdefs "github.com/containerd/errdefs"
)

// DefaultHost is the engine's socket when DOCKER_HOST is unset.
const DefaultHost = "unix:///var/run/docker.sock"

// maxVersion is the newest API version this client speaks (that of
// github.com/docker/docker/api/types at the version go.mod names); an older
// engine's version is used when it is lower.
const maxVersion = "1.50"

// Client talks to one Docker engine. It is safe for concurrent use.
type Client struct {
	host string // as DOCKER_HOST gives it: unix:///path or tcp://host:port
	base string // URL the requests go to, without the version
	http *http.Client

	mu      sync.Mutex
	version string // the API version in use; "" until negotiated
}

// FromEnv returns a client for DOCKER_HOST (DefaultHost when unset), with
// DOCKER_API_VERSION pinning the API version and DOCKER_CERT_PATH and
// DOCKER_TLS_VERIFY configuring TLS for a tcp:// engine, as the docker CLI
// reads them. It makes no request.
func FromEnv() (*Client, error) {
	host := os.Getenv("DOCKER_HOST")
	if host == "" {
		host = DefaultHost
	}
	var tlsConf *tls.Config
	if dir := os.Getenv("DOCKER_CERT_PATH"); dir != "" {
		var err error
		if tlsConf, err = loadTLS(dir, os.Getenv("DOCKER_TLS_VERIFY") != ""); err != nil {
			return nil, err
		}
	}
	c, err := New(host, tlsConf)
	if err != nil {
		return nil, err
	}
	c.version = os.Getenv("DOCKER_API_VERSION")
	return c, nil
}

// New returns a client for the engine at host (unix:///path, or
// tcp://host:port with tlsConf for TLS, nil for plain HTTP). It makes no
// request.
func New(host string, tlsConf *tls.Config) (*Client, error) {
	u, err := url.Parse(host)
	if err != nil || u.Scheme == "" {
		return nil, fmt.Errorf("docker host %q: want unix:///path or tcp://host:port", host)
	}
	tr := &http.Transport{DisableCompression: true, TLSClientConfig: tlsConf}
	c := &Client{host: host, http: &http.Client{Transport: tr}}
	switch u.Scheme {
	case "unix":
		sock := u.Path
		if sock == "" {
			return nil, fmt.Errorf("docker host %q: no socket path", host)
		}
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}
		c.base = "http://api.moby.localhost"
	case "tcp", "http", "https":
		scheme := "http"
		if tlsConf != nil || u.Scheme == "https" {
			scheme = "https"
		}
		c.base = scheme + "://" + u.Host
		tr.Proxy = http.ProxyFromEnvironment // as the docker CLI does for a TCP engine
	default:
		return nil, fmt.Errorf("docker host %q: scheme %s is not supported (want unix:// or tcp://)", host, u.Scheme)
	}
	return c, nil
}

func loadTLS(dir string, verify bool) (*tls.Config, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: !verify} //nolint:gosec // as DOCKER_TLS_VERIFY says
	if ca, err := os.ReadFile(filepath.Join(dir, "ca.pem")); err == nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("docker TLS: no certificate in %s", filepath.Join(dir, "ca.pem"))
		}
		conf.RootCAs = pool
	} else if verify {
		return nil, fmt.Errorf("docker TLS: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	if err == nil {
		conf.Certificates = []tls.Certificate{cert}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("docker TLS: %w", err)
	}
	return conf, nil
}

// DaemonHost is the engine's address as configured (DOCKER_HOST).
func (c *Client) DaemonHost() string { return c.host }

// ClientVersion is the API version in use: the negotiated one after the
// first request.
func (c *Client) ClientVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version == "" {
		return maxVersion
	}
	return c.version
}

// Close releases idle connections.
func (c *Client) Close() error {
	c.http.CloseIdleConnections()
	return nil
}

// ConnectionError is an engine that could not be reached.
type ConnectionError struct {
	Host string
	Err  error
}

func (e *ConnectionError) Error() string {
	if e.Denied() {
		return fmt.Sprintf("cannot connect to the Docker daemon at %s: this user may not use its socket (%v)", e.Host, e.Err)
	}
	return fmt.Sprintf("cannot connect to the Docker daemon at %s: is the docker daemon running? (%v)", e.Host, e.Err)
}

func (e *ConnectionError) Unwrap() error { return e.Err }

// Denied reports whether the engine's socket refused this user (the
// engine may well be running).
func (e *ConnectionError) Denied() bool { return errors.Is(e.Err, os.ErrPermission) }

// EngineFix says how to get at the engine after err, an error of this
// package: a socket this user may not use needs another fix than an
// engine that is not running.
func EngineFix(err error) string {
	var ce *ConnectionError
	if errors.As(err, &ce) && ce.Denied() {
		return "this user may not use the engine's socket: add it to the docker group (sudo usermod -aG docker $USER, then log in again; the group's members are root on this host), or set DOCKER_HOST to an engine it may use (rootless Docker)"
	}
	return "start the Docker engine (systemctl start docker) or set DOCKER_HOST"
}

// IsConnectionFailed reports whether err is an engine that could not be
// reached.
func IsConnectionFailed(err error) bool {
	var ce *ConnectionError
	return errors.As(err, &ce)
}

// Error is an error the engine answered with.
type Error struct {
	Status  int
	Message string
	kind    error // a containerd/errdefs error for the status
}

func (e *Error) Error() string { return "Error response from daemon: " + e.Message }

// Unwrap gives the errdefs kind of the status, for errdefs.IsNotFound and
// the like.
func (e *Error) Unwrap() error { return e.kind }

func statusKind(code int) error {
	switch code {
	case http.StatusBadRequest:
		return cerrdefs.ErrInvalidArgument
	case http.StatusUnauthorized:
		return cerrdefs.ErrUnauthenticated
	case http.StatusForbidden:
		return cerrdefs.ErrPermissionDenied
	case http.StatusNotFound:
		return cerrdefs.ErrNotFound
	case http.StatusConflict:
		return cerrdefs.ErrConflict
	case http.StatusNotImplemented:
		return cerrdefs.ErrNotImplemented
	case http.StatusServiceUnavailable:
		return cerrdefs.ErrUnavailable
	}
	if code >= 500 {
		return cerrdefs.ErrInternal
	}
	return cerrdefs.ErrUnknown
}

// negotiate settles the API version: the engine's when it is older than
// maxVersion, else maxVersion. A pinned version (DOCKER_API_VERSION) is kept.
func (c *Client) negotiate(ctx context.Context) (string, error) {
	c.mu.Lock()
	v := c.version
	c.mu.Unlock()
	if v != "" {
		return v, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/_ping", nil)
	if err != nil {
		return "", err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return "", c.connErr(ctx, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	v = resp.Header.Get("Api-Version")
	if v == "" {
		v = "1.24" // engines older than the header
	}
	if !versionLess(v, maxVersion) {
		v = maxVersion
	}
	c.mu.Lock()
	if c.version == "" {
		c.version = v
	}
	v = c.version
	c.mu.Unlock()
	return v, nil
}

func (c *Client) connErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return &ConnectionError{Host: c.host, Err: err}
}

// versionLess compares API versions MAJOR.MINOR numerically.
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// do sends one request to /vVERSION/path; body is JSON-encoded unless it is
// an io.Reader. A status of 400 or more is an *Error. The caller closes the
// returned body.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body any, header http.Header) (*http.Response, error) {
	v, err := c.negotiate(ctx)
	if err != nil {
		return nil, err
	}
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case io.Reader:
		r = b
	default:
		js, err := json.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("encode request to %s: %w", path, err)
		}
		r = bytes.NewReader(js)
		if header == nil {
			header = http.Header{}
		}
		header.Set("Content-Type", "application/json")
	}
	u := c.base + "/v" + v + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return nil, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.connErr(ctx, err)
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var m struct {
			Message string `json:"message"`
		}
		msg := strings.TrimSpace(string(data))
		if json.Unmarshal(data, &m) == nil && m.Message != "" {
			msg = m.Message
		}
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		return nil, &Error{Status: resp.StatusCode, Message: msg, kind: statusKind(resp.StatusCode)}
	}
	return resp, nil
}

// call sends a request and decodes a JSON answer into out (nil: the answer
// is dropped).
func (c *Client) call(ctx context.Context, method, path string, query url.Values, body, out any) error {
	resp, err := c.do(ctx, method, path, query, body, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decode the engine's answer to %s %s: %w", method, path, err)
	}
	return nil
}
