package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/internal/execgate"
	"github.com/sandboxed-dev/sandboxed/isolation/internal/headbuf"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
	"github.com/sandboxed-dev/sandboxed/isolation/seccomp"
)

// pollInterval is how often a starting or ending pod is looked at.
const pollInterval = 100 * time.Millisecond

// sandbox is one run's pod.
type sandbox struct {
	api      *api
	plan     *isolation.Plan
	name     string
	settings *Settings
	objs     *podObjects

	made struct{ policy, configMap, pod bool }
	// copied are the regular files each write grant had when they were
	// copied in: those the sandbox no longer has are deleted on the way
	// back.
	copied [][]string

	// filter is the plan's seccomp profile, compiled: the init loads it
	// inside the pod, below the pod's own profile.
	filter []byte
	// nproc is the commands' process limit the init applies
	// (sbinit.Config.NprocLimit): the plan's pids limit under gVisor, 0
	// elsewhere (the node's pod pids limit applies).
	nproc      int64
	init       *sbinit.StreamClient
	stopStream context.CancelFunc
	streamDone chan struct{}
	stderr     headbuf.Buffer // the exec stream's stderr: the bridge's complaints

	// execs admits Execs until Kill, and lets Kill wait for those
	// running.
	execs execgate.Gate

	closeOnce sync.Once
	closeErr  error
	// copyBackOnce guards the copy of the write grants back (copyBack);
	// copyBackAsked says the controller asked for it (CopyBack), which
	// then reported its error: Close does not copy again or repeat it.
	copyBackOnce  sync.Once
	copyBackErr   error
	copyBackAsked atomic.Bool
}

