package sandbox

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// BenchmarkResidentRun times what a resident controller (sandboxed mcp,
// serve) does around the sandbox for one call: prepare (bind, policy,
// plan), claim a warm sandbox of the pool, the steps' bookkeeping, the
// run record and the audit line, teardown behind the result. The backend
// is a fake: the sandbox itself costs nothing here. Run with -cpu 4 for
// four calls in flight.
func BenchmarkResidentRun(b *testing.B) {
	cwd := b.TempDir()
	def, err := tool.Parse([]byte("name: noop_process\ndescription: Does nothing; for timing.\nbash: \"true\"\ntags: [read]\nsecurity:\n  isolation: process\nresources:\n  max-memory: 64MB\n  timeout: 10000\nsandboxed:\n  pids-limit: 64\n"),
		filepath.Join(cwd, ".sandboxed", "tools", "noop_process.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	state, rt := b.TempDir(), filepath.Join(b.TempDir(), "run")
	wb := &warmBackend{}
	c := &Controller{StateDir: state, RuntimeDir: rt, Backends: map[isolation.Tier]isolation.Backend{isolation.TierProcess: wb},
		Behind: NewBehind(nil), GCEvery: 10 * time.Second}
	c.Pool = NewPool(PoolSettings{Size: 4}, rt, nil)
	defer func() {
		c.Behind.Wait()
		c.Pool.Close()
	}()
	pol := policy.Default()
	req := func() *Request {
		return &Request{Def: def, Input: tool.Input{}, Policy: pol, Cwd: cwd}
	}
	ctx := context.Background()
	if _, _, err := c.Run(ctx, req()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, _, err := c.Run(ctx, req())
			if err != nil || res.Status == StatusDenied || res.Status == StatusError {
				b.Errorf("run: %v %+v", err, res.Error)
				return
			}
		}
	})
}
