// Command sandboxed-front is the sandboxed command users type (make build
// installs it as bin/sandboxed). It passes a `sandboxed run` to this
// user's server (`sandboxed serve`) when one answers, and hands everything
// else, a run no server takes included, to the CLI itself: it replaces
// itself with sandboxed-core, the build of cmd/sandboxed found beside it.
//
// A program starts in time proportional to what it links: the CLI carries
// the definition loader, the policy engine, the backends, the JavaScript
// engine and the MCP server, and its package initialisation alone costs
// more than a whole bubblewrap run. A run a server takes needs none of
// that in the caller, so this front links the socket client
// (internal/serveclient) and the standard library, and nothing more;
// TestFrontStaysSmall keeps it that way.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/internal/serveclient"
)

// core is the CLI's build this front hands commands to.
const core = "sandboxed-core"

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "run" && serveclient.Cold(args[1:], os.Getenv) == "" {
		req, err := serveclient.NewRequest(args[1:])
		if err != nil {
			fmt.Fprintf(os.Stderr, "sandboxed: %v\n", err)
			os.Exit(serveclient.ExitSandbox)
		}
		if code, done := served(req); done {
			os.Exit(code)
		}
		// No server took the run: the CLI runs it here, without asking
		// a server again, and reads the parameters the request took from
		// stdin (--params-json -) as stdin.
		args = append([]string{"run", "--no-server"}, args[1:]...)
		if req.Stdin != nil {
			if err := stdinFrom(req.Stdin); err != nil {
				fmt.Fprintf(os.Stderr, "sandboxed: pass --params-json - on: %v\n", err)
				os.Exit(serveclient.ExitSandbox)
			}
		}
	}
	path, err := corePath()
	if err == nil {
		err = syscall.Exec(path, append([]string{os.Args[0]}, args...), os.Environ())
		err = fmt.Errorf("run %s: %w", path, err)
	}
	fmt.Fprintf(os.Stderr, "sandboxed: %v\n", err)
	if len(args) > 0 && args[0] == "run" {
		os.Exit(serveclient.ExitSandbox)
	}
	os.Exit(1)
}

// served runs req through this user's server; done is false when no
// server took it.
func served(req *serveclient.Request) (code int, done bool) {
	// An interrupt is passed on: the server tears the run down and
	// reports, as a run here does.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	interrupt := make(chan struct{})
	go func() {
		<-sigs
		close(interrupt)
	}()
	o := serveclient.Call(serveclient.Socket(), req, os.Stdout, os.Stderr, interrupt)
	if !o.Taken {
		return 0, false
	}
	if o.Err != nil {
		fmt.Fprintf(os.Stderr, "sandboxed: %v\n", o.Err)
	}
	return o.Code, true
}

// stdinFrom makes data this process's stdin, in a memory file (it may be
// larger than a pipe holds), for the CLI it is about to become.
func stdinFrom(data []byte) error {
	fd, err := unix.MemfdCreate("params", unix.MFD_CLOEXEC)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), "params")
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if _, err := f.Seek(0, 0); err != nil {
		return err
	}
	return unix.Dup3(fd, 0, 0)
}

// corePath finds sandboxed-core: beside this executable, else on PATH.
func corePath() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), core)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath(core)
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", fmt.Errorf("%s, the CLI this command hands its work to, is neither beside this executable nor on PATH: install both (make build puts them in bin/)", core)
		}
		return "", err
	}
	return p, nil
}
