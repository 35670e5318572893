package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/sandboxed-dev/sandboxed/sandbox/explain"
)

// renderExplanation prints the review as text, section by section.
func renderExplanation(w io.Writer, e explain.Explanation) {
	t := e.Tool
	fmt.Fprintf(w, "Security review of %s", t.Name)
	if t.Version != "" {
		fmt.Fprintf(w, " %s", t.Version)
	}
	fmt.Fprintln(w)
	if t.Path != "" {
		fmt.Fprintf(w, "  definition: %s", t.Path)
		if t.SHA256 != "" {
			fmt.Fprintf(w, " (sha256 %s)", short(t.SHA256))
		}
		fmt.Fprintln(w)
	}
	if t.Description != "" {
		fmt.Fprintf(w, "  does:       %s\n", t.Description)
	}
	if t.Justification != "" {
		fmt.Fprintf(w, "  author says: %q\n", t.Justification)
	}
	trust := "untrusted"
	if e.Source.Trusted {
		trust = "trusted"
	}
	fmt.Fprintf(w, "  policy:     %s\n", e.Policy.Source)
	fmt.Fprintf(w, "  source:     %s (%s, %s)\n", e.Source.Scope, trust, e.Source.Rule)
	if len(e.Arguments.Approvals) > 0 {
		var as []string
		for _, a := range e.Arguments.Approvals {
			as = append(as, "--approve "+shellWord(a))
		}
		fmt.Fprintf(w, "  assuming:   %s\n", strings.Join(as, " "))
	}
	if e.Arguments.Note != "" {
		fmt.Fprintf(w, "  arguments:  %s\n", e.Arguments.Note)
	}

	fmt.Fprintf(w, "\nVerdict\n  %s\n", e.Verdict.Summary)
	if e.Verdict.Decision == explain.DecisionNeedsApproval {
		flags := make([]string, 0, len(e.Arguments.Approvals)+len(e.Verdict.ApproveFlags))
		for _, a := range e.Arguments.Approvals {
			flags = append(flags, "--approve "+shellWord(a))
		}
		flags = append(flags, e.Verdict.ApproveFlags...)
		fmt.Fprintf(w, "  to approve one run: sandboxed run %s %s\n", strings.Join(flags, " "), toolArg(e))
	}

	section(w, "Filesystem", e.Filesystem)
	section(w, "Network", e.Network)
	section(w, "Environment", e.Environment)
	section(w, "Privilege & isolation", e.Privilege)
	section(w, "Resources", e.Resources)

	fmt.Fprintf(w, "\nRisks\n")
	if len(e.Risks) == 0 {
		fmt.Fprintf(w, "  none found\n")
	}
	for _, r := range e.Risks {
		fmt.Fprintf(w, "  [%s] %s: %s\n", strings.ToUpper(r.Severity), r.Subject, r.Note)
	}
	if len(e.Notes) > 0 {
		fmt.Fprintf(w, "\nNotes\n")
		for _, n := range e.Notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
}

func toolArg(e explain.Explanation) string {
	if e.Tool.Path != "" {
		return shellWord(e.Tool.Path)
	}
	return e.Tool.Name
}

func shellWord(s string) string {
	if strings.ContainsAny(s, " *?[]'\"$`\\;&|<>(){}!#~") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

func verdictWord(v string) string {
	switch v {
	case explain.VerdictAllow:
		return "ALLOW"
	case explain.VerdictDeny:
		return "DENY"
	case explain.VerdictApproval:
		return "NEEDS APPROVAL"
	case explain.VerdictDepends:
		return "DECIDED AT RUN TIME"
	}
	return strings.ToUpper(v)
}

// maxMasksShown is how many policy masks of one mount the text shows.
const maxMasksShown = 5

func section(w io.Writer, title string, ps []explain.Point) {
	fmt.Fprintf(w, "\n%s\n", title)
	for _, p := range ps {
		risk := ""
		if p.Risk != "" {
			risk = ", " + p.Risk + " risk"
		}
		fmt.Fprintf(w, "  %s  [%s%s]\n", p.Subject, verdictWord(p.Verdict), risk)
		if p.Requested != "" && p.Requested != p.Subject {
			fmt.Fprintf(w, "    requested:   %s\n", p.Requested)
		}
		if p.Meaning != "" {
			fmt.Fprintf(w, "    means:       %s\n", p.Meaning)
		}
		masks := 0
		for i, m := range p.Mechanisms {
			label := "enforced by:"
			if i > 0 {
				label = ""
			}
			if m.Kind == explain.MechMask {
				if masks++; masks > maxMasksShown {
					continue
				}
			}
			fmt.Fprintf(w, "    %-12s %s\n", label, m.Detail)
		}
		if masks > maxMasksShown {
			fmt.Fprintf(w, "    %-12s and %d more policy masks (--json lists them all)\n", "", masks-maxMasksShown)
		}
		if p.Rule != "" {
			line := p.Rule
			if p.Reason != "" {
				line += ": " + p.Reason
			}
			fmt.Fprintf(w, "    policy:      %s\n", line)
		}
		if p.ApprovedBy != "" {
			fmt.Fprintf(w, "    approved by: %s\n", p.ApprovedBy)
		}
		if p.ApproveFlag != "" && p.Verdict == explain.VerdictApproval {
			fmt.Fprintf(w, "    to approve:  --approve %s\n", shellWord(p.ApproveFlag))
		}
		if p.PolicyFix != "" && p.Verdict != explain.VerdictAllow {
			fmt.Fprintf(w, "    for good:    %s\n", p.PolicyFix)
		}
	}
}

// renderDiff prints what the new version gains or loses.
func renderDiff(w io.Writer, d explain.ExplainDiff) {
	name := func(s explain.DiffSide) string {
		out := s.Name
		if s.Version != "" {
			out += " " + s.Version
		}
		if s.Path != "" {
			out += " (" + s.Path + ")"
		}
		return out
	}
	fmt.Fprintf(w, "Changes from %s\n          to %s\n\n", name(d.Old), name(d.New))
	fmt.Fprintf(w, "Verdict\n  old: %s\n  new: %s\n", d.Old.Summary, d.New.Summary)
	if d.Empty() {
		fmt.Fprintf(w, "\nNo change in permissions, security fields, limits or risks.\n")
		return
	}
	if len(d.PermissionsAdded)+len(d.PermissionsRemoved) > 0 {
		fmt.Fprintf(w, "\nPermissions\n")
		for _, p := range d.PermissionsAdded {
			fmt.Fprintf(w, "  + %s  (added)\n", p)
		}
		for _, p := range d.PermissionsRemoved {
			fmt.Fprintf(w, "  - %s  (removed)\n", p)
		}
	}
	if len(d.Changes) > 0 {
		fmt.Fprintf(w, "\nSecurity fields and limits\n")
		for _, c := range d.Changes {
			fmt.Fprintf(w, "  ~ %s: %s -> %s\n", c.Field, orNone(c.Old), orNone(c.New))
		}
	}
	if len(d.RisksAdded)+len(d.RisksRemoved) > 0 {
		fmt.Fprintf(w, "\nRisks\n")
		for _, r := range d.RisksAdded {
			fmt.Fprintf(w, "  + [%s] %s: %s\n", strings.ToUpper(r.Severity), r.Subject, r.Note)
		}
		for _, r := range d.RisksRemoved {
			fmt.Fprintf(w, "  - [%s] %s: %s\n", strings.ToUpper(r.Severity), r.Subject, r.Note)
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
