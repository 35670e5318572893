package main

import (
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// catchBrokenPipes makes a write to a closed stdout or stderr fail with
// EPIPE instead of killing the process with SIGPIPE, which is what Go
// does for fds 1 and 2 unless SIGPIPE is caught. A resident server (mcp,
// serve) whose client went away must live on long enough to tear down
// the sandboxes of the calls in flight.
//
// The signal is caught, not ignored: an ignored signal is inherited
// across exec, and every tool would start with SIGPIPE ignored; a caught
// one is reset to its default in the child. The catch lasts as long as
// the process.
func catchBrokenPipes() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}

// droppingWriter writes diagnostics to w until a write fails (the reader
// of stderr is gone), and drops them from then on: a diagnostic that
// cannot be written is never a reason to stop.
type droppingWriter struct {
	mu   sync.Mutex
	w    io.Writer
	gone bool
}

func dropOnError(w io.Writer) *droppingWriter { return &droppingWriter{w: w} }

func (d *droppingWriter) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.gone {
		if _, err := d.w.Write(p); err != nil {
			d.gone = true
		}
	}
	return len(p), nil
}