// Start makes the run's NetworkPolicy, ConfigMap and Pod, waits for the
// pod to run, sends the init over an exec stream, hands it the plan and
// copies the write grants in. On error everything made is deleted.
func (b *Backend) Start(ctx context.Context, p *isolation.Plan) (_ isolation.Sandbox, retErr error) {
	a, err := b.client()
	if err != nil {
		return nil, err
	}
	img, size, err := initImage()
	if err != nil {
		return nil, err
	}
	defer img.Close()
	env, err := b.env(ctx, a)
	if err != nil {
		return nil, err
	}
	var rc runtimeInfo
	if p.Runtime != "" {
		if rc, err = b.runtimeClass(ctx, a, p.Runtime); err != nil {
			return nil, err
		}
	}
	env.gvisor = rc.gvisor
	o, err := buildObjects(p, &b.settings, env)
	if err != nil {
		return nil, err
	}
	s := &sandbox{api: a, plan: p, name: objectName(p.RunID), settings: &b.settings, objs: o}
	if rc.gvisor {
		// A kernel of the pod's own: the uid's task count is the pod's.
		s.nproc = isolation.SpecPids(p.Spec)
	}
	if s.filter, err = planFilter(p); err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			s.teardown(cctx)
		}
	}()
	if err := b.waitSlot(ctx, a); err != nil {
		return nil, err
	}
	// The policy first: the pod never exists without it.
	s.made.policy = true
	if err := a.create(ctx, networkingGroup, "networkpolicies", o.policy, nil); err != nil {
		return nil, b.apiFailure("create the run's NetworkPolicy", err)
	}
	if o.configMap != nil {
		s.made.configMap = true
		if err := a.create(ctx, "", "configmaps", o.configMap, nil); err != nil {
			return nil, b.apiFailure("create the run's ConfigMap", err)
		}
	}
	s.made.pod = true
	if err := a.create(ctx, "", "pods", o.pod, nil); err != nil {
		return nil, b.apiFailure("create the run's pod", err)
	}
	if err := s.waitRunning(ctx); err != nil {
		return nil, err
	}
	if err := s.attach(ctx, img, size); err != nil {
		return nil, err
	}
	if err := s.copyIn(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// planFilter compiles the plan's seccomp profile ("" when it has none).
func planFilter(p *isolation.Plan) ([]byte, error) {
	if p.Spec == nil || p.Spec.Linux == nil || p.Spec.Linux.Seccomp == nil {
		return nil, nil
	}
	prog, err := seccomp.Compile(p.Spec.Linux.Seccomp)
	if err != nil {
		return nil, fmt.Errorf("compile the plan's seccomp profile: %w", err)
	}
	return sbinit.EncodeProgram(prog), nil
}

// waitSlot waits until fewer than Concurrency pods of runs are live in the
// namespace.
func (b *Backend) waitSlot(ctx context.Context, a *api) error {
	if b.settings.Concurrency <= 0 {
		return nil
	}
	for {
		var l objectList
		if err := a.list(ctx, "", "pods", isolation.AnnotationRunID, &l); err != nil {
			return b.apiFailure("count the live runs", err)
		}
		live := 0
		for _, it := range l.Items {
			if it.Metadata.DeletionTimestamp == nil && (it.Status.Phase == "" || it.Status.Phase == string(corev1.PodPending) || it.Status.Phase == string(corev1.PodRunning)) {
				live++
			}
		}
		if live < b.settings.Concurrency {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for one of %d run slots in namespace %s: %w", b.settings.Concurrency, a.ns, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// podFailure is why a pod will not run, with the fix.
func podFailure(pod *corev1.Pod, image string) error {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return &isolation.UnsupportedError{What: "a node for the run's pod: " + c.Message,
				Fix: "lower what the tool asks for (resources.max-memory, sandboxed.cpus) or the policy's caps, or make a node able to take it (`kubectl describe nodes` says why none can)"}
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName":
				return &isolation.UnsupportedError{What: fmt.Sprintf("image %s in the cluster (%s: %s)", image, w.Reason, w.Message),
					Fix: "make the image available to the nodes: push it to a registry they pull from, or import it into each node's container runtime (`sandboxed images build`, then `ctr -n k8s.io images import`)"}
			case "CreateContainerConfigError", "CreateContainerError", "RunContainerError", "CrashLoopBackOff":
				if sp := pod.Spec.SecurityContext; sp != nil && sp.SeccompProfile != nil && sp.SeccompProfile.LocalhostProfile != nil &&
					strings.Contains(strings.ToLower(w.Message), "seccomp") {
					name := *sp.SeccompProfile.LocalhostProfile
					return &isolation.UnsupportedError{What: fmt.Sprintf("the seccomp profile %s on the run's node (%s: %s)", name, w.Reason, w.Message),
						Fix: fmt.Sprintf("install it on every node (`sandboxed setup --seccomp-profile /var/lib/kubelet/seccomp/%s`, under the kubelet's root directory), or run with --kube-seccomp-profile RuntimeDefault", name)}
				}
				return fmt.Errorf("start the run's pod: %s: %s", w.Reason, w.Message)
			}
		}
		if t := cs.State.Terminated; t != nil {
			return fmt.Errorf("the run's pod ended before its init started: %s (exit %d) %s", t.Reason, t.ExitCode, t.Message)
		}
	}
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return fmt.Errorf("the run's pod ended before its init started: %s %s", pod.Status.Reason, pod.Status.Message)
	}
	return nil
}

func running(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == containerName && cs.State.Running != nil {
			return true
		}
	}
	return false
}

