package process

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKillAdopted: while this process is a child subreaper, the orphans
// it adopts (a daemon whose parent died, in a session of its own) are
// killed and reaped; its own children — one in its session, one it
// started in a session of its own — are not.
func TestKillAdopted(t *testing.T) {
	holdSubreaper()
	defer releaseSubreaper()
	mine := exec.Command("sleep", "30")
	if err := mine.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { mine.Process.Kill(); mine.Wait() }()
	own := exec.Command("sleep", "30")
	own.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := startOwn(func() (int, error) {
		if err := own.Start(); err != nil {
			return 0, err
		}
		return own.Process.Pid, nil
	}); err != nil {
		t.Fatal(err)
	}
	defer func() { own.Process.Kill(); own.Wait(); waitedOwn(own.Process.Pid) }()

	// A parent that leaves a daemon in a session of its own and exits.
	pidFile := filepath.Join(t.TempDir(), "pid")
	daemon := `setsid -f sh -c 'echo $$ > "$0.tmp"; mv "$0.tmp" "$0"; exec sleep 30' "$0" </dev/null >/dev/null 2>&1`
	if err := exec.Command("sh", "-c", daemon, pidFile).Run(); err != nil {
		t.Fatal(err)
	}
	var orphan int
	for deadline := time.Now().Add(5 * time.Second); orphan == 0; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil {
			orphan, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		} else if time.Now().After(deadline) {
			t.Fatal("the daemon did not start")
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for parentOf(orphan) != syscall.Getpid() {
		if time.Now().After(deadline) {
			t.Fatalf("the orphan %d was not adopted (parent %d)", orphan, parentOf(orphan))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := killAdopted(); n != 1 {
		t.Errorf("killed %d, want the orphan alone", n)
	}
	if parentOf(orphan) != -1 {
		t.Errorf("the orphan %d is still there", orphan)
	}
	for _, c := range children(syscall.Getpid()) {
		if c != mine.Process.Pid && c != own.Process.Pid {
			t.Errorf("child %d is left", c)
		}
	}
	for _, c := range []*exec.Cmd{mine, own} {
		if parentOf(c.Process.Pid) != syscall.Getpid() {
			t.Errorf("its own child %d was killed", c.Process.Pid)
		}
	}
}
