package policy

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sandboxed-dev/sandboxed/internal/pathglob"
	"github.com/sandboxed-dev/sandboxed/permissions"
)

// SecretRules are the names of files and folders that hold secrets (spec
// 003's read-only tier: "no access to .env, private keys, secrets"). Inside
// every granted folder, what they name is masked: the tool sees an empty
// file or an empty, unreadable folder. They are a list of their own, not
// paths.deny, because deny always wins and a mask must be liftable:
// Except lifts one, and a grant that names a secret itself may be approved.
type SecretRules struct {
	// Mask are the secret names, matched at any depth inside a grant: a
	// base name (".env", "*.pem") or a short relative path
	// (".kube/config"), in internal/pathglob's grammar.
	Mask []SecretName `yaml:"mask"`
	// Except are path patterns (as paths.*) that lift the masks: what
	// they match is not masked (**/*.pub: public keys), and a grant of it
	// needs no approval.
	Except []PathPattern `yaml:"except"`
}

// SecretName is an entry of secrets.mask.
type SecretName string

// SecretMaskGaps says what masks by name cannot catch; explain and the
// plan's notes carry it wherever secret masks apply.
const SecretMaskGaps = "secret masks (secrets.mask) match names: they do not catch a hard link to a secret under another name, " +
	"secrets committed in .git objects or packed in archives, or secrets written inside ordinary files"

// checkSecretName checks the shape of a secrets.mask entry.
func checkSecretName(s string) error {
	t := strings.TrimSuffix(s, "/")
	switch {
	case t == "":
		return fmt.Errorf("empty name: write a file or folder name matched inside grants (.env, *.pem, .kube/config), or remove the entry")
	case strings.HasPrefix(t, "/") || strings.HasPrefix(t, "~"):
		return fmt.Errorf("%q: write a name matched inside grants (.env, *.pem, .kube/config), not a path; paths go in paths.deny", s)
	case strings.Contains("/"+t+"/", "/../") || strings.Contains("/"+t+"/", "/./") || strings.Contains(t, "//"):
		return fmt.Errorf("%q: write it without ., .. and empty elements", s)
	case strings.Contains(t, "**"):
		return fmt.Errorf("%q: a name already matches at any depth; write it without **", s)
	case t == "*":
		return fmt.Errorf("%q would mask everything; grant less instead", s)
	}
	return nil
}

// secretRule is one compiled secrets.mask entry: the name matched at any
// depth ("**/NAME").
type secretRule struct {
	index int
	name  string
	rule  pathRule
}

func (r secretRule) ruleName() string { return fmt.Sprintf("secrets.mask[%d] %s", r.index, r.name) }

func (p *Policy) compileSecrets(homes []string) (names []secretRule, except []pathRule) {
	for i, n := range p.Secrets.Mask {
		name := strings.TrimSuffix(string(n), "/")
		if checkSecretName(name) != nil {
			continue // only a Policy built in code can hold one; Load refuses it
		}
		rs := compileRules("secrets.mask", []PathPattern{PathPattern("**/" + name)}, homes)
		for _, r := range rs {
			r.index = i
			names = append(names, secretRule{index: i, name: name, rule: r})
		}
	}
	return names, compileRules("secrets.except", p.Secrets.Except, homes)
}

// secretExcepts are the policy's secrets.except patterns with ~ expanded
// for every home, as Decision.SecretExcept carries them to the planner.
func secretExcepts(except []pathRule) []string {
	var out []string
	for _, r := range except {
		if !containsString(out, r.exp) {
			out = append(out, r.exp)
		}
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// decideSecrets returns the secret masks inside mount m, and the rule of
// the secret the grant itself names (declared or resolved path), if any.
// A name the grant is inside of is not masked again within it: the grant
// asked for that secret and its approval decides.
func decideSecrets(m *permissions.Mount, paths []string, names []secretRule, except []pathRule) (masks []PathMask, named *secretRule) {
	excepted := func(p string) bool {
		for _, r := range except {
			if r.matches(p) {
				return true
			}
		}
		return false
	}
	// A grant the exceptions cover (a folder where secrets are expected,
	// or too large to look through) has no secret masks at all.
	all := len(paths) > 0
	for _, p := range paths {
		all = all && excepted(p)
	}
	if all {
		return nil, nil
	}
	for i := range names {
		r := names[i]
		hit := false
		for _, p := range paths {
			if r.rule.matches(p) && !excepted(p) {
				hit = true
			}
		}
		if hit {
			if named == nil {
				named = &r
			}
			continue
		}
		mk := PathMask{Path: filepath.Join(m.Target, "**", r.name), Under: m.Target, Hide: true, Rule: r.ruleName(), Secret: true}
		if !containsMask(masks, mk) {
			masks = append(masks, mk)
		}
	}
	return masks, named
}

func containsMask(ms []PathMask, m PathMask) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// namedSecretItem is the verdict on a grant that names a secret itself.
func namedSecretItem(it Item, m *permissions.Mount, r *secretRule) Item {
	it.Verdict, it.Risk, it.ApproveFlag = NeedsApproval, RiskHigh, it.Subject
	it.Rule = r.ruleName() + " (the grant names it)"
	it.Reason = fmt.Sprintf("%s is named like a secret (%s): inside other grants it is masked; granted by name, the tool reads it", m.HostPath, r.name)
	it.PolicyFix = "secrets.except: [" + m.HostPath + "], or approval.standing: [" + it.Subject + "]"
	return it
}

// SecretExcepted reports whether host path p is lifted from the secret
// masks by secrets.except (Decision.SecretExcept): the planner keeps such
// matches visible. Matching is the policy's own (a path equal to a pattern
// or under it).
func (d *Decision) SecretExcepted(p string) bool {
	for _, pat := range d.SecretExcept {
		if pathglob.Compile(pat, true).Match(p) {
			return true
		}
	}
	return false
}

// DefaultSecretNames are the built-in secrets.mask: environment files,
// private keys (public ones are excepted by **/*.pub), certificates and
// keys in PEM, the folders of ssh, cloud and GnuPG keys, and the files of
// git, npm, PyPI, kubectl and Docker that hold tokens.
func DefaultSecretNames() []SecretName {
	return []SecretName{
		".env", ".env.*",
		"id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
		"*.pem", "*.key", "*.p12", "*.pfx",
		".ssh", ".aws", ".gnupg", ".azure", ".config/gcloud", ".config/gh",
		".netrc", ".git-credentials", ".npmrc", ".pypirc",
		".kube/config", ".docker/config.json",
	}
}
