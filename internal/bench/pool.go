//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxed-dev/sandboxed/internal/dockerapi"
)

// residentBench times the resident controller against the same peers, in
// one run, each tier's rows interleaved among themselves: a call through `sandboxed mcp` (its warm pool) per
// tier, `sandboxed run` with a running `sandboxed serve` and without, and
// runs per second with 4 calls in flight through the MCP server.
//
//	MCP call, process tier   vs bwrap                                  target <= 1.0x
//	MCP call, container tier vs docker run --rm --network none IMAGE   target <= 0.4x
//	sandboxed run, served    vs bwrap                                  target <= 1.0x
//	sandboxed run, cold      vs bwrap                                  target <= 1.5x
//	4 in parallel: process runs/s >= 200, container runs/s >= 20, beside the
//	engine's own rate of fresh containers (create, start, remove)
func residentBench(bin, work string, env []string, image string, container bool, n int) error {
	dir := filepath.Join(work, "resident")
	tools := filepath.Join(dir, ".sandboxed", "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		return err
	}
	for _, tier := range []string{"process", "container"} {
		def := fmt.Sprintf("name: noop_%s\ndescription: Does nothing; for timing.\nbash: \"true\"\ntags: [read]\nsecurity:\n  isolation: %s\nresources:\n  max-memory: 64MB\n  timeout: 10000\nsandboxed:\n  pids-limit: 64\n", tier, tier)
		if err := os.WriteFile(filepath.Join(tools, "noop_"+tier+".yaml"), []byte(def), 0o644); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The MCP server, as an agent's client starts it.
	mcmd := exec.Command(bin, "mcp", "--pool-size", "4")
	mcmd.Dir = dir
	mcmd.Env = append(os.Environ(), env...)
	var mlog bytes.Buffer
	mcmd.Stderr = &mlog
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: mcmd}, nil)
	if err != nil {
		return fmt.Errorf("start sandboxed mcp: %w: %s", err, mlog.String())
	}
	defer cs.Close()
	call := func(name string) error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil {
			return err
		}
		if res.IsError {
			var b strings.Builder
			for _, c := range res.Content {
				if t, ok := c.(*mcp.TextContent); ok {
					b.WriteString(t.Text)
				}
			}
			return fmt.Errorf("call %s: %s", name, b.String())
		}
		return nil
	}

	// The server `sandboxed run` finds on its socket.
	scmd := exec.Command(bin, "serve", "--pool-size", "4")
	scmd.Dir = dir
	scmd.Env = append(os.Environ(), env...)
	var slog syncBuf
	scmd.Stderr = &slog
	if err := scmd.Start(); err != nil {
		return fmt.Errorf("start sandboxed serve: %w", err)
	}
	defer func() {
		scmd.Process.Signal(syscall.SIGTERM)
		scmd.Wait()
	}()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(slog.String(), "listening on"); {
		if time.Now().After(deadline) {
			return fmt.Errorf("sandboxed serve did not listen: %s", slog.String())
		}
		time.Sleep(10 * time.Millisecond)
	}

	type row struct {
		name string
		run  func() error
	}
	exe := func(p peer) func() error { return func() error { return once(p) } }
	bwrap := row{"bwrap", exe(peer{argv: bwrapArgv()})}
	rows := []row{
		bwrap,
		{"mcp call (process)", func() error { return call("noop_process") }},
		{"sandboxed run, served (process)", exe(peer{argv: []string{bin, "run", "noop_process"}, dir: dir, env: env})},
		{"sandboxed run, cold (process)", exe(peer{argv: []string{bin, "run", "--no-server", "noop_process"}, dir: dir, env: env})},
		{"sandboxed run, served (landlock)", exe(peer{argv: []string{bin, "run", "--isolation", "landlock", "--approve", "isolation-landlock", "noop_process"}, dir: dir, env: env})},
		{"sandboxed run, cold (landlock)", exe(peer{argv: []string{bin, "run", "--no-server", "--isolation", "landlock", "--approve", "isolation-landlock", "noop_process"}, dir: dir, env: env})},
	}
	// Each tier's rows are interleaved among themselves: a container
	// row's engine keeps working after it returns (removing the
	// container, the pool's refill), which would slow the process rows
	// around it, bubblewrap as much as sandboxed, by more than the
	// process rows' own cost.
	groups := [][]row{rows}
	docker := row{"docker run --rm --network none", exe(peer{argv: []string{"docker", "run", "--rm", "--network", "none", image, "/bin/bash", "-c", "true"}})}
	if container {
		crows := []row{docker, {"mcp call (container)", func() error { return call("noop_container") }}}
		groups = append(groups, crows)
		rows = append(rows, crows...)
	}
	for _, r := range rows { // warm caches and pools; fail early
		for i := 0; i < 3; i++ {
			if err := r.run(); err != nil {
				return fmt.Errorf("%s: %w", r.name, err)
			}
		}
	}
	times := map[string][]time.Duration{}
	for _, g := range groups {
		for i := 0; i < n; i++ {
			for j := range g { // rotate the order so no peer always goes first
				r := g[(i+j)%len(g)]
				t0 := time.Now()
				if err := r.run(); err != nil {
					return fmt.Errorf("%s: %w", r.name, err)
				}
				times[r.name] = append(times[r.name], time.Since(t0))
			}
		}
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "RESIDENT CONTROLLER\tP50\tP90\tRUNS\n")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\n", r.name, ms(pct(times[r.name], .5)), ms(pct(times[r.name], .9)), n)
	}
	w.Flush()
	bar := func(what, of, peer string, target float64) {
		if times[of] == nil || times[peer] == nil {
			return
		}
		r := float64(pct(times[of], .5)) / float64(pct(times[peer], .5))
		fmt.Printf("bar: %s p50 <= %.1fx %s: %s (%.2fx)\n", what, target, peer, verdict(r <= target), r)
	}
	bar("MCP call, process tier,", "mcp call (process)", "bwrap", 1.0)
	bar("MCP call, container tier,", "mcp call (container)", docker.name, 0.4)
	bar("sandboxed run with a server", "sandboxed run, served (process)", "bwrap", 1.0)
	bar("sandboxed run without a server", "sandboxed run, cold (process)", "bwrap", 1.5)
	for _, mode := range []string{"served", "cold"} {
		ll, pr := times["sandboxed run, "+mode+" (landlock)"], times["sandboxed run, "+mode+" (process)"]
		if ll != nil && pr != nil {
			fmt.Printf("landlock, %s: p50 %.2fx bwrap, %.2fx the process tier\n", mode,
				float64(pct(ll, .5))/float64(pct(times["bwrap"], .5)), float64(pct(ll, .5))/float64(pct(pr, .5)))
		}
	}

	// Throughput: 4 calls in flight at once through the MCP server.
	through := func(name string, runs int) (float64, error) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var first error
		next := make(chan struct{}, runs)
		for i := 0; i < runs; i++ {
			next <- struct{}{}
		}
		close(next)
		t0 := time.Now()
		for k := 0; k < 4; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range next {
					if err := call(name); err != nil {
						mu.Lock()
						first = err
						mu.Unlock()
						return
					}
				}
			}()
		}
		wg.Wait()
		return float64(runs) / time.Since(t0).Seconds(), first
	}
	rps, err := through("noop_process", 10*n)
	if err != nil {
		return fmt.Errorf("throughput (process): %w", err)
	}
	fmt.Printf("bar: 4 in parallel through mcp, process tier >= 200 runs/s: %s (%.0f runs/s)\n", verdict(rps >= 200), rps)
	if container {
		rps, err := through("noop_container", 2*n)
		if err != nil {
			return fmt.Errorf("throughput (container): %w", err)
		}
		fmt.Printf("bar: 4 in parallel through mcp, container tier >= 20 runs/s: %s (%.0f runs/s)\n", verdict(rps >= 20), rps)
		if cps, err := engineRate(ctx, image, 2*n); err != nil {
			fmt.Fprintln(os.Stderr, "bench: engine floor:", err)
		} else {
			fmt.Printf("floor: the engine alone creates, starts and removes %.0f containers/s with 4 in flight (each run needs one)\n", cps)
		}
	}
	fmt.Println()
	return nil
}

