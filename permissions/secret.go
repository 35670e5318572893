package permissions

import "strings"

// secretWords are the name fragments that mark a parameter or an
// environment variable as secret (case-insensitive, anywhere in the name).
var secretWords = []string{"token", "secret", "password", "passwd", "passphrase", "key", "credential",
	"bearer", "cookie", "session", "authorization"}

// secretParts are words that mark a name as secret only as a whole part
// of it (between _, -, . or the ends): AUTH and GH_AUTH, not AUTHOR.
var secretParts = []string{"auth", "pat", "pin", "otp"}

// LooksSecret reports whether a parameter or environment variable name
// looks like it holds a secret: it contains token, secret, password,
// passwd, passphrase, key, credential, bearer, cookie, session or
// authorization, or has auth, pat, pin or otp as a whole part, in any
// case. The policy asks approval for env grants of such names from
// untrusted sources, the audit log masks such parameters, and explain
// flags them: all three use this one list.
func LooksSecret(name string) bool {
	l := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	for _, part := range strings.FieldsFunc(l, func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		for _, w := range secretParts {
			if part == w {
				return true
			}
		}
	}
	return false
}
