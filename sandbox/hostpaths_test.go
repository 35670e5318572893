package sandbox

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxed-dev/sandboxed/permissions"
)

func TestCheckNoSockets(t *testing.T) {
	root := t.TempDir()
	cwd := filepath.Join(root, "project")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{cwd, outside, filepath.Join(outside, "clean")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{outside, cwd} {
		l, err := net.Listen("unix", filepath.Join(dir, "bus.sock"))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
	}
	grant := func(path string) []permissions.Grant {
		return []permissions.Grant{{Kind: permissions.KindMount, Permission: "filesystem:read:" + path,
			Mount: &permissions.Mount{HostPath: path, Resolved: path, Target: path}}}
	}
	if err := CheckNoSockets(grant(outside), cwd); !errors.Is(err, ErrPlan) {
		t.Errorf("a grant holding a socket: %v, want ErrPlan", err)
	}
	if err := CheckNoSockets(grant(filepath.Join(outside, "clean")), cwd); err != nil {
		t.Errorf("a clean grant: %v", err)
	}
	if err := CheckNoSockets(grant(cwd), cwd); err != nil {
		t.Errorf("the working directory is not walked: %v", err)
	}
}
