package tool

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// The name checks are written by hand (they run on every load and bind);
// they must accept exactly what the expressions they stand for accept.
func TestNameChecksMatchTheirExpressions(t *testing.T) {
	checks := []struct {
		name string
		re   *regexp.Regexp
		f    func(string) bool
	}{
		{"isToolName", regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`), isToolName},
		{"isNameIdent", regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`), isNameIdent},
		{"isRef", regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*(\.(output|error|exit-code))?$`), isRef},
	}
	inputs := []string{
		"", "a", "A", "_", "-", ".", "0", "9", "a-b", "a_b", "a.b", "_a", "-a", ".a", "0a", "a0",
		"hello", "search-code", "tool.v2", "a\n", "\na", "a b", "é", "aé", "a\x00", "a/b", "a$", "{a}",
		"a.output", "a.error", "a.exit-code", "a.outputs", "a.", ".output", "a.b.output", "a.output.error",
		"_x.exit-code", "0x.output", "a-b.error", "a.Output", "a..output",
	}
	alphabet := []byte("aZ09_-.x\n é$/{}")
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, r.IntN(8))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		inputs = append(inputs, string(b))
	}
	for _, fixed := range []string{"output", "error", "exit-code"} {
		for _, in := range []string{"a", "_", "A-1", "0"} {
			inputs = append(inputs, in+"."+fixed)
		}
	}
	for _, c := range checks {
		for _, in := range inputs {
			if got, want := c.f(in), c.re.MatchString(in); got != want {
				t.Errorf("%s(%q) = %v, the expression says %v", c.name, in, got, want)
			}
		}
	}
}
