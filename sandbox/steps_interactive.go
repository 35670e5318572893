package sandbox

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// Interactive tools (interactive: true). Without a terminal, each step's
// stdin is the default response (interactive-options.default-response)
// and a newline, so a prompt reads it instead of waiting for input that
// never comes. With a terminal (Job.Stdin), a step reads what the user
// types; when nothing arrives within interactive-options.timeout (default
// defaultInputTimeout), it gets the default response instead.

// defaultInputTimeout is how long an interactive step waits for the user
// when interactive-options.timeout is not set.
const defaultInputTimeout = 30 * time.Second

// terminalInput reads the terminal in one goroutine, line by line, so
// every step can take the lines typed while it runs. The goroutine may
// stay blocked in a read until the process exits: a terminal read cannot
// be cancelled.
type terminalInput struct {
	once  sync.Once
	r     io.Reader
	lines chan []byte
}

func newTerminalInput(r io.Reader) *terminalInput {
	return &terminalInput{r: r, lines: make(chan []byte)}
}

func (t *terminalInput) start() {
	t.once.Do(func() {
		go func() {
			br := bufio.NewReader(t.r)
			for {
				line, err := br.ReadBytes('\n')
				if len(line) > 0 {
					t.lines <- line
				}
				if err != nil {
					close(t.lines)
					return
				}
			}
		}()
	})
}

// stepReader is one step's view of the terminal: lines as they are typed;
// the default response when the user types nothing in time; end of input
// after a quiet timeout.
func (t *terminalInput) stepReader(def []byte, timeout time.Duration) io.Reader {
	t.start()
	if timeout <= 0 {
		timeout = defaultInputTimeout
	}
	return &ttyStepReader{t: t, def: def, timeout: timeout}
}

type ttyStepReader struct {
	t       *terminalInput
	def     []byte
	timeout time.Duration
	pending []byte
	got     bool
	done    bool
}

func (s *ttyStepReader) Read(p []byte) (int, error) {
	if len(s.pending) == 0 {
		if s.done {
			return 0, io.EOF
		}
		timer := time.NewTimer(s.timeout)
		select {
		case line, ok := <-s.t.lines:
			timer.Stop()
			if !ok {
				s.done = true
				if !s.got {
					s.pending, s.got = s.def, true
				}
				break
			}
			s.pending, s.got = line, true
		case <-timer.C:
			s.done = true
			if !s.got {
				s.pending, s.got = s.def, true
			}
		}
		if len(s.pending) == 0 {
			return 0, io.EOF
		}
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}
