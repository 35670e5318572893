package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/sandbox"
)

// Ctrl-C at a review's prompt applies nothing: the prompt stops waiting,
// and a "y" typed after the interrupt does not count.
func TestReviewPromptInterrupted(t *testing.T) {
	ch := &sandbox.ChangesInfo{Modified: 1, Diff: "  modified  a.txt\n"}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	blocked, _ := io.Pipe() // nobody answers
	tests := []struct {
		name  string
		ctx   context.Context
		in    io.Reader
		apply bool
		err   bool
	}{
		{"yes", context.Background(), strings.NewReader("y\n"), true, false},
		{"no answer", context.Background(), strings.NewReader(""), false, false},
		{"interrupted while waiting", cancelled, blocked, false, true},
		{"yes after the interrupt", cancelled, strings.NewReader("yes\n"), false, true},
	}
	for _, tt := range tests {
		type result struct {
			ok  bool
			err error
		}
		done := make(chan result, 1)
		go func() {
			var out bytes.Buffer
			ok, err := reviewPrompt(tt.ctx, &out, tt.in, ch, true)
			done <- result{ok, err}
		}()
		select {
		case r := <-done:
			if r.ok != tt.apply || (r.err != nil) != tt.err {
				t.Errorf("%s: apply %v, err %v; want apply %v, an error %v", tt.name, r.ok, r.err, tt.apply, tt.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the prompt still waits for an answer", tt.name)
		}
	}
}

// Before it applies, the prompt says how to undo: a controller killed
// while applying says nothing more.
func TestReviewPromptSaysHowToUndo(t *testing.T) {
	ch := &sandbox.ChangesInfo{Modified: 1, Diff: "  modified  a.txt\n", RunID: "R1"}
	var out bytes.Buffer
	ok, err := reviewPrompt(context.Background(), &out, strings.NewReader("y\n"), ch, true)
	if !ok || err != nil || !strings.Contains(out.String(), "interrupted, sandboxed undo R1 puts back") {
		t.Errorf("apply %v, err %v, prompt:\n%s", ok, err, out.String())
	}
	out.Reset()
	if ok, _ := reviewPrompt(context.Background(), &out, strings.NewReader("n\n"), ch, true); ok || strings.Contains(out.String(), "undo") {
		t.Errorf("declined: apply %v, prompt:\n%s", ok, out.String())
	}
}
