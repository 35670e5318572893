package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// fakeBackend runs "commands" as Go functions, to test the controller's
// bookkeeping without a kernel.
type fakeBackend struct {
	checkErr error
	startErr error
	gcErr    error
	stats    isolation.Stats
	sb       *fakeSandbox
	starts   int
	log      *execLog
	// got is the plan Start was given, as JSON.
	got []byte
}

// execLog records every Exec (by command name) with its start and end.
type execLog struct {
	mu      sync.Mutex
	entries []execEntry
}

type execEntry struct {
	name       string
	args       []string
	start, end time.Time
	stdin      string
}

func (l *execLog) add(e execEntry) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, e)
}

func (l *execLog) find(name string) []execEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []execEntry
	for _, e := range l.entries {
		if e.name == name {
			out = append(out, e)
		}
	}
	return out
}

func (f *fakeBackend) Tier() isolation.Tier                         { return isolation.TierProcess }
func (f *fakeBackend) Check(context.Context, *isolation.Plan) error { return f.checkErr }
func (f *fakeBackend) GC(context.Context, func(string) bool) ([]string, error) {
	return nil, f.gcErr
}
func (f *fakeBackend) Start(ctx context.Context, p *isolation.Plan) (isolation.Sandbox, error) {
	if f.startErr != nil {
		return nil, f.startErr
	}
	if _, err := os.Stat(p.HostDir); err != nil {
		return nil, errors.New("host dir missing")
	}
	f.starts++
	f.got, _ = json.Marshal(p)
	f.sb = &fakeSandbox{stats: f.stats, killed: make(chan struct{}), calls: map[string]int{}, log: f.log}
	return f.sb, nil
}

type fakeSandbox struct {
	mu       sync.Mutex
	stats    isolation.Stats
	closed   int
	killOnce sync.Once
	killed   chan struct{}
	calls    map[string]int
	log      *execLog
}

// Exec interprets Args[0]: "echo" writes Args[1], "exit" exits Args[1],
// "hang" blocks until killed, "sleep" sleeps Args[1] milliseconds,
// "failn" fails (exit 1) its first Args[1] calls per command name, "cat"
// copies stdin. Every call is logged.
func (s *fakeSandbox) Exec(ctx context.Context, c isolation.Command, io_ isolation.Stdio) (isolation.Exit, error) {
	e := execEntry{name: c.Name, args: c.Args, start: time.Now()}
	defer func() { e.end = time.Now(); s.log.add(e) }()
	s.mu.Lock()
	closed := s.closed > 0
	s.mu.Unlock()
	if closed {
		return isolation.Exit{}, isolation.ErrClosed
	}
	select {
	case <-s.killed:
		return isolation.Exit{}, errors.New("sandbox killed")
	default:
	}
	switch c.Args[0] {
	case "sleep":
		var ms int
		fmt.Sscan(c.Args[1], &ms)
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
			return isolation.Exit{}, nil
		case <-ctx.Done():
			return isolation.Exit{Code: 143, Signal: 15}, ctx.Err()
		}
	case "failn":
		var n int
		fmt.Sscan(c.Args[1], &n)
		s.mu.Lock()
		s.calls[c.Name]++
		k := s.calls[c.Name]
		s.mu.Unlock()
		if k <= n {
			return isolation.Exit{Code: 1}, nil
		}
		return isolation.Exit{}, nil
	case "cat":
		if io_.Stdin != nil {
			b, _ := io.ReadAll(io_.Stdin)
			e.stdin = string(b)
			io_.Stdout.Write(b)
		}
		return isolation.Exit{}, nil
	case "echo":
		io.WriteString(io_.Stdout, c.Args[1])
		return isolation.Exit{}, nil
	case "exit":
		return isolation.Exit{Code: int(c.Args[1][0] - '0')}, nil
	case "flood":
		chunk := strings.Repeat("x", 1<<16)
		for i := 0; i < 64; i++ {
			io.WriteString(io_.Stdout, chunk)
		}
		return isolation.Exit{}, nil
	case "hang":
		select {
		case <-ctx.Done():
			return isolation.Exit{Code: 143, Signal: 15}, ctx.Err()
		case <-s.killed:
			return isolation.Exit{Code: 137, Signal: 9}, nil
		}
	}
	return isolation.Exit{Code: 127}, nil
}
func (s *fakeSandbox) Kill(context.Context, time.Duration) error {
	s.killOnce.Do(func() { close(s.killed) })
	return nil
}
func (s *fakeSandbox) Stats(context.Context) (isolation.Stats, error) { return s.stats, nil }
func (s *fakeSandbox) Close(context.Context) error {
	s.mu.Lock()
	s.closed++
	s.mu.Unlock()
	return nil
}

