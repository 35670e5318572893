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

// TestCrossBuilds compiles the CLI for macOS on arm64, so that a
// Linux-only call outside a _linux.go file fails this package's own test
// run and not only CI's make cross, which builds every one of
// crossTargets. One target keeps the test's cost down (a first build
// compiles every dependency for it, a few minutes on two cores; later ones
// are cached): darwin/amd64 differs from it by the architecture alone and
// linux/arm64 from this host's build by the same.
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
	for _, target := range crossTargets[:1] {
		goos, goarch, _ := strings.Cut(target, "/")
		cmd := exec.Command(goBin, "build", "-trimpath", "-o", os.DevNull, ".")
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("GOOS=%s GOARCH=%s go build ./cmd/sandboxed: %v\n%s", goos, goarch, err, out)
		}
	}
}
