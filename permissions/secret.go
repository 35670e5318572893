package permissions

import "strings"

// secretWords are the name fragments that mark a parameter or an
// environment variable as secret (case-insensitive).
var secretWords = []string{"token", "secret", "password", "passwd", "key", "credential"}

// LooksSecret reports whether a parameter or environment variable name
// looks like it holds a secret: it contains token, secret, password,
// passwd, key or credential, in any case. The policy asks approval for
// env grants of such names from untrusted sources, the audit log masks
// such parameters, and explain flags them: all three use this one list.
func LooksSecret(name string) bool {
	l := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}
