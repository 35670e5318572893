package process

import (
	"errors"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/net/bpf"
)

func TestProfileCacheCompilesOncePerProfile(t *testing.T) {
	n := 0
	c := &profileCache{max: 2, compile: func(p *specs.LinuxSeccomp) ([]bpf.RawInstruction, error) {
		n++
		if p.DefaultAction == "bad" {
			return nil, errors.New("bad profile")
		}
		return []bpf.RawInstruction{{K: uint32(n)}}, nil
	}}
	a, b, d := &specs.LinuxSeccomp{}, &specs.LinuxSeccomp{}, &specs.LinuxSeccomp{}
	first, _ := c.Compile(a)
	again, _ := c.Compile(a)
	if n != 1 || first[0] != again[0] {
		t.Fatalf("the same profile compiled %d times", n)
	}
	// An equal profile elsewhere is another profile: compiled on its own.
	if other, _ := c.Compile(b); n != 2 || other[0] == first[0] {
		t.Fatalf("another profile was not compiled (%d compiles)", n)
	}
	c.Compile(d) // a is forgotten: the cache holds 2
	if c.Compile(a); n != 4 {
		t.Fatalf("a forgotten profile: %d compiles, want 4", n)
	}
	bad := &specs.LinuxSeccomp{DefaultAction: "bad"}
	for i := 0; i < 2; i++ {
		if _, err := c.Compile(bad); err == nil {
			t.Fatal("a profile that does not compile compiled")
		}
	}
	if n != 6 {
		t.Fatalf("a failed compile was remembered (%d compiles, want 6)", n)
	}
}
