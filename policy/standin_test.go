package policy

import (
	"slices"
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/internal/tier"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// Where the process tier cannot run, a process-tier run is refused with
// the way out (--approve isolation-landlock, isolation.without-namespaces),
// and runs in the landlock tier with either.
func TestLandlockStandIn(t *testing.T) {
	standIn, err := Parse([]byte("sources:\n  - scope: any\n    isolation:\n      without-namespaces: landlock\n      landlock-gaps: [signals]\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	refuse, err := Parse([]byte("sources:\n  - scope: any\n    isolation:\n      without-namespaces: never\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const blocked = "namespaces cannot be made"
	cases := []struct {
		name      string
		pol       *Policy
		req       func(r *Request)
		iso       tool.Isolation
		verdict   Verdict
		standIn   bool // Decision.LandlockStandIn
		gaps      []string
		wantInFix string
	}{
		{"host that can", Default(), func(r *Request) {}, tool.IsolationProcess, Allow, false, nil, ""},
		{"blocked, no way out taken", Default(), func(r *Request) { r.NoProcessTier = blocked }, tier.Landlock, NeedsApproval, false, nil, "--approve isolation-landlock"},
		{"blocked, approved", Default(), func(r *Request) {
			r.NoProcessTier = blocked
			r.Approvals = []string{ApproveIsolationLandlock}
		}, tier.Landlock, Allow, true, nil, ""},
		{"approval alone: the caller must look", Default(), func(r *Request) { r.Approvals = []string{ApproveIsolationLandlock} }, tool.IsolationProcess, Allow, true, nil, ""},
		{"blocked, policy stands in", standIn, func(r *Request) { r.NoProcessTier = blocked }, tier.Landlock, Allow, true, []string{tier.GapSignals}, ""},
		{"--isolation landlock", Default(), func(r *Request) { r.Isolation = tier.Landlock }, tier.Landlock, NeedsApproval, false, nil, "isolation-landlock"},
		{"--isolation landlock, approved", Default(), func(r *Request) {
			r.Isolation = tier.Landlock
			r.Approvals = []string{ApproveIsolationLandlock}
		}, tier.Landlock, Allow, true, nil, ""},
		{"container asked, blocked", Default(), func(r *Request) {
			r.Isolation = tool.IsolationContainer
			r.NoProcessTier = blocked
		}, tool.IsolationContainer, Allow, false, nil, ""},
		{"blocked, policy refuses, approved", refuse, func(r *Request) {
			r.NoProcessTier = blocked
			r.Approvals = []string{ApproveIsolationLandlock, ApproveAll}
		}, tier.Landlock, Deny, false, nil, "without-namespaces: approve"},
		{"--isolation landlock, policy refuses, approved", refuse, func(r *Request) {
			r.Isolation = tier.Landlock
			r.Approvals = []string{ApproveAll}
		}, tier.Landlock, Deny, false, nil, "without-namespaces: approve"},
		{"policy refuses, host that can", refuse, func(r *Request) { r.Approvals = []string{ApproveAll} }, tool.IsolationProcess, Allow, false, nil, ""},
		{"elevated in landlock", Default(), func(r *Request) {
			r.NoProcessTier = blocked
			r.Privilege = tool.PrivilegeElevated
			r.Approvals = []string{ApproveIsolationLandlock, ApproveElevated}
		}, tier.Landlock, Deny, true, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := baseRequest()
			c.req(&r)
			d := c.pol.Decide(r)
			if d.Isolation != c.iso || d.Verdict != c.verdict || d.LandlockStandIn != c.standIn || !slices.Equal(d.AcceptGaps, c.gaps) {
				t.Fatalf("isolation %s verdict %s stand-in %v gaps %v; want %s %s %v %v\n%s",
					d.Isolation, d.Verdict, d.LandlockStandIn, d.AcceptGaps, c.iso, c.verdict, c.standIn, c.gaps, d.Hint())
			}
			if c.wantInFix != "" && !strings.Contains(d.Hint(), c.wantInFix) {
				t.Fatalf("hint lacks %q:\n%s", c.wantInFix, d.Hint())
			}
			if d.LandlockRefused != (c.pol == refuse && c.iso != tool.IsolationContainer) {
				t.Fatalf("LandlockRefused %v under %s", d.LandlockRefused, c.pol.Sources[0].Isolation.WithoutNamespaces)
			}
			if d.Isolation == tier.Landlock && !slices.Contains(d.Notes, LandlockNotes[1]) {
				t.Fatalf("a landlock-tier decision without the tier's notes: %v", d.Notes)
			}
		})
	}
}

func TestLandlockKeysAreChecked(t *testing.T) {
	for _, doc := range []string{
		"sources:\n  - scope: any\n    isolation:\n      without-namespaces: always\n",
		"sources:\n  - scope: any\n    isolation:\n      landlock-gaps: [network]\n",
	} {
		if _, err := Parse([]byte(doc), "p.yaml"); err == nil {
			t.Errorf("accepted:\n%s", doc)
		}
	}
	if err := ValidateApprovals([]string{ApproveIsolationLandlock}); err != nil {
		t.Error(err)
	}
}

// A policy written before never existed says refuse for what approve
// means now: it loads as approve, and an approval still lets the landlock
// tier stand in.
func TestStandInRefuseIsApprove(t *testing.T) {
	p, err := Parse([]byte("sources:\n  - scope: any\n    isolation:\n      without-namespaces: refuse\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Sources[0].Isolation.WithoutNamespaces; got != StandInApprove {
		t.Fatalf("refuse loads as %q, want approve", got)
	}
	r := baseRequest()
	r.NoProcessTier = "namespaces cannot be made"
	r.Approvals = []string{ApproveIsolationLandlock}
	if d := p.Decide(r); d.Isolation != tier.Landlock || d.Verdict != Allow || d.LandlockRefused {
		t.Fatalf("refuse with an approval: %s %s refused %v", d.Isolation, d.Verdict, d.LandlockRefused)
	}
}
