// Package headbuf keeps the start of what a sandbox's init or bridge says
// on its standard error, for the error that reports it going away. The
// container and Kubernetes backends share it.
package headbuf

import (
	"strings"
	"sync"
)

// Size is how much a Buffer keeps.
const Size = 4096

// Buffer is an io.Writer that keeps the first Size bytes written to it and
// drops the rest. It is safe for concurrent use; the zero value is ready.
type Buffer struct {
	mu sync.Mutex
	b  []byte
}

// Write keeps what fits and reports all of p written.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := Size - len(b.b); room > 0 {
		b.b = append(b.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

// Note is what was kept, trimmed, as a suffix for an error: " (WHO said:
// …)", or "" when nothing was said.
func (b *Buffer) Note(who string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := strings.TrimSpace(string(b.b)); s != "" {
		return " (" + who + " said: " + s + ")"
	}
	return ""
}
