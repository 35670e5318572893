package sandbox

import (
	"fmt"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/egress"
	"github.com/sandboxed-dev/sandboxed/policy"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// planQuotas puts the policy's quotas into the egress section, saying for
// each what the proxy can count: requests where it reads them (plain
// HTTP, and HTTPS to the hosts whose TLS it terminates), connections
// where a tunnel's TLS passes through.
//
// The tool's own quotas (sandboxed.quotas) are added: both hold, so a
// tool can only narrow the operator's caps. Their windows are the tool's
// own (their rule names the tool).
func planQuotas(eg *isolation.Egress, qs []policy.Quota, toolName string, own []tool.Quota) {
	if eg == nil {
		return
	}
	for i, q := range own {
		qs = append(qs, policy.Quota{Host: q.Host, Requests: q.Requests, Bytes: q.Bytes, Window: q.Window,
			Rule: fmt.Sprintf("%s: sandboxed.quotas[%d]", toolName, i)})
	}
	var inspected []string
	for _, c := range eg.Credentials {
		inspected = append(inspected, c.Hosts...)
	}
	for _, r := range eg.HTTP {
		inspected = append(inspected, r.Host)
	}
	for _, q := range qs {
		eg.Quotas = append(eg.Quotas, egress.Quota{Host: q.Host, Requests: q.Requests, Bytes: q.Bytes, Window: q.Window,
			Rule: q.Rule, Counts: egress.QuotaCounts(q.Host, inspected)})
	}
}

// quotaNotes describe the run's quotas, with their rules, for explain and
// the run's notes.
func quotaNotes(eg *isolation.Egress) []string {
	if eg == nil {
		return nil
	}
	var out []string
	for _, q := range eg.Quotas {
		var caps string
		if q.Requests > 0 {
			caps = fmt.Sprintf("%d requests", q.Requests)
		}
		if q.Bytes > 0 {
			if caps != "" {
				caps += " and "
			}
			caps += fmt.Sprintf("%d bytes", q.Bytes)
		}
		per := "per run"
		if q.Window > 0 {
			per = "per " + q.Window.String() + " across runs"
		}
		out = append(out, fmt.Sprintf("quota %s: %s to %s %s, then HTTP 429; counts %s", q.Rule, caps, q.Host, per, q.Counts))
	}
	return out
}

// quotaWarnings are the warnings of a run the proxy refused requests of
// for a quota.
func quotaWarnings(entries []EgressEntry) []string {
	var out []string
	for _, e := range entries {
		if e.Verdict == string(egress.QuotaExceeded) {
			out = append(out, fmt.Sprintf("%s: %s:%d: %s", CodeQuota, e.Host, e.Port, e.Reason))
		}
	}
	return out
}
