package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The init starts in every sandbox and pays for every package it links
// (each one initialises again, and its pages fault in). These stay out.
var forbidden = []string{
	"net/http",
	"crypto/tls",
	"crypto/x509",
	"regexp",
	"github.com/elastic/go-seccomp-bpf",
	"github.com/docker/",
	"github.com/dop251/goja",
	"github.com/containerd/",
	"github.com/urfave/cli",
	"github.com/modelcontextprotocol/",
	"gopkg.in/yaml.v3",
	"github.com/sandboxed-dev/sandboxed/isolation/egress\n", // the proxy; the relay is fine
	"github.com/sandboxed-dev/sandboxed/isolation/seccomp\n",
	"github.com/sandboxed-dev/sandboxed/sandbox",
	"github.com/sandboxed-dev/sandboxed/tool",
	"github.com/sandboxed-dev/sandboxed/policy",
}

func TestInitStaysSmall(t *testing.T) {
	// go test puts its own go command first on PATH: go list always
	// runs, and a failure is the guard failing, never a reason to skip.
	cmd := exec.Command("go", "list", "-deps", ".")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, stderr.String())
	}
	deps := string(out)
	for _, f := range forbidden {
		for _, line := range strings.Split(deps, "\n") {
			if strings.HasPrefix(line+"\n", f) {
				t.Errorf("the init links %s; keep it out of package sbinit and what it imports", line)
			}
		}
	}
}
