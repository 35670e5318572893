package sbinit

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The tree kill's view of the test process's children: hasChildren and
// descendants agree with a child started and reaped, and a zombie not yet
// reaped still counts as a child (the kill loop must not end on it).
func TestTreeChildren(t *testing.T) {
	if hasChildren() {
		t.Fatal("hasChildren before any child was started")
	}
	cmd := exec.Command("/bin/sh", "-c", "exec sleep 30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if !hasChildren() {
		t.Error("hasChildren is false with a child running")
	}
	if d := descendants(os.Getpid()); !slices.Contains(d, pid) {
		t.Errorf("descendants = %v, want %d among them", d, pid)
	}
	if !below(pid, os.Getpid()) {
		t.Errorf("below(%d, self) = false", pid)
	}
	_ = cmd.Process.Kill()
	// Killed, not yet waited for: a zombie, which descendants leaves out
	// and hasChildren still counts.
	for deadline := time.Now().Add(5 * time.Second); slices.Contains(descendants(os.Getpid()), pid); {
		if time.Now().After(deadline) {
			t.Fatalf("child %d still alive after SIGKILL", pid)
		}
		time.Sleep(time.Millisecond)
	}
	if !hasChildren() {
		t.Error("hasChildren is false with a zombie child")
	}
	_ = cmd.Wait()
	if hasChildren() {
		t.Error("hasChildren after the child was reaped")
	}
	if d := descendants(os.Getpid()); len(d) != 0 {
		t.Errorf("descendants after the child was reaped = %v", d)
	}
}

// readStat reads a whole stat line, whose first field is the pid, and
// nothing for a process that does not exist.
func TestReadStat(t *testing.T) {
	buf := make([]byte, 1024)
	n := readStat(os.Getpid(), buf)
	if n == 0 || !strings.HasPrefix(string(buf[:n]), strconv.Itoa(os.Getpid())+" (") {
		t.Fatalf("readStat(self) = %q", buf[:n])
	}
	if ppid, _, ok := statParent(string(buf[:n])); !ok || ppid != os.Getppid() {
		t.Errorf("statParent(self) = %d, %v; want %d", ppid, ok, os.Getppid())
	}
	if n := readStat(1<<22+1, buf); n != 0 {
		t.Errorf("readStat of a pid above pid_max = %d bytes", n)
	}
	if n := readStat(os.Getpid(), make([]byte, 8)); n != 0 {
		t.Errorf("readStat into a buffer too small = %d bytes, want 0", n)
	}
}
