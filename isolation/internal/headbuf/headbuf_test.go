package headbuf

import (
	"strings"
	"testing"
)

func TestBuffer(t *testing.T) {
	var b Buffer
	if n := b.Note("the init"); n != "" {
		t.Errorf("empty note %q", n)
	}
	n, err := b.Write([]byte(" boom \n"))
	if n != 7 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if got := b.Note("the init"); got != " (the init said: boom)" {
		t.Errorf("note %q", got)
	}
	b.Write([]byte(strings.Repeat("x", 2*Size)))
	if n, _ := b.Write([]byte("late")); n != 4 || len(b.b) != Size || strings.Contains(b.Note("x"), "late") {
		t.Errorf("kept %d bytes", len(b.b))
	}
}
