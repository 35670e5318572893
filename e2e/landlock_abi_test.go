package e2e

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// kernelLandlockABI is the Landlock ABI this kernel answers (0: none).
func kernelLandlockABI() int {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1 /* LANDLOCK_CREATE_RULESET_VERSION */)
	if errno != 0 {
		return 0
	}
	return int(abi)
}

// TestLandlockTierOnThisKernel: the landlock tier on the kernel the suite
// runs on, outside any container — this host's (ABI 7 on 6.18) and the
// VM's (Debian 12's 6.1: ABI 2), as root and rootless. What the kernel
// lacks is refused with the reason, never run weaker in silence, unless
// the policy accepts that gap by name: a tool sharing the invoking user's
// uid needs signal scoping (ABI 6); a kernel with no Landlock refuses all.
func TestLandlockTierOnThisKernel(t *testing.T) {
	begin(t)
	abi := kernelLandlockABI()
	shared := env.runner != nil // rootless: the tool runs as the invoking user's uid
	t.Logf("Landlock ABI %d, tool shares the invoking uid: %t", abi, shared)
	dir := workdir(t, map[string]string{
		"hello.yaml": mustRead(t, "../examples/tools/hello.yaml"),
		"gaps.yaml":  landlockGapsPolicy,
	})
	giveToRunner(t, dir)
	run := func(args ...string) cli {
		return sandboxed(t, dir, append([]string{"run", "--isolation", "landlock", "--approve", "isolation-landlock"}, args...)...)
	}

	r := run("hello.yaml", "NAME=Ada")
	switch {
	case abi < 1:
		if r.code == 0 || !strings.Contains(r.stderr, "Landlock (this kernel has none") {
			t.Errorf("no Landlock: exit %d, want a refusal naming it\n%s%s", r.code, r.stdout, r.stderr)
		}
	case abi < 6 && shared:
		want := fmt.Sprintf("signal scoping for a tool running as your own uid (Landlock ABI 6; this kernel has ABI %d", abi)
		if r.code == 0 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "landlock-gaps: [signals]") {
			t.Errorf("ABI %d, shared uid: exit %d, want a refusal with %q and the gap's name\n%s%s", abi, r.code, want, r.stdout, r.stderr)
		}
		// The operator accepts that gap by name: the run goes ahead and says so.
		r = run("--policy", "gaps.yaml", "--json", "hello.yaml", "NAME=Ada")
		if r.code != 0 || !strings.Contains(r.stdout, "Hello, Ada!") {
			t.Errorf("ABI %d with the signals gap accepted: exit %d\n%s%s", abi, r.code, r.stdout, r.stderr)
		}
	default:
		if r.code != 0 || strings.TrimSpace(r.stdout) != "Hello, Ada!" {
			t.Errorf("ABI %d: exit %d, want the tool's output\n%s%s", abi, r.code, r.stdout, r.stderr)
		}
	}
}

// landlockGapsPolicy accepts the landlock tier's signal-scoping gap.
const landlockGapsPolicy = `version: 1
sources:
  - scope: any
    trusted: false
    isolation:
      allowed: [process, container]
      minimum: process
      without-namespaces: approve
      landlock-gaps: [signals]
`
