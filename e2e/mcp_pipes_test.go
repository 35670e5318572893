package e2e

import (
	"bufio"
	"context"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pipeTool reports how `yes` ended when its reader went away: 141 (killed
// by SIGPIPE) when the tool started with SIGPIPE's default disposition, 1
// (a write error) when it inherited SIGPIPE ignored.
const pipeTool = `name: pipe
description: How does a writer to a closed pipe end?
tags: [read]
bash: 'yes | head -n 1 >/dev/null; echo "yes-status=${PIPESTATUS[0]}"'
security:
  isolation: process
`

// The resident servers catch SIGPIPE rather than ignore it: a `serve`
// whose stderr reader is gone goes on serving (its log lines fail with
// EPIPE and are dropped) and stops cleanly, and the tools both servers
// start get SIGPIPE's default.
func TestResidentServersOutliveTheirPipes(t *testing.T) {
	begin(t)
	dir := workdir(t, map[string]string{".sandboxed/tools/pipe.yaml": pipeTool})

	t.Run("serve", func(t *testing.T) {
		cmd := command("serve", "--pool-size", "0")
		cmd.Dir = dir
		errp, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		must(t, cmd.Start())
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		defer func() {
			select {
			case <-done:
			default:
				cmd.Process.Kill()
				<-done
			}
		}()
		sc := bufio.NewScanner(errp)
		for sc.Scan() && !strings.Contains(sc.Text(), "listening on") {
		}
		// Nobody reads the server's stderr any more.
		errp.Close()
		for i := 0; i < 2; i++ {
			c := sandboxed(t, dir, "run", "pipe")
			if c.code != 0 || !strings.Contains(c.stdout, "yes-status=141") {
				t.Errorf("run %d: exit %d, %q %q", i, c.code, c.stdout, c.stderr)
			}
			select {
			case <-done:
				t.Fatalf("the server died after a call it could not log: %v", cmd.ProcessState)
			default:
			}
		}
		must(t, cmd.Process.Signal(syscall.SIGTERM))
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("the server did not stop within a minute of SIGTERM")
		}
		if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
			t.Errorf("the server died of %v", ws.Signal())
		}
	})

	t.Run("mcp", func(t *testing.T) {
		c := startMCPGo(t, dir, true, nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res := c.call(t, ctx, "pipe", map[string]any{}, nil)
		if res.IsError || !strings.Contains(res.text(), "yes-status=141") {
			t.Errorf("a tool under mcp: %s", res.raw)
		}
	})
}
