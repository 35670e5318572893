package sandbox

import (
	"fmt"
	"io"
	"time"
)

// Tracer prints how long each phase of a run took, for finding where a
// run's time goes (`SANDBOXED_TRACE=1 sandboxed run ...`). Nil-safe.
type Tracer struct {
	W     io.Writer
	start time.Time
	last  time.Time
}

// NewTracer starts a tracer at start (the process's start, ideally).
func NewTracer(w io.Writer, start time.Time) *Tracer {
	return &Tracer{W: w, start: start, last: start}
}

// Mark prints the time since the previous mark and since the start.
func (t *Tracer) Mark(phase string) {
	if t == nil {
		return
	}
	now := time.Now()
	fmt.Fprintf(t.W, "sandboxed trace: %-28s +%6.2fms  (%6.2fms)\n", phase,
		float64(now.Sub(t.last).Microseconds())/1000, float64(now.Sub(t.start).Microseconds())/1000)
	t.last = now
}

// Note prints a fact about the run (what the sandbox enforced) between
// the marks, without timing it.
func (t *Tracer) Note(format string, args ...any) {
	if t == nil {
		return
	}
	fmt.Fprintf(t.W, "sandboxed trace: "+format+"\n", args...)
}
