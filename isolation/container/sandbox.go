package container

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/sandboxed-dev/sandboxed/internal/reown"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/internal/execgate"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
)

// initConn is the host side of the init's control channel (sbinit.Client).
type initConn interface {
	Exec(ctx context.Context, cmd isolation.Command, stdio isolation.Stdio) (isolation.Exit, error)
	// Signal sends sig to command id's process group, or to every process
	// of the sandbox when id is 0.
	Signal(id uint64, sig syscall.Signal) error
	Close() error
	Done() <-chan struct{}
}

// connectFunc waits for the init of the run's container to dial ln, then
// hands it the plan. It gives up when ctx ends or the container exits.
type connectFunc func(ctx context.Context, ln *net.UnixListener, p *isolation.Plan, alive func(context.Context) error) (initConn, error)

// sandbox is one started container.
type sandbox struct {
	api  engine
	plan *isolation.Plan
	name string
	id   string
	// ref is what Close removes: the id, or the name when create was
	// asked but its answer is unknown; empty before create.
	ref  string
	ln   *net.UnixListener
	init initConn
	// staged are the staging mounts of the grants' sources (root only),
	// detached by Close.
	staged []string
	// handed are the write grants (their staged sources) given to the
	// tool's uid for the run; Close hands them back to their owner.
	handed *reown.Handed
	// stagingRoot is a warm container's shared mount of the staging
	// directory, detached by Close after staged.
	stagingRoot string
	// volume holds the copies of what the engine cannot see (copy.go),
	// removed by Close after the container; attached is the container's
	// attached streams, and streamed says the init speaks over them.
	volume   string
	attached io.Closer
	streamed bool
	// cwd is the working directory of a command that names none: a warm
	// container's init runs in /, a cold one's in the plan's.
	cwd string

	// execs admits Execs until Kill or Close, and lets Kill wait for
	// those running.
	execs execgate.Gate

	mu       sync.Mutex
	initGone bool        // an Exec found the init gone
	pid      int         // the init's host pid, once an inspect told it
	lastCg   cgroupStats // read just before the container was killed

	closeOnce sync.Once
	closeErr  error
}

// Exec runs cmd through the init; stdio flows over descriptors the init
// received, never through the engine.
func (s *sandbox) Exec(ctx context.Context, cmd isolation.Command, stdio isolation.Stdio) (isolation.Exit, error) {
	leave, err := s.execs.Enter()
	if err != nil {
		return isolation.Exit{}, fmt.Errorf("exec %s in container %s: %w", cmd.Name, s.name, err)
	}
	defer leave()
	if cmd.Cwd == "" {
		cmd.Cwd = s.cwd
	}
	ex, err := s.init.Exec(ctx, cmd, stdio)
	if errors.Is(err, sbinit.ErrInitGone) {
		s.mu.Lock()
		s.initGone = true
		s.mu.Unlock()
	}
	return ex, err
}

// Kill sends SIGTERM to every process through the init, waits until the
// running commands ended or grace passed, then kills the container.
func (s *sandbox) Kill(ctx context.Context, grace time.Duration) error {
	if !s.execs.Kill() {
		return nil
	}
	if s.init != nil && grace > 0 {
		if err := s.init.Signal(0, syscall.SIGTERM); err == nil {
			s.execs.Wait(ctx, grace)
		}
	}
	if s.id == "" {
		return nil
	}
	// The cgroup goes with the container: keep what it measured.
	s.mu.Lock()
	pid := s.pid
	s.mu.Unlock()
	cg := readCgroupStats(pid, s.id)
	if s.streamed {
		cg = s.initStats(ctx)
	}
	s.mu.Lock()
	s.lastCg = maxStats(s.lastCg, cg)
	s.mu.Unlock()
	err := s.api.ContainerKill(ctx, s.id, "KILL")
	if err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
		return fmt.Errorf("kill container %s: %w", s.name, err)
	}
	return nil
}

// Stats reports whether the engine saw an OOM kill and, best effort, the
// container cgroup's peak memory and pids-limit hits. The cgroup goes with
// the container: Kill keeps its last reading, and after Close nothing is
// left to ask.
func (s *sandbox) Stats(ctx context.Context) (isolation.Stats, error) {
	var st isolation.Stats
	if s.id == "" {
		return st, fmt.Errorf("stats of container %s: %w", s.name, isolation.ErrClosed)
	}
	ins, err := s.api.ContainerInspect(ctx, s.id)
	if err != nil {
		return st, fmt.Errorf("inspect container %s: %w", s.name, err)
	}
	s.mu.Lock()
	gone := s.initGone
	s.mu.Unlock()
	// Under runsc the host's OOM killer may kill the Sentry itself: the
	// init is gone at once, and the engine records the OOM kill only once
	// the container has stopped (its cgroup, with the kernel's count, is
	// gone by then). Wait for that, briefly; the engine may take the
	// container's exit before its OOM event, so a stopped container gets
	// another second for the OOM mark.
	settle := 0
	for i := 0; gone && s.plan.Runtime == "runsc" && i < 60 && ins.State != nil && !ins.State.OOMKilled; i++ {
		if !ins.State.Running {
			if settle++; settle > 10 {
				break
			}
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if ins, err = s.api.ContainerInspect(ctx, s.id); err != nil {
			return st, fmt.Errorf("inspect container %s: %w", s.name, err)
		}
	}
	pid := 0
	if ins.State != nil {
		st.OOMKilled = ins.State.OOMKilled
		pid = ins.State.Pid
	}
	cg := readCgroupStats(pid, s.id)
	if s.streamed {
		pid, cg = 0, s.initStats(ctx)
	}
	s.mu.Lock()
	if pid > 0 {
		s.pid = pid
	}
	cg = maxStats(cg, s.lastCg)
	s.lastCg = cg
	s.mu.Unlock()
	st.PeakMemoryBytes = cg.peak
	st.OOMKilled = st.OOMKilled || cg.oomKills > 0
	st.PidsLimitHit = cg.pidsMax > 0
	return st, nil
}

// Close closes the init's channel (the init kills everything) and
// force-removes the container with its volumes, whatever happened before.
// It returns once the container is gone. It is idempotent.
func (s *sandbox) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.execs.Close()
		var errs []error
		if s.init != nil {
			_ = s.init.Close()
		}
		if s.ref != "" {
			if err := removeContainer(ctx, s.api, s.ref); err != nil {
				errs = append(errs, fmt.Errorf("remove container %s: %w", s.name, err))
			}
		}
		if s.attached != nil {
			_ = s.attached.Close()
		}
		if s.volume != "" {
			if err := s.api.VolumeRemove(ctx, s.volume, true); err != nil && !cerrdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("remove volume %s: %w", s.volume, err))
			}
		}
		if s.ln != nil {
			if err := s.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, fmt.Errorf("close control socket: %w", err))
			}
		}
		// The grants back to root once nothing of the run can write in
		// them, through their staged sources.
		if err := s.handed.Back(); err != nil {
			errs = append(errs, err)
		}
		s.handed = nil
		// The staged binds go once the container that used them is gone
		// (or could not be removed: the engine holds its own mounts).
		if err := unstage(s.staged); err != nil {
			errs = append(errs, err)
		}
		if err := unshareStagingRoot(s.stagingRoot); err != nil {
			errs = append(errs, err)
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
