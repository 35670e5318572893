package container

import (
	"fmt"
	"sort"

	dseccomp "github.com/docker/docker/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// seccompProfile returns the profile the engine loads for a run: Docker's
// default profile (an allowlist) for the run's capabilities, narrowed by
// the plan's profile, so the container refuses at least what the engine
// refuses and what the process tier refuses.
//
// The plan's profile is a denylist evaluated first match wins (see package
// seccomp); the engine's loader (libseccomp) has no rule order, so the plan
// is folded in by its shape:
//   - a syscall the plan refuses outright is taken out of the allowlist
//     (and keeps the plan's errno);
//   - a syscall the plan allows only for some arguments, then refuses (for
//     example socket families), is allowed for those arguments only, unless
//     the engine's profile already restricts its arguments;
//   - rules that refuse a syscall for some arguments only (clone with
//     namespace flags) are left to the engine's profile, which allows clone
//     without namespace flags only (no CAP_SYS_ADMIN is ever granted); the
//     refusal of Multipath TCP sockets is dropped: it serves the process
//     tier's Landlock, which the container tier does not have.
//
// A plan profile that is not a denylist (default action other than allow)
// is refused: intersecting two allowlists is not done here.
func seccompProfile(plan *specs.LinuxSeccomp, caps []string) (*specs.LinuxSeccomp, error) {
	rs := &specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{Bounding: caps}}}
	def, err := dseccomp.GetDefaultProfile(rs)
	if err != nil {
		return nil, fmt.Errorf("render the engine's default seccomp profile: %w", err)
	}
	if plan == nil {
		return def, nil
	}
	if plan.DefaultAction != specs.ActAllow {
		return nil, &isolation.UnsupportedError{
			What: "a seccomp profile whose default action is " + string(plan.DefaultAction) + " in the container tier",
			Fix:  "use a denylist profile (default action SCMP_ACT_ALLOW); the container tier narrows Docker's default profile with it",
		}
	}

	deny := map[string]uint{}                      // refused outright, with errno
	condAllow := map[string][]specs.LinuxSyscall{} // allowed for some arguments only
	for _, r := range plan.Syscalls {
		for _, name := range r.Names {
			if _, done := deny[name]; done {
				continue
			}
			switch {
			case r.Action == specs.ActAllow && len(r.Args) > 0:
				condAllow[name] = append(condAllow[name], specs.LinuxSyscall{Names: []string{name}, Action: specs.ActAllow, Args: r.Args})
			case r.Action != specs.ActAllow && len(r.Args) == 0:
				if _, ok := condAllow[name]; ok {
					continue // the refusal closes an argument allowlist
				}
				errno := uint(1)
				if r.ErrnoRet != nil {
					errno = *r.ErrnoRet
				}
				deny[name] = errno
			}
		}
	}

	out := *def
	out.Syscalls = nil
	ruled := map[string]bool{} // some rule of the output names it
	// The engine's allow rules of each syscall the plan allows for some
	// arguments only, set aside to be intersected.
	engineAllows := map[string][]specs.LinuxSyscall{}
	for _, r := range def.Syscalls {
		if r.Action != specs.ActAllow {
			out.Syscalls = append(out.Syscalls, r)
			for _, n := range r.Names {
				ruled[n] = true
			}
			continue
		}
		var names []string
		for _, n := range r.Names {
			if _, ok := deny[n]; ok {
				continue
			}
			if _, ok := condAllow[n]; ok {
				engineAllows[n] = append(engineAllows[n], specs.LinuxSyscall{Names: []string{n}, Action: specs.ActAllow, Args: r.Args})
				continue
			}
			names = append(names, n)
		}
		if len(names) == 0 {
			continue
		}
		r.Names = names
		out.Syscalls = append(out.Syscalls, r)
		for _, n := range names {
			ruled[n] = true
		}
	}
	for _, n := range sortedKeys(engineAllows) {
		rules := intersectAllows(engineAllows[n], condAllow[n])
		out.Syscalls = append(out.Syscalls, rules...)
		ruled[n] = ruled[n] || len(rules) > 0
	}
	// Keep the plan's errno where it is not the engine's default one (an
	// errno rule is safe only for a syscall no other rule names).
	defErrno := uint(1)
	if def.DefaultErrnoRet != nil {
		defErrno = *def.DefaultErrnoRet
	}
	for _, r := range plan.Syscalls {
		for _, n := range r.Names {
			errno, ok := deny[n]
			if !ok || ruled[n] || errno == defErrno {
				continue
			}
			e := errno
			out.Syscalls = append(out.Syscalls, specs.LinuxSyscall{Names: []string{n}, Action: specs.ActErrno, ErrnoRet: &e})
			ruled[n] = true
		}
	}
	return &out, nil
}

// intersectAllows returns allow rules for one syscall that admit a call
// only when both the engine's rules and the plan's rules admit it. Rules of
// one list are alternatives; the arguments of one rule must all hold.
//
// A plan rule whose comparisons are all EQ (for example socket families)
// names exact values: it is kept, joined with the engine rule's conditions
// on other arguments, when those values pass some engine rule. Any other
// plan rule cannot be intersected exactly here, so the engine's rules are
// kept unchanged: the result is then the engine's restriction alone.
func intersectAllows(engine, plan []specs.LinuxSyscall) []specs.LinuxSyscall {
	for _, pr := range plan {
		for _, a := range pr.Args {
			if a.Op != specs.OpEqualTo {
				return engine
			}
		}
	}
	var out []specs.LinuxSyscall
	for _, pr := range plan {
		vals := map[uint]uint64{}
		for _, a := range pr.Args {
			vals[a.Index] = a.Value
		}
		for _, er := range engine {
			ok := true
			args := append([]specs.LinuxSeccompArg(nil), pr.Args...)
			for _, a := range er.Args {
				v, fixed := vals[a.Index]
				if !fixed {
					args = append(args, a)
					continue
				}
				if !holds(a, v) {
					ok = false
					break
				}
			}
			if ok {
				out = append(out, specs.LinuxSyscall{Names: pr.Names, Action: specs.ActAllow, Args: args})
				break
			}
		}
	}
	return out
}

// holds evaluates one seccomp comparison for the argument value v.
func holds(a specs.LinuxSeccompArg, v uint64) bool {
	switch a.Op {
	case specs.OpEqualTo:
		return v == a.Value
	case specs.OpNotEqual:
		return v != a.Value
	case specs.OpLessThan:
		return v < a.Value
	case specs.OpLessEqual:
		return v <= a.Value
	case specs.OpGreaterThan:
		return v > a.Value
	case specs.OpGreaterEqual:
		return v >= a.Value
	case specs.OpMaskedEqual:
		return v&a.Value == a.ValueTwo
	}
	return false
}

func sortedKeys(m map[string][]specs.LinuxSyscall) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
