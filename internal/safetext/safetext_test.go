package safetext

import "testing"

func TestLineEscapesWhatHidesOrReorders(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text, ünïcode", "plain text, ünïcode"},
		{"a\nb\tc", `a\x0ab\x09c`},
		{"\x1b[2Jclear", `\x1b[2Jclear`},
		{"bad\xffbyte", `bad\xffbyte`},
		{"c1\u009bcsi", `c1\u009bcsi`},
		{"evil\u202Egnp.exe", `evil\u202egnp.exe`},     // right-to-left override
		{"iso\u2066late\u2069", `iso\u2066late\u2069`}, // isolates
		{"zero\u200Bwidth\u200D", `zero\u200bwidth\u200d`},
		{"\uFEFFbom", `\ufeffbom`},
		{"line\u2028sep", `line\u2028sep`},
	} {
		if got := Line(c.in); got != c.want {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
