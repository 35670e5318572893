package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// crossTargets are the platforms besides linux/amd64 that sandboxed is
// built for; the Makefile's CROSS lists the same (make cross, run by CI).
var crossTargets = []string{"darwin/arm64", "darwin/amd64", "linux/arm64"}

// TestCrossBuilds compiles the CLI for each of crossTargets, so that a
// Linux-only call outside a _linux.go file fails a package's own test run
// and not only CI's make cross. A build that was made before is cached.
func TestCrossBuilds(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "CROSS     ?= "+strings.Join(crossTargets, " ")+"\n") {
		t.Errorf("the Makefile's CROSS is not %v", crossTargets)
	}
	for _, target := range crossTargets {
		goos, goarch, _ := strings.Cut(target, "/")
		cmd := exec.Command(goBin, "build", "-trimpath", "-o", os.DevNull, ".")
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("GOOS=%s GOARCH=%s go build ./cmd/sandboxed: %v\n%s", goos, goarch, err, out)
		}
	}
}
