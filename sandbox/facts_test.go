package sandbox

import (
	"path/filepath"
	"testing"
)

// The plan names the run's host directory by an absolute path, also when
// the runtime directory was given relative to the working directory.
func TestGatherFactsRuntimeDirIsAbsolute(t *testing.T) {
	cwd := t.TempDir()
	f, err := GatherFacts(cwd, "rt", []string{})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cwd, "rt"); f.RuntimeDir != want || HostDir(f.RuntimeDir, "RUN") != filepath.Join(want, "RUN") {
		t.Errorf("runtime dir %q, want %q", f.RuntimeDir, want)
	}
	t.Setenv("SANDBOXED_RUNTIME_DIR", "relative/rt")
	if d := RuntimeDir(); !filepath.IsAbs(d) {
		t.Errorf("RuntimeDir() = %q, not absolute", d)
	}
}
