package sandbox

import (
	"bytes"
	"testing"
	"time"
)

func TestTracerNote(t *testing.T) {
	var nilTracer *Tracer
	nilTracer.Note("landlock abi %d", 7) // nil-safe
	var b bytes.Buffer
	NewTracer(&b, time.Now()).Note("landlock abi %d", 7)
	if got := b.String(); got != "sandboxed trace: landlock abi 7\n" {
		t.Errorf("Note wrote %q", got)
	}
}