// job is a job of a fresh run id: a run's host directory is named by its
// id (holdRun), so two runs must not share one.
func job(timeout time.Duration, steps ...JobStep) *Job {
	return &Job{
		Plan: &isolation.Plan{RunID: NewRunID(time.Now()), Tool: "t", Tier: isolation.TierProcess,
			Limits: isolation.Limits{Timeout: timeout, MemoryBytes: 64 << 20, KillGrace: time.Millisecond}},
		Steps: steps,
	}
}

// in places j's host directory under the controller's runtime directory,
// as the planner does.
func (c *Controller) in(j *Job) *Job {
	j.Plan.HostDir = HostDir(c.RuntimeDir, j.Plan.RunID)
	return j
}

func step(args ...string) JobStep {
	return JobStep{Name: "main", Cmd: isolation.Command{Args: args}}
}

func TestExecute(t *testing.T) {
	tests := []struct {
		name      string
		backend   *fakeBackend
		job       *Job
		status    Status
		exit      int
		stdout    string
		errCode   string
		truncated bool
	}{
		{"ok", &fakeBackend{}, job(time.Second, step("echo", "hi")), StatusOK, 0, "hi", "", false},
		{"failed keeps the tool's code", &fakeBackend{}, job(time.Second, step("exit", "3")), StatusFailed, 3, "", "", false},
		{"timeout", &fakeBackend{}, job(20*time.Millisecond, step("hang")), StatusTimeout, 124, "", CodeTimeout, false},
		{"oom", &fakeBackend{stats: isolation.Stats{OOMKilled: true}}, job(time.Second, step("exit", "9")), StatusOOM, 137, "", CodeQuota, false},
		{"check refuses", &fakeBackend{checkErr: &isolation.UnsupportedError{What: "memory controller", Fix: "mount it"}},
			job(time.Second, step("echo", "x")), StatusError, 125, "", CodeInitFailed, false},
		{"start fails", &fakeBackend{startErr: errors.New("boom")}, job(time.Second, step("echo", "x")), StatusError, 125, "", CodeInitFailed, false},
		{"output capped", &fakeBackend{}, func() *Job {
			j := job(time.Second, step("flood"))
			j.Steps[0].BufferLimit = 1000
			return j
		}(), StatusOK, 0, strings.Repeat("x", 1000), "", true},
		{"step timeout", &fakeBackend{}, func() *Job {
			j := job(time.Second, step("hang"))
			j.Steps[0].Timeout = 10 * time.Millisecond
			return j
		}(), StatusTimeout, 124, "", CodeTimeout, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state, rt := t.TempDir(), filepath.Join(t.TempDir(), "run")
			c := &Controller{StateDir: state, RuntimeDir: rt,
				Backends: map[isolation.Tier]isolation.Backend{isolation.TierProcess: tt.backend}}
			var recorded *Result
			c.Record = func(r *Result) error { recorded = r; return nil }
			res, err := c.Execute(context.Background(), c.in(tt.job))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tt.status || res.ProcessExitCode() != tt.exit {
				t.Fatalf("status %s exit %d, want %s %d (error %+v)", res.Status, res.ProcessExitCode(), tt.status, tt.exit, res.Error)
			}
			if tt.truncated {
				if !strings.HasPrefix(res.Stdout, tt.stdout) || !strings.Contains(res.Stdout, "truncated") {
					t.Errorf("stdout %.80q… not capped with a marker", res.Stdout)
				}
			} else if res.Stdout != tt.stdout {
				t.Errorf("stdout %q, want %q", res.Stdout, tt.stdout)
			}
			if tt.errCode != "" && (res.Error == nil || res.Error.Code != tt.errCode) {
				t.Errorf("error %+v, want code %s", res.Error, tt.errCode)
			}
			if recorded != res {
				t.Error("Record was not called with the result")
			}
			if tt.backend.sb != nil && tt.backend.sb.closed != 1 {
				t.Errorf("sandbox closed %d times, want 1", tt.backend.sb.closed)
			}
			// Nothing of the run is left in the runtime dir; the record is whole.
			if ents, _ := os.ReadDir(rt); len(ents) != 0 {
				t.Errorf("runtime dir not empty: %v", ents)
			}
			data, err := os.ReadFile(filepath.Join(RunDir(state, res.RunID), "result.json"))
			if err != nil {
				t.Fatal(err)
			}
			var back Result
			if err := json.Unmarshal(data, &back); err != nil || back.Status != res.Status {
				t.Errorf("run record: %v, status %q", err, back.Status)
			}
		})
	}
}

