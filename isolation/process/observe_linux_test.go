package process_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

// An observed run reports what its commands read, wrote and executed,
// relative paths resolved against their working directory, and the
// commands still run as they would unobserved; a read-only grant takes
// their writes into a layer that leaves the host as it was.
func TestObserveRecordsAccesses(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("in\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := testPlan(t, privilege.SameAsUser, sandbox.WithReadBind(dir, dir))
	p.Observe = true
	sb := start(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	exit, err := sb.Exec(ctx, isolation.Command{
		Args: []string{"/bin/sh", "-c", "cat /etc/os-release >/dev/null; cd /tmp && echo hi > made.txt && ls /usr >/dev/null && cat made.txt && " +
			"cd " + dir + " && cat in.txt > out.txt && cat out.txt && rm in.txt"},
		Env: []string{"PATH=/usr/bin:/bin"}, Cwd: "/",
	}, isolation.Stdio{Stdout: &out})
	if err != nil || exit.Code != 0 {
		t.Fatalf("exec: %v, exit %d", err, exit.Code)
	}
	if out.String() != "hi\nin\n" {
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
		{Op: isolation.AccessWrite, Path: dir + "/out.txt"},
		{Op: isolation.AccessWrite, Path: dir + "/in.txt"},
	} {
		if !slices.Contains(st.Accesses, want) {
			t.Errorf("accesses lack %+v; got %+v", want, st.Accesses)
		}
	}
	// The read-only grant took the writes into a throwaway layer.
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 || ents[0].Name() != "in.txt" {
		t.Errorf("the host directory changed: %v %v", ents, err)
	}
}

// A warm sandbox has no watch filter: an observed plan never draws one.
func TestObservedPlanStartsCold(t *testing.T) {
	p := testPlan(t, privilege.SameAsUser)
	b := process.New()
	_, warm := b.WarmKey(p)
	p.Observe = true
	if key, ok := b.WarmKey(p); ok {
		t.Errorf("an observed plan has the warm key %q (an ordinary one: %v)", key, warm)
	}
}
