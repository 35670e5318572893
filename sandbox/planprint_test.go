package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// recordingProxy is an EgressStarter that keeps the section it was asked
// to start.
type recordingProxy struct{ got *isolation.Egress }

func (r *recordingProxy) Start(_ context.Context, e *isolation.Egress, _ *RunSecrets) (func() []EgressEntry, error) {
	r.got = e
	return func() []EgressEntry { return nil }, nil
}

// The plan Prepare returns (what `run --dump-plan` prints) is the plan the
// backend is given, byte for byte, with its host directory and egress
// rules; the run record stores it; and planning creates nothing.
func TestBackendGetsThePlanThatIsPrinted(t *testing.T) {
	cwd := t.TempDir()
	def, err := tool.Parse([]byte(`name: fetch
description: fetch a page into out/
version: 1.0.0
bash: echo hi
security:
  isolation: process
  required-permissions:
    - network:external:api.example.com:443
    - network:localhost:8080
    - filesystem:write:out/new
`), filepath.Join(cwd, "fetch.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fb := &fakeBackend{}
	state, rt := t.TempDir(), filepath.Join(t.TempDir(), "run")
	c := &Controller{StateDir: state, RuntimeDir: rt, Backends: map[isolation.Tier]isolation.Backend{isolation.TierProcess: fb}}
	proxy := &recordingProxy{}
	req := &Request{Def: def, Policy: policy.Default(), Approvals: []string{policy.ApproveAll}, Cwd: cwd, Egress: proxy,
		OwnDirs: []string{state, rt}}
	p, err := c.Prepare(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(cwd, "out")); err == nil {
		t.Error("planning created the write grant's directory")
	}
	if want := filepath.Join(rt, p.RunID); p.Plan.HostDir != want {
		t.Errorf("host dir %q, want %q", p.Plan.HostDir, want)
	}
	e := p.Plan.Egress
	if e == nil || e.ProxySocket != filepath.Join(p.Plan.HostDir, "egress.sock") || e.ProxyPort != EgressProxyPort ||
		len(e.Allow) != 1 || e.Allow[0].String() != "network:external:api.example.com:443" || len(e.LocalhostPorts) != 1 || len(e.Deny) == 0 {
		t.Fatalf("egress section %+v", e)
	}
	printed, err := json.Marshal(p.Plan)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RunPrepared(context.Background(), req, p); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fb.got, printed) {
		t.Errorf("the backend got another plan than the one printed\nprinted: %s\ngot:     %s", printed, fb.got)
	}
	if proxy.got != p.Plan.Egress {
		t.Errorf("the proxy was started from %+v, not from the plan's egress section", proxy.got)
	}
	if fi, err := os.Stat(filepath.Join(cwd, "out", "new")); err != nil || !fi.IsDir() {
		t.Errorf("the run did not create the write grant's directory: %v", err)
	}
	rec, err := os.ReadFile(filepath.Join(RunDir(state, p.RunID), "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back isolation.Plan
	if err := json.Unmarshal(rec, &back); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(RecordedPlan(p.Plan))
	got, _ := json.Marshal(&back)
	if !bytes.Equal(got, want) {
		t.Errorf("run record's plan differs\nrecorded: %s\nwant:     %s", got, want)
	}
	for _, kv := range back.Spec.Process.Env {
		if _, v, _ := bytes.Cut([]byte(kv), []byte("=")); string(v) != redacted {
			t.Errorf("the run record keeps the value of %s", kv)
		}
	}
}