func TestInterruptTearsDown(t *testing.T) {
	fb := &fakeBackend{}
	c := &Controller{RuntimeDir: t.TempDir(), Backends: map[isolation.Tier]isolation.Backend{isolation.TierProcess: fb}}
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel(ErrInterrupted) }()
	res, err := c.Execute(ctx, c.in(job(10*time.Second, step("hang"))))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusError || res.Error.Code != CodeUserCancelled || fb.sb.closed != 1 {
		t.Fatalf("got %s %+v closed=%d", res.Status, res.Error, fb.sb.closed)
	}
}

// copyBackSandbox is a sandbox whose write grants are copies (a pod's).
type copyBackSandbox struct {
	*fakeSandbox
	err    error
	copied int
}

func (s *copyBackSandbox) CopyBack(context.Context) error { s.copied++; return s.err }

type copyBackBackend struct {
	fakeBackend
	err error
	cb  *copyBackSandbox
}

func (b *copyBackBackend) Start(ctx context.Context, p *isolation.Plan) (isolation.Sandbox, error) {
	sb, err := b.fakeBackend.Start(ctx, p)
	if err != nil {
		return nil, err
	}
	b.cb = &copyBackSandbox{fakeSandbox: sb.(*fakeSandbox), err: b.err}
	return b.cb, nil
}

// A sandbox whose write grants are copies brings them back before the
// result is made, also when its teardown runs behind the result: what
// the result says (the change record, protected paths) is of what
// reached the host. A copy back that failed is the run's error.
func TestCopyBackBeforeTheResult(t *testing.T) {
	for _, tt := range []struct {
		name   string
		err    error
		status Status
	}{
		{"copied back", nil, StatusOK},
		{"copy back failed", errors.New("stream cut"), StatusError},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := &copyBackBackend{err: tt.err}
			c := &Controller{StateDir: t.TempDir(), RuntimeDir: filepath.Join(t.TempDir(), "run"), Behind: NewBehind(nil),
				Backends: map[isolation.Tier]isolation.Backend{isolation.TierProcess: b}}
			copiedAtResult := -1
			c.Record = func(r *Result) error { copiedAtResult = b.cb.copied; return nil }
			res, err := c.Execute(context.Background(), c.in(job(time.Second, step("echo", "hi"))))
			if err != nil {
				t.Fatal(err)
			}
			c.Behind.Wait()
			if copiedAtResult != 1 {
				t.Errorf("copied back %d times before the result, want 1", copiedAtResult)
			}
			if res.Status != tt.status || tt.err != nil && (res.Error == nil || !strings.Contains(res.Error.Message, "copy the write grants back: stream cut")) {
				t.Errorf("status %s, error %+v; want %s", res.Status, res.Error, tt.status)
			}
			if b.cb.closed != 1 {
				t.Errorf("closed %d times, want 1", b.cb.closed)
			}
		})
	}
}
