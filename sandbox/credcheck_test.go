package sandbox

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/tool"
)

func TestMissingCredential(t *testing.T) {
	def := &tool.Definition{Sandboxed: &tool.SandboxedExt{Credentials: []tool.Credential{
		{Env: "API_TOKEN", Hosts: []string{"api.test"}, Setup: "https://api.test/tokens"},
		{Name: "KEY", File: "/x", Hosts: []string{"api.test"}},
	}}}
	missingFile := filepath.Join(t.TempDir(), "key")
	eg := func(srcs ...isolation.CredentialSource) *isolation.Egress {
		e := &isolation.Egress{}
		for i, s := range srcs {
			e.Credentials = append(e.Credentials, isolation.Credential{Name: []string{"API_TOKEN", "KEY"}[i], Source: s})
		}
		return e
	}
	tests := []struct {
		eg        *isolation.Egress
		env       []string
		msg, hint string // "" when nothing is missing
	}{
		{nil, nil, "", ""},
		{eg(isolation.CredentialSource{Env: "API_TOKEN"}), []string{"API_TOKEN=x"}, "", ""},
		{eg(isolation.CredentialSource{Env: "API_TOKEN"}), nil, "credential API_TOKEN reads the host variable API_TOKEN, which is not set", "set API_TOKEN in sandboxed's environment; get the credential: https://api.test/tokens"},
		{eg(isolation.CredentialSource{Env: "API_TOKEN"}), []string{"API_TOKEN="}, "API_TOKEN, which is not set", "https://api.test/tokens"},
		{eg(isolation.CredentialSource{Env: "API_TOKEN"}, isolation.CredentialSource{File: missingFile}), []string{"API_TOKEN=x"}, "credential KEY reads the file " + missingFile, "put the credential in " + missingFile},
		{eg(isolation.CredentialSource{Command: []string{"pass", "x"}}), nil, "", ""},
	}
	for i, tt := range tests {
		msg, hint, err := missingCredential(tt.eg, def, tt.env)
		if tt.msg == "" {
			if err != nil {
				t.Errorf("%d: %v", i, err)
			}
			continue
		}
		if !errors.Is(err, ErrMissingCredential) || !strings.Contains(msg, tt.msg) || !strings.HasPrefix(msg, "missing authentication:") || !strings.Contains(hint, tt.hint) {
			t.Errorf("%d: %q / %q / %v, want %q / %q", i, msg, hint, err, tt.msg, tt.hint)
		}
	}
}
