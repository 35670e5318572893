package process

import (
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/net/bpf"

	"github.com/sandboxed-dev/sandboxed/isolation/seccomp"
)

// compiledProfiles remembers the programs of the seccomp profiles compiled
// last, by profile: a run's plan is checked by its controller and again
// when its sandbox starts (or its warm sandbox is claimed), and a compile
// costs about a quarter of a millisecond. A profile is never changed once
// it is in a plan (a spec option replaces it), and a remembered one is
// held, so no other profile is made in its memory while it is remembered.
var compiledProfiles = &profileCache{compile: seccomp.Compile, max: 8}

type profileCache struct {
	compile func(*specs.LinuxSeccomp) ([]bpf.RawInstruction, error)
	max     int

	mu    sync.Mutex
	order []*specs.LinuxSeccomp // oldest first
	progs map[*specs.LinuxSeccomp][]bpf.RawInstruction
}

// Compile returns the program of p, compiled once while p is remembered.
// The program is shared: callers must not change it.
func (c *profileCache) Compile(p *specs.LinuxSeccomp) ([]bpf.RawInstruction, error) {
	c.mu.Lock()
	prog, ok := c.progs[p]
	c.mu.Unlock()
	if ok {
		return prog, nil
	}
	prog, err := c.compile(p)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.progs == nil {
		c.progs = make(map[*specs.LinuxSeccomp][]bpf.RawInstruction)
	}
	if _, ok := c.progs[p]; !ok {
		if len(c.order) >= c.max {
			delete(c.progs, c.order[0])
			c.order = c.order[1:]
		}
		c.order = append(c.order, p)
		c.progs[p] = prog
	}
	return prog, nil
}