// eventList is the part of an event list waitRunning reads.
type eventList struct {
	Items []struct {
		Type    string `json:"type"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
		Count   int    `json:"count"`
	} `json:"items"`
}

// waitRunning waits until the pod's container runs, failing fast on what
// will not get better by waiting.
func (s *sandbox) waitRunning(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.settings.startTimeout())
	defer cancel()
	t0 := time.Now()
	lastEvents := time.Time{}
	var warnings string
	failures := 0
	for {
		var pod corev1.Pod
		err := s.api.get(ctx, "", "pods", s.name, &pod)
		if err != nil && ctx.Err() == nil {
			// A connection the server closed (a restart, a GOAWAY) is
			// tried again; an API server that stays away is not.
			if failures++; failures >= 5 {
				return fmt.Errorf("watch the run's pod %s: %w", s.name, err)
			}
		} else {
			failures = 0
		}
		if err == nil {
			if running(&pod) {
				return nil
			}
			if err := podFailure(&pod, s.plan.Image); err != nil {
				return err
			}
		}
		// A sandbox the node cannot make (a RuntimeClass whose handler
		// the runtime lacks) shows only in events.
		if time.Since(t0) > 2*time.Second && time.Since(lastEvents) > time.Second {
			lastEvents = time.Now()
			var ev eventList
			q := map[string][]string{"fieldSelector": {"involvedObject.name=" + s.name}}
			if s.api.do(ctx, "GET", s.api.path("", "events", ""), q, nil, &ev) == nil {
				var ws []string
				for _, e := range ev.Items {
					if e.Type != "Warning" {
						continue
					}
					ws = append(ws, e.Reason+": "+e.Message)
					if e.Reason == "FailedCreatePodSandBox" && e.Count >= 2 {
						return &isolation.UnsupportedError{What: "a sandbox for the run's pod on its node: " + e.Message,
							Fix: "check the RuntimeClass's handler is configured in the node's container runtime (`kubectl describe pod` shows the same)"}
					}
				}
				warnings = strings.Join(ws, "; ")
			}
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("the run's pod %s did not start within %s", s.name, s.settings.startTimeout())
			if warnings != "" {
				msg += ": " + warnings
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return errors.New(msg)
			}
			return fmt.Errorf("%s: %w", msg, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// attach opens an exec session in the pod, sends the init binary down it
// and hands the init the plan.
func (s *sandbox) attach(ctx context.Context, img io.Reader, size int64) error {
	u, err := s.api.execURL(s.name, bridgeCommand(size))
	if err != nil {
		return err
	}
	exec, err := remotecommand.NewSPDYExecutor(s.api.cfg, "POST", u)
	if err != nil {
		return fmt.Errorf("attach to the run's pod: %w", err)
	}
	// The stream lives until Close, past the run's own deadline.
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stopStream = stop
	s.streamDone = make(chan struct{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		defer close(s.streamDone)
		err := exec.StreamWithContext(sctx, remotecommand.StreamOptions{Stdin: inR, Stdout: outW, Stderr: &s.stderr})
		if err == nil {
			err = io.EOF
		}
		outW.CloseWithError(err)
		inR.CloseWithError(err)
	}()
	if _, err := io.Copy(inW, img); err != nil {
		return fmt.Errorf("send the init into the run's pod: %w%s", err, s.stderr.Note("the pod"))
	}
	cl := sbinit.NewStreamClient(outR, inW)
	cl.KillGrace = s.plan.Limits.KillGrace
	if eg := s.plan.Egress; eg != nil {
		sock := eg.ProxySocket
		cl.DialEgress = func() (net.Conn, error) { return net.Dial("unix", sock) }
	}
	s.init = cl
	// The node may be busy (many pods starting at once): the init's
	// start is part of the pod's, and has as long.
	hctx, cancel := context.WithTimeout(ctx, s.settings.startTimeout())
	defer cancel()
	if err := cl.WaitHello(hctx); err != nil {
		return fmt.Errorf("start the init in the run's pod: %w%s%s", err, s.stderr.Note("the pod"), s.podNote(ctx))
	}
	cfg := &sbinit.Config{RunID: s.plan.RunID, Filter: s.filter, NprocLimit: s.nproc, Egress: sbinit.NewEgressRelay(s.plan.Egress)}
	if err := cl.Handshake(hctx, cfg); err != nil {
		return fmt.Errorf("hand the plan to the init: %w%s%s", err, s.stderr.Note("the pod"), s.podNote(ctx))
	}
	return nil
}

// copyIn puts the write grants' files into their volumes.
func (s *sandbox) copyIn(ctx context.Context) error {
	s.copied = make([][]string, len(s.objs.copies))
	for i, c := range s.objs.copies {
		files, err := regularFiles(c.Host, c.Skip)
		if err != nil {
			return fmt.Errorf("read the write grant %s: %w", c.Host, err)
		}
		s.copied[i] = files
		pr, pw := io.Pipe()
		go func() {
			pw.CloseWithError(sbinit.WriteTar(pw, &sbinit.Transfer{Path: c.Host, Skip: c.Skip}))
		}()
		err = s.init.Put(ctx, sbinit.Transfer{Path: c.Target, MaxBytes: s.settings.maxWriteBytes()}, pr)
		pr.Close()
		if err != nil {
			if errors.Is(err, sbinit.ErrTooLarge) || strings.Contains(err.Error(), "more than") {
				return unsupported(fmt.Sprintf("the write grant %s: %v", c.Host, err), "grant a smaller directory, or run with --backend local")
			}
			return err
		}
	}
	return nil
}

// copyOut brings the write grants' files back to the host.
func (s *sandbox) copyOut(ctx context.Context) error {
	var errs []error
	for i, c := range s.objs.copies {
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		seen := map[string]bool{}
		go func() {
			err := extractInto(pr, c.Host, c.Skip, s.settings.maxWriteBytes(), seen)
			pr.CloseWithError(err)
			io.Copy(io.Discard, pr)
			done <- err
		}()
		err := s.init.Get(ctx, sbinit.Transfer{Path: c.Target, Skip: c.Skip, MaxBytes: s.settings.maxWriteBytes()}, pw)
		pw.CloseWithError(err)
		if xerr := <-done; err == nil {
			err = xerr
		}
		if err == nil && i < len(s.copied) {
			// Only after a whole copy: a cut one says nothing of deletions.
			err = removeGone(c.Host, s.copied[i], seen)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("copy the write grant %s back: %w", c.Host, err))
		}
	}
	return errors.Join(errs...)
}

// Exec runs cmd through the init over the attach stream.
func (s *sandbox) Exec(ctx context.Context, cmd isolation.Command, stdio isolation.Stdio) (isolation.Exit, error) {
	leave, err := s.execs.Enter()
	if err != nil {
		return isolation.Exit{}, fmt.Errorf("exec %s in pod %s: %w", cmd.Name, s.name, err)
	}
	defer leave()
	return s.init.Exec(ctx, cmd, stdio)
}

// Kill sends SIGTERM to the commands' process groups, waits up to grace
// for them to end, then SIGKILL. Not to every process of the pod: the
// bridge that carries the stream is one of them, and the write grants
// still have to come back. What the commands left in other groups dies
// with the init when Close ends the stream.
func (s *sandbox) Kill(ctx context.Context, grace time.Duration) error {
	s.execs.Kill()
	if s.init == nil {
		return nil
	}
	if grace > 0 && s.init.SignalCommands(syscall.SIGTERM) == nil {
		s.execs.Wait(ctx, grace)
	}
	_ = s.init.SignalCommands(syscall.SIGKILL)
	return nil
}

// Stats asks the init for the cgroup's peak memory and OOM kills; when
// the init is gone it reads how the pod's container ended: the memory
// limit's kill of a gVisor sandbox (the Sentry, which holds the pod's
// memory) ends the whole container, and the runtime reports it as the
// container's reason, OOMKilled.
func (s *sandbox) Stats(ctx context.Context) (isolation.Stats, error) {
	if s.init != nil && s.init.Err() == nil {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := s.init.Stats(sctx)
		cancel()
		if err == nil {
			return isolation.Stats{PeakMemoryBytes: st.PeakMemoryBytes, OOMKilled: st.OOMKills > 0}, nil
		}
	}
	// The init was the container's PID 1: the container is ending, and
	// its status says how once the kubelet saw it end.
	deadline := time.Now().Add(terminatedWait)
	for {
		var pod corev1.Pod
		if err := s.api.get(ctx, "", "pods", s.name, &pod); err != nil {
			return isolation.Stats{}, err
		}
		if t := terminated(&pod); t != nil {
			return isolation.Stats{OOMKilled: t.Reason == oomKilled}, nil
		}
		if time.Now().After(deadline) {
			return isolation.Stats{}, nil
		}
		select {
		case <-ctx.Done():
			return isolation.Stats{}, ctx.Err()
		case <-time.After(pollInterval):
		}
	}
}

// oomKilled is the reason of a container the memory limit killed.
const oomKilled = "OOMKilled"

// terminatedWait bounds Stats' wait for the kubelet to report the end of
// a container whose init is gone (its status is updated on the kubelet's
// next look at the runtime, about a second on an idle node; the run's
// cleanup, teardown included, has 30 seconds).
const terminatedWait = 15 * time.Second

// terminated is the run's container's terminated state, nil while it has
// none.
func terminated(pod *corev1.Pod) *corev1.ContainerStateTerminated {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == containerName && cs.State.Terminated != nil {
			return cs.State.Terminated
		}
	}
	return nil
}

// CopyBack brings the write grants' files back to the host now, once.
// The controller calls it after the last command, so that what the run
// wrote is on the host — recorded for undo, checked for protected paths —
// before the result is reported, while the pod's deletion (Close) may run
// behind the result.
func (s *sandbox) CopyBack(ctx context.Context) error {
	s.copyBackAsked.Store(true)
	return s.copyBack(ctx)
}

func (s *sandbox) copyBack(ctx context.Context) error {
	s.copyBackOnce.Do(func() {
		if s.init != nil && s.init.Err() == nil && len(s.objs.copies) > 0 {
			s.copyBackErr = s.copyOut(ctx)
		}
	})
	return s.copyBackErr
}

// Close copies the write grants back (unless CopyBack did), ends the init
// (which kills what is left) and deletes the pod, its ConfigMap and its
// NetworkPolicy, waiting until the pod is gone. It is idempotent.
func (s *sandbox) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		var errs []error
		if !s.copyBackAsked.Load() {
			errs = append(errs, s.copyBack(ctx))
		}
		errs = append(errs, s.teardown(ctx))
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// teardown ends the stream and deletes every object made, whatever was.
func (s *sandbox) teardown(ctx context.Context) error {
	if s.init != nil {
		s.init.Close()
	}
	if s.streamDone != nil {
		select {
		case <-s.streamDone:
		case <-time.After(5 * time.Second):
		}
		s.stopStream()
	}
	var errs []error
	if s.made.pod {
		errs = append(errs, s.removeRetrying(ctx, "", "pods"))
	}
	if s.made.configMap {
		errs = append(errs, s.removeRetrying(ctx, "", "configmaps"))
	}
	if s.made.policy {
		errs = append(errs, s.removeRetrying(ctx, networkingGroup, "networkpolicies"))
	}
	if s.made.pod {
		// Wait until the pod object is gone, so nothing of the run is
		// left when it reports.
		for {
			var pod corev1.Pod
			err := s.api.get(ctx, "", "pods", s.name, &pod)
			if isNotFound(err) {
				break
			}
			if ctx.Err() != nil {
				errs = append(errs, fmt.Errorf("pod %s is still being deleted: its node has not confirmed that it stopped", s.name))
				break
			}
			if err != nil && errors.Is(err, ErrUnreachable) {
				errs = append(errs, err)
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(pollInterval):
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("delete the run's objects (sandboxed gc retries): %w", err)
	}
	return nil
}

// podNote says how the pod's container ended, and the end of its log,
// for an error about an init that went away.
func (s *sandbox) podNote(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var note string
	var pod corev1.Pod
	if s.api.get(ctx, "", "pods", s.name, &pod) == nil {
		for _, cs := range pod.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil {
				note += fmt.Sprintf(" (the container ended: %s, exit %d %s)", t.Reason, t.ExitCode, strings.TrimSpace(t.Message))
			}
		}
	}
	var log []byte
	q := map[string][]string{"container": {containerName}, "tailLines": {"20"}}
	if s.api.do(ctx, "GET", s.api.path("", "pods", s.name)+"/log", q, nil, &log) == nil {
		if t := strings.TrimSpace(string(log)); t != "" {
			note += " (its log: " + t + ")"
		}
	}
	return note
}

// removeRetrying deletes the run's object of resource, trying again a
// few times when the API server drops the request.
func (s *sandbox) removeRetrying(ctx context.Context, group, resource string) error {
	var err error
	for i := 0; i < 4; i++ {
		if err = s.api.remove(ctx, group, resource, s.name); err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(i+1) * 250 * time.Millisecond):
		}
	}
	return err
}