// engineFloorLabel marks the containers engineRate makes.
const engineFloorLabel = "sandboxed.bench=engine-floor"

// engineRate is how many containers per second the engine creates, starts
// and removes with 4 at a time, straight through its API with nothing of
// sandboxed around them: the most container runs per second any design
// that gives each run a fresh container can reach on this engine.
func engineRate(ctx context.Context, image string, runs int) (float64, error) {
	c, err := dockerapi.FromEnv()
	if err != nil {
		return 0, err
	}
	defer c.Close()
	// What an interrupted bench left behind, before and after.
	sweep := func() {
		list, err := c.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", engineFloorLabel))})
		if err != nil {
			return
		}
		for _, ct := range list {
			c.ContainerRemove(ctx, ct.ID, container.RemoveOptions{Force: true})
		}
	}
	sweep()
	defer sweep()
	one := func() error {
		cr, err := c.ContainerCreate(ctx, &container.Config{Image: image, Cmd: []string{"/bin/true"}, Labels: map[string]string{"sandboxed.bench": "engine-floor"}},
			&container.HostConfig{NetworkMode: "none"}, nil, nil, "")
		if err != nil {
			return err
		}
		err = c.ContainerStart(ctx, cr.ID, container.StartOptions{})
		return errors.Join(err, c.ContainerRemove(ctx, cr.ID, container.RemoveOptions{Force: true}))
	}
	next := make(chan struct{}, runs)
	for i := 0; i < runs; i++ {
		next <- struct{}{}
	}
	close(next)
	errs := make(chan error, 4)
	t0 := time.Now()
	for k := 0; k < 4; k++ {
		go func() {
			for range next {
				if err := one(); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for k := 0; k < 4; k++ {
		err = errors.Join(err, <-errs)
	}
	return float64(runs) / time.Since(t0).Seconds(), err
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
