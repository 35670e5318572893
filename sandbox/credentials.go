package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/egress"
)

// RunSecrets are what a run's egress proxy needs besides its plan: the
// real values of the credentials and the run's CA. They exist only in the
// controller's memory and the proxy's; nothing writes them anywhere.
type RunSecrets struct {
	// Values are the credentials' real values by credential name.
	Values map[string]string
	// CA signs the certificates of the hosts whose TLS the proxy
	// terminates; nil when it terminates none.
	CA *egress.CA
}

// Limits of reading a credential's value.
const (
	credentialCommandTimeout = 30 * time.Second
	maxCredentialBytes       = 64 << 10
)

// readCredentials reads the real value of every credential of e; env is
// the environment of env sources and of commands (nil: this process's).
func readCredentials(ctx context.Context, e *isolation.Egress, env []string) (map[string]string, error) {
	if env == nil {
		env = os.Environ()
	}
	out := map[string]string{}
	for _, c := range e.Credentials {
		v, err := readCredential(ctx, c, env)
		if err != nil {
			return nil, fmt.Errorf("credential %s: %w", c.Name, err)
		}
		out[c.Name] = v
	}
	return out, nil
}

func readCredential(ctx context.Context, c isolation.Credential, env []string) (string, error) {
	var raw []byte
	switch s := c.Source; {
	case s.File != "":
		f, err := os.Open(s.File)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", s.File, err)
		}
		defer f.Close()
		var buf bytes.Buffer
		if _, err := buf.ReadFrom(io.LimitReader(f, maxCredentialBytes+1)); err != nil {
			return "", fmt.Errorf("read %s: %w", s.File, err)
		}
		raw = buf.Bytes()
	case len(s.Command) > 0:
		out, err := runCredentialCommand(ctx, s.Command, env)
		if err != nil {
			return "", err
		}
		raw = out
	default:
		v, ok := lookupIn(env, s.Env)
		if !ok {
			return "", fmt.Errorf("the host variable %s is not set; set it in sandboxed's environment", s.Env)
		}
		raw = []byte(v)
	}
	if len(raw) > maxCredentialBytes {
		return "", fmt.Errorf("the value is longer than %d bytes", maxCredentialBytes)
	}
	v := strings.TrimSuffix(strings.TrimSuffix(string(raw), "\n"), "\r")
	if v == "" {
		return "", errors.New("the value is empty")
	}
	if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", errors.New("the value holds control characters (a newline inside?); a credential is one line of text")
	}
	if strings.Contains(v, c.StandIn) || strings.Contains(c.StandIn, v) {
		return "", errors.New("the value and its stand-in contain one another")
	}
	return v, nil
}

// runCredentialCommand runs argv on the host, as the invoking user (under
// sudo, SUDO_USER), without a shell, and returns its standard output.
func runCredentialCommand(ctx context.Context, argv, env []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, credentialCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = firstOfEach(env)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if os.Geteuid() == 0 && os.Getenv("SUDO_USER") != "" {
		uid, gid := invokingUser()
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	}
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		if msg != "" {
			return nil, fmt.Errorf("run %s: %w: %s", argv[0], err, msg)
		}
		return nil, fmt.Errorf("run %s: %w", argv[0], err)
	}
	return out, nil
}

// startInspection reads the credentials' values (env as readCredentials),
// makes the run's CA and writes the sandbox's trust bundle (the host's system bundle, then the
// run CA) at e.CABundle. Call it after the run's host directory exists.
func startInspection(ctx context.Context, e *isolation.Egress, runID string, timeout time.Duration, env []string) (*RunSecrets, error) {
	if e.CABundle == "" {
		return &RunSecrets{}, nil
	}
	values, err := readCredentials(ctx, e, env)
	if err != nil {
		return nil, err
	}
	validity := 24 * time.Hour
	if timeout > 0 {
		validity = timeout + time.Hour
	}
	ca, err := egress.NewCA(runID, validity)
	if err != nil {
		return nil, err
	}
	bundle := systemBundle()
	if len(bundle) > 0 && !bytes.HasSuffix(bundle, []byte("\n")) {
		bundle = append(bundle, '\n')
	}
	bundle = append(bundle, ca.CertPEM()...)
	if err := os.WriteFile(e.CABundle, bundle, 0o644); err != nil {
		return nil, fmt.Errorf("write the run's trust bundle: %w", err)
	}
	return &RunSecrets{Values: values, CA: ca}, nil
}

