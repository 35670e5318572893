package process_test

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation"
)

// An observed run reports what its commands read, wrote and executed,
// relative paths resolved against their working directory, and the
// commands still run as they would unobserved.
func TestObserveRecordsAccesses(t *testing.T) {
	needRoot(t)
	p := testPlan(t, privilege.SameAsUser)
	p.Observe = true
	sb := start(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	exit, err := sb.Exec(ctx, isolation.Command{
		Args: []string{"/bin/sh", "-c", "cat /etc/os-release >/dev/null; cd /tmp && echo hi > made.txt && ls /usr >/dev/null && cat made.txt"},
		Env:  []string{"PATH=/usr/bin:/bin"}, Cwd: "/",
	}, isolation.Stdio{Stdout: &out})
	if err != nil || exit.Code != 0 {
		t.Fatalf("exec: %v, exit %d", err, exit.Code)
	}
	if out.String() != "hi\n" {
		t.Errorf("stdout %q", out.String())
	}
	st, err := sb.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []isolation.Access{
		{Op: isolation.AccessExec, Path: "/bin/sh"},
		{Op: isolation.AccessRead, Path: "/etc/os-release"},
		{Op: isolation.AccessWrite, Path: "/tmp/made.txt"},
		{Op: isolation.AccessRead, Path: "/tmp/made.txt"},
		{Op: isolation.AccessRead, Path: "/usr", Dir: true},
	} {
		if !slices.Contains(st.Accesses, want) {
			t.Errorf("accesses lack %+v; got %+v", want, st.Accesses)
		}
	}
}
