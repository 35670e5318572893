package hostsetup

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sandboxed-dev/sandboxed/isolation/cgroup"
)

// Local returns the running host: Root "/", its cgroups as
// isolation/cgroup detects them, and this binary's resolved path.
func Local() (*System, error) {
	s := &System{Root: "/"}
	if h, err := cgroup.Detect(); err == nil {
		s.Cgroups = Cgroups{Version: h.Version, V1: h.Mounted, V2: h.V2}
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the sandboxed binary: %w", err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return nil, fmt.Errorf("find the sandboxed binary: %w", err)
	}
	s.Executable = exe
	return s, nil
}
