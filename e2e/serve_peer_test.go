package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// foreignServeEnv makes the test binary a socket that another user listens
// on where a server's would be: it writes what it receives beside it.
const foreignServeEnv = "SANDBOXED_E2E_FOREIGN_SERVE"

func foreignServeIfAsked() {
	path := os.Getenv(foreignServeEnv)
	if path == "" {
		return
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		os.Exit(2)
	}
	os.Chmod(path, 0o666)
	go func() {
		time.Sleep(60 * time.Second)
		os.Exit(1)
	}()
	for {
		conn, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		buf := make([]byte, 4096)
		conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, _ := conn.Read(buf)
		os.WriteFile(path+".got", buf[:n], 0o644)
		conn.Close()
	}
}

// TestRunSendsNothingToAnotherUsersServer puts a socket of another user
// (nobody) where the server's would be: `sandboxed run` sends it nothing
// (the request carries the caller's arguments and environment) and runs
// the tool itself.
func TestRunSendsNothingToAnotherUsersServer(t *testing.T) {
	if env.runner != nil {
		t.Log("the rootless mode's user dials root's directories; the root mode covers it")
		return
	}
	begin(t)
	dir := workdir(t, nil)
	tool := toolYAML(t, dir, "process", "hello", `echo hello-from-the-tool`, nil, "")
	rt, err := os.MkdirTemp(env.workRoot, "rt-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(rt)
	if err := os.Chmod(rt, 0o777); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(rt, "serve.sock")
	// A copy of this test binary that nobody may execute.
	self, _ := os.Executable()
	bin := filepath.Join(rt, "foreign-server")
	if out, err := exec.Command("cp", self, bin).CombinedOutput(); err != nil {
		t.Fatalf("copy %s: %v %s", self, err, out)
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	fake := exec.Command(bin, "-test.run=^$")
	fake.Env = append(os.Environ(), foreignServeEnv+"="+sock)
	fake.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := fake.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { fake.Process.Kill(); fake.Wait() }()
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Setenv("SANDBOXED_SERVE_SOCKET", sock)
	r, c := runJSON(t, dir, tool)
	expect(t, r, c, "ok", 0)
	if r.Stdout != "hello-from-the-tool\n" {
		t.Errorf("stdout %q", r.Stdout)
	}
	if got, err := os.ReadFile(sock + ".got"); err == nil && len(got) > 0 {
		t.Errorf("another user's socket received the run: %q", got)
	}
}
