package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// hostile is text from a definition or an argument that would drive a
// terminal: conceal what follows, erase the line, move the cursor, and a
// C1 control (CSI) written as UTF-8.
const hostile = "safe\x1b[8m\x1b[2K\r\x1b[1A\u009b2Jhidden\x07"

// noControls fails when out holds a control character other than a
// newline or a tab.
func noControls(t *testing.T, what, out string) {
	t.Helper()
	for _, r := range out {
		if r != '\n' && r != '\t' && (r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f) {
			t.Fatalf("%s prints control character %U:\n%q", what, r, out)
		}
	}
	if !strings.Contains(out, "hidden") {
		t.Fatalf("%s dropped the text around the controls:\n%q", what, out)
	}
}

// What a tool or an agent wrote reaches a terminal only as visible text:
// a security review, an approval prompt or a listing must not be
// rewritten by the tool it shows. Before, a description such as
// "\x1b[8m" made everything after it invisible in permissions explain,
// verdict included.
func TestUntrustedTextCannotDriveTheTerminal(t *testing.T) {
	home, _ := isolate(t)
	def := writeTool(t, home, "esc.yaml", "name: esc\ndescription: \""+strings.NewReplacer("\x1b", `\e`, "\r", `\r`, "\x07", `\a`, "\u009b", `\x9b`).Replace(hostile)+"\"\nbash: echo hi\n")
	out, errOut, code := runApp(t, "permissions", "explain", def)
	if code != 0 && code != 126 {
		t.Fatalf("explain: %d %s", code, errOut)
	}
	noControls(t, "permissions explain", out)

	var w bytes.Buffer
	d := &policy.Decision{Items: []policy.Item{{Subject: "filesystem:read:/tmp/" + hostile, Verdict: policy.NeedsApproval, Description: hostile, Reason: hostile}}}
	if _, err := promptApproval(&w, strings.NewReader("n\n"), &tool.Definition{Name: "esc"}, d); err != nil {
		t.Fatal(err)
	}
	noControls(t, "the approval prompt", w.String())

	var tw bytes.Buffer
	if _, err := terminalSafe(&tw).Write([]byte("a\tb\n" + hostile + "\xff\xfe é")); err != nil {
		t.Fatal(err)
	}
	noControls(t, "terminalSafe", tw.String())
	if !strings.HasPrefix(tw.String(), "a\tb\nsafe") || !strings.HasSuffix(tw.String(), " é") {
		t.Errorf("terminalSafe changed ordinary text: %q", tw.String())
	}
}
