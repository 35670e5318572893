// Command floor is the least any cold sandboxed run can cost, whatever is
// built on top: a static Go program starts, runs bubblewrap with a static
// Go program inside it that replaces itself with the command, waits, and
// appends one line to a file and fsyncs it. That is the CLI (a Go
// program), the sandbox's init (a Go program: the binary is static, with
// no C to run before the Go runtime), bubblewrap's own namespaces and
// mounts, and the audit line a run must have on disk before it is
// reported. It has no definition, no policy, no cgroup, no seccomp, no
// Landlock and no run record, so a real run can only cost more.
//
// The bench builds it and times it beside bubblewrap:
//
//	floor AUDITFILE bwrap ARGS... /floor init COMMAND...
//
// runs bwrap ARGS with the rest and appends to AUDITFILE;
//
//	floor init COMMAND...
//
// replaces itself with COMMAND (the part that runs inside bubblewrap).
package main

import (
	"os"
	"syscall"
)

func main() {
	if len(os.Args) > 2 && os.Args[1] == "init" {
		err := syscall.Exec(os.Args[2], os.Args[2:], os.Environ())
		fail("exec " + os.Args[2] + ": " + err.Error())
	}
	if len(os.Args) < 3 {
		fail("usage: floor AUDITFILE ARGV...")
	}
	audit, argv := os.Args[1], os.Args[2:]
	pid, err := syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		fail("start " + argv[0] + ": " + err.Error())
	}
	var ws syscall.WaitStatus
	for {
		_, err = syscall.Wait4(pid, &ws, 0, nil)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil || !ws.Exited() || ws.ExitStatus() != 0 {
		fail(argv[0] + " failed")
	}
	f, err := os.OpenFile(audit, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err == nil {
		_, err = f.WriteString(`{"run":"floor","status":"ok","exit_code":0}` + "\n")
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		fail("audit: " + err.Error())
	}
}

func fail(msg string) {
	os.Stderr.WriteString("floor: " + msg + "\n")
	os.Exit(1)
}