// systemBundles are where hosts keep their trust bundle, most common
// first.
var systemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",                // Debian, Ubuntu, Alpine, Arch
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // Fedora, RHEL (what /etc/pki/tls/certs/ca-bundle.crt links to)
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem", // openSUSE
	"/etc/ssl/cert.pem",
}

// systemBundle is the host's trust bundle, or nothing when it has none
// (the sandbox then trusts the run CA alone).
func systemBundle() []byte {
	for _, p := range systemBundles {
		if b, err := os.ReadFile(p); err == nil && len(b) > 0 {
			return b
		}
	}
	return nil
}

// hostTrustBundle is the first of systemBundles that is a regular file
// reached through no symlink: the process tier recreates the host's
// symlinks in the sandbox's /etc and never mounts through one.
func hostTrustBundle() string {
next:
	for _, p := range systemBundles {
		for q := p; q != "/"; q = filepath.Dir(q) {
			st, err := os.Lstat(q)
			if err != nil || st.Mode()&os.ModeSymlink != 0 || (q == p && !st.Mode().IsRegular()) {
				continue next
			}
		}
		return p
	}
	return ""
}

// redactor replaces credential values with a marker naming them, for
// whatever is recorded or reported of a run.
type redactor struct {
	old, new []string
}

func newRedactor(values map[string]string) *redactor {
	r := &redactor{}
	for name, v := range values {
		r.old = append(r.old, v)
		r.new = append(r.new, "[credential "+name+" redacted]")
	}
	return r
}

func (r *redactor) str(s string) string {
	if r == nil {
		return s
	}
	for i, v := range r.old {
		s = strings.ReplaceAll(s, v, r.new[i])
	}
	return s
}

func (r *redactor) bytes(b []byte) []byte {
	if r == nil {
		return b
	}
	for i, v := range r.old {
		b = bytes.ReplaceAll(b, []byte(v), []byte(r.new[i]))
	}
	return b
}

// result redacts every text of a result.
func (r *redactor) result(res *Result) {
	if r == nil || len(r.old) == 0 {
		return
	}
	res.Stdout, res.Stderr = r.str(res.Stdout), r.str(res.Stderr)
	for i := range res.Egress {
		res.Egress[i].Reason = r.str(res.Egress[i].Reason)
	}
	for i := range res.Steps {
		res.Steps[i].Reason = r.str(res.Steps[i].Reason)
	}
	for i := range res.Warnings {
		res.Warnings[i] = r.str(res.Warnings[i])
	}
	if res.Error != nil {
		res.Error.Message, res.Error.Hint = r.str(res.Error.Message), r.str(res.Error.Hint)
	}
}

// credentialWarnings are the warnings of a run whose tool sent a stand-in
// where its credential may not go.
func credentialWarnings(entries []EgressEntry) []string {
	var out []string
	for _, e := range entries {
		if e.Verdict == string(egress.RefusedCredential) {
			out = append(out, fmt.Sprintf("the tool sent a credential's stand-in to %s:%d, where it may not go; the request was refused (%s)", e.Host, e.Port, e.Reason))
		}
	}
	return out
}

// lookupIn is os.LookupEnv in env: the first of a name.
func lookupIn(env []string, name string) (string, bool) {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// firstOfEach keeps the first of each name of env, as os.Getenv reads it
// (exec would keep the last).
func firstOfEach(env []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !seen[k] {
			seen[k] = true
			out = append(out, kv)
		}
	}
	return out
}
