package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// The plan a run prints carries exactly the bytes the tool asked for when
// the policy's cap is written the same way: `max: 512MB` in a policy and
// `max-memory: 512MB` in a tool are both 512MiB. Before, the policy read
// its cap as 10^6-based and the plan said 512000000.
func TestDumpPlanPolicyCapWrittenLikeTheTool(t *testing.T) {
	var doc struct {
		Plan struct {
			Limits struct {
				MemoryBytes int64 `json:"memory_bytes"`
				Timeout     int64 `json:"timeout"`
			} `json:"limits"`
		} `json:"plan"`
		Decision struct {
			Limits struct {
				MemoryBytes int64 `json:"memory_bytes"`
				TimeoutMS   int64 `json:"timeout_ms"`
			} `json:"limits"`
		} `json:"decision"`
	}
	dumpPlan(t, "limits:\n  memory:\n    max: 512MB\n  timeout:\n    max: 1h\n",
		"name: mem\ndescription: asks for memory\nbash: echo hi\ntags: [read]\nresources:\n  max-memory: 512MB\n  timeout: 1000\n", &doc)
	const want = 512 << 20
	if doc.Plan.Limits.MemoryBytes != want || doc.Decision.Limits.MemoryBytes != want {
		t.Errorf("memory: plan %d, decision %d; want %d (the tool's 512MB)", doc.Plan.Limits.MemoryBytes, doc.Decision.Limits.MemoryBytes, want)
	}
	if doc.Plan.Limits.Timeout != 1e9 || doc.Decision.Limits.TimeoutMS != 1000 {
		t.Errorf("timeout: plan %dns, decision %dms; want the tool's 1000ms", doc.Plan.Limits.Timeout, doc.Decision.Limits.TimeoutMS)
	}
}

// Every limit of the plan is the decision's: a tool asking above the
// policy's caps for cpus, /tmp and pids gets the caps in both, and the
// decision's items say so.
func TestDumpPlanLimitsAreThePolicys(t *testing.T) {
	type limits struct {
		Pids       int64   `json:"pids"`
		CPUs       float64 `json:"cpus"`
		TmpfsBytes int64   `json:"tmpfs_bytes"`
	}
	var doc struct {
		Plan struct {
			Limits limits `json:"limits"`
		} `json:"plan"`
		Decision struct {
			Limits limits `json:"limits"`
			Items  []struct {
				Subject, Reason string
			} `json:"items"`
		} `json:"decision"`
	}
	dumpPlan(t, "limits:\n  cpus:\n    max: 1.5\n  tmpfs:\n    max: 32MiB\n  pids:\n    max: 100\n",
		"name: big\ndescription: asks for much\nbash: echo hi\ntags: [read]\nsandboxed:\n  cpus: 4\n  tmpfs-size: 1GiB\n  pids-limit: 500\n", &doc)
	want := limits{Pids: 100, CPUs: 1.5, TmpfsBytes: 32 << 20}
	if doc.Plan.Limits != want || doc.Decision.Limits != want {
		t.Errorf("plan %+v, decision %+v; want the caps %+v", doc.Plan.Limits, doc.Decision.Limits, want)
	}
	var said []string
	for _, it := range doc.Decision.Items {
		if strings.HasPrefix(it.Subject, "limits.") {
			said = append(said, it.Subject+": "+it.Reason)
		}
	}
	if !slices.Equal(said, []string{"limits.pids: requested 500, clamped to the cap 100", "limits.cpus: requested 4, clamped to the cap 1.5",
		"limits.tmpfs: requested 1GiB, clamped to the cap 32MiB"}) {
		t.Errorf("limit items %q", said)
	}
}

