package sandbox

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/egress"
	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// caBundleName is the run's trust bundle in its host directory.
const caBundleName = "ca-bundle.crt"

// trustEnv are the variables that point common TLS stacks at a trust
// bundle: OpenSSL (and Python's ssl, Ruby, Go's crypto/x509), Python
// requests, Node.js (in addition to its own roots), curl and git.
var trustEnv = []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"}

// inspection is what credentials and HTTP rules add to a plan: the
// variables of the sandbox (stand-ins, trust bundle) and the bind of the
// trust bundle.
type inspection struct {
	env  []string
	opts []SpecOpt
}

// StandIn is the value the sandbox holds in place of the credential
// named name (index i of the definition's list) in run runID: per run
// (the run id carries 48 random bits), recognisable, never derived from
// the real value. Stand-ins of one run are never a prefix of one another.
func StandIn(runID string, i int, name string) string {
	return "sandboxed-stand-in-" + strings.ToLower(runID) + "-" + strconv.Itoa(i+1) + "-" + strings.ToLower(name)
}

// planInspection fills the egress section's credentials, HTTP rules and
// trust bundle from the definition's sandboxed section and the decision,
// and returns what the sandbox gets of them. Hosts are checked as the
// proxy will check them, so a plan the proxy would refuse is refused here.
//
// The run's trust bundle replaces the system bundle the sandbox's TLS
// stacks read: in a container (and a pod) the runner image's
// (isolation.SandboxCABundle); in the process tier, whose /etc is the
// host's, the host's (HostFacts.TrustBundle).
func planInspection(runID string, ext *tool.SandboxedExt, eg *isolation.Egress, d *policy.Decision, f *HostFacts, pod bool) (*inspection, error) {
	home := f.Home
	out := &inspection{}
	if len(ext.Credentials) == 0 && len(ext.HTTP) == 0 {
		return out, nil
	}
	if d.Isolation == tool.IsolationNone {
		return nil, fmt.Errorf("sandboxed.credentials and sandboxed.http are enforced by the egress proxy, and isolation none has none (the tool reaches the network directly): run the tool in the process or container tier: %w", ErrPlan)
	}
	if eg == nil {
		return nil, fmt.Errorf("sandboxed.credentials and sandboxed.http need network:external grants to their hosts; the tool has no network: %w", ErrPlan)
	}
	rules := egress.Rules{Allow: eg.Allow, Deny: eg.Deny, LocalhostPorts: eg.LocalhostPorts}
	hosts := func(what string, hs []string) ([]string, error) {
		var out []string
		for _, h := range hs {
			n, err := egress.CheckInspectHost(h)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", what, err)
			}
			if !(netrule.Rule{Host: n}).Wildcard() && !rules.AllowsHost(n) {
				return nil, fmt.Errorf("%s names %s, which no network:external grant allows; add network:external:%s to required-permissions: %w", what, n, n, ErrPlan)
			}
			out = append(out, n)
		}
		return out, nil
	}
	for i, c := range ext.Credentials {
		name := c.VarName()
		hs, err := hosts("credential "+name, c.Hosts)
		if err != nil {
			return nil, err
		}
		src := isolation.CredentialSource{Env: c.Env, Command: append([]string(nil), c.Command...)}
		if c.File != "" {
			src.Env = ""
			src.File = c.File
			if rest, ok := strings.CutPrefix(c.File, "~/"); ok {
				if !filepath.IsAbs(home) {
					return nil, fmt.Errorf("credential %s: file %s: the home directory is not known: %w", name, c.File, ErrPlan)
				}
				src.File = filepath.Join(home, rest)
			}
		}
		if len(c.Command) > 0 {
			src.Env = ""
		}
		standIn := StandIn(runID, i, name)
		eg.Credentials = append(eg.Credentials, isolation.Credential{Name: name, StandIn: standIn, Source: src, Hosts: hs})
		out.env = append(out.env, name+"="+standIn)
	}
	for i, r := range ext.HTTP {
		hr, err := netrule.CheckHTTPRule(netrule.HTTPRule{Host: r.Host, Methods: r.Methods, Paths: r.Paths})
		if err != nil {
			return nil, fmt.Errorf("sandboxed.http[%d]: %w", i, err)
		}
		if _, err := hosts(fmt.Sprintf("sandboxed.http[%d]", i), []string{hr.Host}); err != nil {
			return nil, err
		}
		eg.HTTP = append(eg.HTTP, hr)
	}
	inSandbox := isolation.SandboxCABundle
	if d.Isolation == tool.IsolationProcess && !pod {
		if f.TrustBundle == "" {
			return nil, fmt.Errorf("the process tier cannot give the sandbox the run's trust bundle: this host has no system trust bundle at %s reached through no symlink; run the tool in the container tier: %w",
				strings.Join(systemBundles, ", "), ErrPlan)
		}
		inSandbox = f.TrustBundle
	}
	eg.CABundle = filepath.Join(filepath.Dir(eg.ProxySocket), caBundleName)
	eg.ExtraCA = append([]string(nil), d.ExtraCA...)
	for _, k := range trustEnv {
		out.env = append(out.env, k+"="+inSandbox)
	}
	out.opts = append(out.opts, WithReadBind(eg.CABundle, inSandbox))
	return out, nil
}

// credentialSources are the host variables the credentials are read from.
func credentialSources(ext *tool.SandboxedExt) []string {
	var out []string
	for _, c := range ext.Credentials {
		if c.Env != "" {
			out = append(out, c.Env)
		}
	}
	return out
}
