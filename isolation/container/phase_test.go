package container

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/sandboxed-dev/sandboxed/isolation"
)

func TestEnginePhases(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SANDBOXED_PHASES"))
	if n <= 0 {
		t.Skip()
	}
	b := engineBackend(t)
	ctx := context.Background()
	names := []string{"create", "start", "accept", "handshake", "exec", "closeinit", "remove", "total"}
	ph := map[string][]time.Duration{}
	for i := 0; i < n; i++ {
		p := enginePlan(t, "phase")
		cfg, hc, err := translate(p, b.host(os.Lstat))
		if err != nil {
			t.Fatal(err)
		}
		sock := filepath.Join(p.HostDir, controlSocketName)
		ln, _ := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
		os.Chmod(sock, 0o666)
		ts := []time.Time{time.Now()}
		cr, err := b.api.ContainerCreate(ctx, cfg, hc, nil, nil, containerName(p.RunID))
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, time.Now())
		if err := b.api.ContainerStart(ctx, cr.ID, container.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		ts = append(ts, time.Now())
		c, err := accept(ctx, ln, nil)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, time.Now())
		in, err := handshake(ctx, c, p)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, time.Now())
		in.Exec(ctx, isolation.Command{Args: []string{"/bin/true"}, Cwd: "/"}, isolation.Stdio{})
		ts = append(ts, time.Now())
		in.Close()
		ts = append(ts, time.Now())
		b.api.ContainerRemove(ctx, cr.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		ts = append(ts, time.Now())
		ln.Close()
		for j := 1; j < len(ts); j++ {
			ph[names[j-1]] = append(ph[names[j-1]], ts[j].Sub(ts[j-1]))
		}
		ph["total"] = append(ph["total"], ts[len(ts)-1].Sub(ts[0]))
	}
	for _, name := range names {
		t.Logf("%-10s p50 %v", name, p50(ph[name]).Round(time.Millisecond))
	}
}
