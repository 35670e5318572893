package sandbox

import (
	"strings"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// The plan carries the policy's quotas and the tool's own, each with its
// rule and what the proxy can count for its host.
func TestPlanQuotas(t *testing.T) {
	eg := &isolation.Egress{HTTP: []isolation.HTTPRule{{Host: "api.test"}}}
	planQuotas(eg, []policy.Quota{{Host: "api.test", Requests: 60, Window: time.Minute, Rule: "quotas[0]"}},
		"caller", []tool.Quota{{Host: "other.test", Bytes: 1 << 20}})
	if len(eg.Quotas) != 2 {
		t.Fatalf("quotas %+v", eg.Quotas)
	}
	if q := eg.Quotas[0]; q.Rule != "quotas[0]" || !strings.HasPrefix(q.Counts, "requests (plain HTTP, and HTTPS") {
		t.Errorf("policy quota %+v", q)
	}
	if q := eg.Quotas[1]; q.Rule != "caller: sandboxed.quotas[0]" || q.Bytes != 1<<20 || !strings.Contains(q.Counts, "one connection") {
		t.Errorf("tool quota %+v", q)
	}
	notes := quotaNotes(eg)
	if len(notes) != 2 || !strings.Contains(notes[0], "60 requests to api.test per 1m0s across runs") || !strings.Contains(notes[1], "1048576 bytes to other.test per run") {
		t.Errorf("notes %q", notes)
	}
	planQuotas(nil, []policy.Quota{{Host: "x"}}, "t", nil) // no network: nothing to cap
}