// A deny rule naming a directory "[draft]" hides that directory in the
// plan, and nothing else: '[' is literal in the policy's decision and in
// the plan's mask alike. Before, the decision read it literally and the
// plan as a character class, hiding a directory "d" and leaving "[draft]"
// readable.
func TestDumpPlanDenyMaskWithBracket(t *testing.T) {
	home, _ := isolate(t)
	notes := filepath.Join(home, "notes")
	for _, d := range []string{"[draft]", "d", "r"} {
		if err := os.MkdirAll(filepath.Join(notes, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(notes, "[draft]", "secret"), []byte("s"), 0o644)
	pol := writeTool(t, home, "deny.yaml", "paths:\n  deny:\n    - \""+notes+"/[draft]\"\n")
	def := writeTool(t, home, "reader.yaml", "name: reader\ndescription: reads notes\nbash: ls\ntags: [read]\n"+
		"security:\n  required-permissions:\n    - filesystem:read:"+notes+"\n")
	out, errOut, code := runApp(t, "run", "--dump-plan", "--policy", pol, "--approve", "filesystem:read:"+notes, def)
	if code != 0 {
		t.Fatalf("run --dump-plan: exit %d: %s", code, errOut)
	}
	var doc struct {
		Plan struct {
			Spec struct {
				Mounts []struct {
					Destination string `json:"destination"`
					Type        string `json:"type"`
				} `json:"mounts"`
			} `json:"spec"`
		} `json:"plan"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("dump-plan output: %v\n%s", err, out)
	}
	var hidden []string
	for _, m := range doc.Plan.Spec.Mounts {
		if strings.HasPrefix(m.Destination, notes+"/") && m.Type == "tmpfs" {
			hidden = append(hidden, strings.TrimPrefix(m.Destination, notes+"/"))
		}
	}
	if !slices.Equal(hidden, []string{"[draft]"}) {
		t.Errorf("hidden under %s: %q, want exactly [draft]", notes, hidden)
	}
}

// --dry-run says who the tool runs as — the spec's user, which for a
// landlock-tier run as root is a uid of the run's own — and what holds
// its temporary files as its tier does: no /tmp of its own there.
func TestPlanIdentityByTier(t *testing.T) {
	plan := func(tr isolation.Tier, uid uint32, tmpfs int64) *isolation.Plan {
		return &isolation.Plan{Tier: tr, Spec: &specs.Spec{Process: &specs.Process{User: specs.User{UID: uid, GID: uid}}},
			Limits: isolation.Limits{TmpfsBytes: tmpfs}}
	}
	for _, c := range []struct {
		pl       *isolation.Plan
		who, tmp string
	}{
		{plan(isolation.TierProcess, 0, 64<<20), "uid 0 gid 0", "/tmp 64MiB"},
		{plan(isolation.TierLandlock, 1526726700, 64<<20), "uid 1526726700 gid 1526726700", "files up to 64MiB each (no /tmp of its own: a scratch directory on the host's)"},
		{plan(isolation.TierLandlock, 1000, 64<<20), "uid 1000 gid 1000", "files up to 64MiB each (no /tmp of its own: a scratch directory on the host's)"},
		{plan(isolation.TierNone, 1000, 0), "uid 1000 gid 1000", "the host's /tmp"},
	} {
		who, tmp := planIdentity(c.pl)
		if who != c.who || tmp != c.tmp {
			t.Errorf("%s uid %d: got %q, %q; want %q, %q", c.pl.Tier, c.pl.Spec.Process.User.UID, who, tmp, c.who, c.tmp)
		}
	}
}

// dumpPlan runs `run --dump-plan --policy` on a tool, both written from
// YAML into a home of the test's own, and decodes what it prints into doc.
func dumpPlan(t *testing.T, policyYAML, toolYAML string, doc any) {
	t.Helper()
	home, _ := isolate(t)
	pol := writeTool(t, home, "policy.yaml", policyYAML)
	def := writeTool(t, home, "tool.yaml", toolYAML)
	t.Chdir(home)
	out, errOut, code := runApp(t, "run", "--dump-plan", "--policy", pol, filepath.Base(def))
	if code != 0 {
		t.Fatalf("run --dump-plan: exit %d: %s", code, errOut)
	}
	if err := json.Unmarshal([]byte(out), doc); err != nil {
		t.Fatalf("dump-plan output: %v\n%s", err, out)
	}
}
