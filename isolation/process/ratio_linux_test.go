package process_test

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

// TestStartupVsBwrap prints the p50 of Start+Exec(true)+Close against
// `bwrap --unshare-all` running /bin/true, interleaved so both see the same
// load. It asserts nothing about time (SANDBOXED_BENCH=1 to run).
func TestStartupVsBwrap(t *testing.T) {
	if os.Getenv("SANDBOXED_BENCH") != "1" {
		t.Skip("SANDBOXED_BENCH=1 not set")
	}
	needRoot(t)
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("no bwrap")
	}
	bwArgs := []string{"--unshare-all", "--die-with-parent", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"}
	for _, d := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64"} {
		if fi, err := os.Lstat(d); err == nil {
			if fi.Mode()&os.ModeSymlink != 0 {
				l, _ := os.Readlink(d)
				bwArgs = append(bwArgs, "--symlink", l, d)
			} else {
				bwArgs = append(bwArgs, "--ro-bind", d, d)
			}
		}
	}
	bwArgs = append(bwArgs, "/bin/true")
	be := process.New()
	ctx := context.Background()
	var ours, theirs []time.Duration
	for i := 0; i < 30; i++ {
		p := testPlan(t, sandbox.PrivSameAsUser)
		t0 := time.Now()
		sb, err := be.Start(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if exit, err := sb.Exec(ctx, isolation.Command{Args: []string{"/bin/true"}}, isolation.Stdio{}); err != nil || exit.Code != 0 {
			t.Fatal(exit, err)
		}
		if err := sb.Close(ctx); err != nil {
			t.Fatal(err)
		}
		ours = append(ours, time.Since(t0))
		t0 = time.Now()
		if out, err := exec.Command(bwrap, bwArgs...).CombinedOutput(); err != nil {
			t.Fatalf("bwrap: %v %s", err, out)
		}
		theirs = append(theirs, time.Since(t0))
		time.Sleep(20 * time.Millisecond) // let network namespaces go
	}
	slices.Sort(ours)
	slices.Sort(theirs)
	p50o, p50b := ours[len(ours)/2], theirs[len(theirs)/2]
	t.Logf("sandboxed process tier p50 %v, bwrap --unshare-all p50 %v, ratio %.2f", p50o, p50b, float64(p50o)/float64(p50b))
}
