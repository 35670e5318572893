package specconv_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/container"
	"github.com/sandboxed-dev/sandboxed/isolation/kubernetes"
	"github.com/sandboxed-dev/sandboxed/isolation/landlock"
	"github.com/sandboxed-dev/sandboxed/isolation/none"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
	"github.com/sandboxed-dev/sandboxed/isolation/specconv"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

// tierCase is one tier's converter and a plan of it as the planner
// writes it.
type tierCase struct {
	name    string
	target  specconv.Target
	plan    func(t *testing.T) *isolation.Plan
	convert func(p *isolation.Plan) (out any, approx []isolation.Approximation, err error)
}

const runID = "20261128T080000-0123456789ab"

func planOf(t *testing.T, tr isolation.Tier, kube bool, opts ...sandbox.SpecOpt) *isolation.Plan {
	t.Helper()
	base := []sandbox.SpecOpt{sandbox.WithMemory(64 << 20), sandbox.WithPids(66), sandbox.WithCPUs(1),
		sandbox.WithTmpfs(16 << 20), sandbox.WithUser(1000, 1000), sandbox.WithHostname("box"),
		sandbox.WithEnv([]string{"PATH=/usr/bin:/bin"}), sandbox.WithCwd("/work"),
		sandbox.WithAnnotation(isolation.AnnotationTool, "t"), sandbox.WithReadBind(t.TempDir(), "/work")}
	if tr == isolation.TierLandlock {
		base = append(base, sandbox.WithSeccomp(sandbox.LandlockSeccompProfile(privilege.SameAsUser, false)))
	}
	spec, err := sandbox.NewSpec(runID, privilege.SameAsUser, append(append(base, opts...), sandbox.WithTier(tr, kube))...)
	if err != nil {
		t.Fatal(err)
	}
	p := &isolation.Plan{RunID: runID, Tool: "t", Tier: tr, Privilege: privilege.SameAsUser, Spec: spec,
		Limits: isolation.Limits{MemoryBytes: 64 << 20, Pids: 64, CPUs: 1, TmpfsBytes: 16 << 20}, HostDir: "/run/sandboxed/" + runID,
		Image: isolation.DefaultImage}
	if kube {
		p.Backend = isolation.BackendKubernetes
	}
	return p
}

func tierCases() []tierCase {
	return []tierCase{
		{"process", specconv.Target{Tier: isolation.TierProcess},
			func(t *testing.T) *isolation.Plan { return planOf(t, isolation.TierProcess, false) },
			func(p *isolation.Plan) (any, []isolation.Approximation, error) {
				c, err := process.ConvertSpec(p.Spec)
				if err != nil {
					return nil, nil, err
				}
				return c, c.Approximations, nil
			}},
		{"container", specconv.Target{Tier: isolation.TierContainer},
			func(t *testing.T) *isolation.Plan { return planOf(t, isolation.TierContainer, false) },
			func(p *isolation.Plan) (any, []isolation.Approximation, error) {
				c, err := container.ConvertSpec(p)
				if err != nil {
					return nil, nil, err
				}
				return c, c.Approximations, nil
			}},
		{"container on runsc", specconv.Target{Tier: isolation.TierContainer, Runtime: "runsc"},
			func(t *testing.T) *isolation.Plan {
				p := planOf(t, isolation.TierContainer, false)
				p.Runtime = "runsc"
				return p
			},
			func(p *isolation.Plan) (any, []isolation.Approximation, error) {
				c, err := container.ConvertSpec(p)
				if err != nil {
					return nil, nil, err
				}
				return c, c.Approximations, nil
			}},
		outsideCase("landlock", isolation.TierLandlock, true),
		outsideCase("landlock without a cgroup", isolation.TierLandlock, false),
		outsideCase("none", isolation.TierNone, true),
		outsideCase("none without a cgroup", isolation.TierNone, false),
		{"kubernetes", specconv.Target{Tier: isolation.TierContainer, Kubernetes: true},
			func(t *testing.T) *isolation.Plan { return planOf(t, isolation.TierContainer, true) },
			func(p *isolation.Plan) (any, []isolation.Approximation, error) {
				c, err := kubernetes.ConvertSpec(p)
				if err != nil {
					return nil, nil, err
				}
				return c, c.Approximations, nil
			}},
	}
}

// outsideCase is a tier started outside namespaces (landlock, none), its
// spec naming the run's cgroup (cgroup) or none, as the planner writes it
// where the host has none sandboxed may use: then its pids limit is the
// tool's own.
func outsideCase(name string, tr isolation.Tier, cgroup bool) tierCase {
	return tierCase{name, specconv.Target{Tier: tr, Cgroup: cgroup},
		func(t *testing.T) *isolation.Plan {
			var opts []sandbox.SpecOpt
			if !cgroup {
				opts = append(opts, sandbox.WithoutCgroup(), sandbox.WithPids(64))
			}
			p := planOf(t, tr, false, opts...)
			if tr == isolation.TierLandlock {
				p.Scratch = "/tmp/sandboxed-scratch-" + runID
			}
			return p
		},
		func(p *isolation.Plan) (any, []isolation.Approximation, error) {
			if tr == isolation.TierNone {
				c, err := none.ConvertSpec(p.Spec)
				if err != nil {
					return nil, nil, err
				}
				return c, c.Approximations, nil
			}
			c, err := landlock.ConvertSpec(p)
			if err != nil {
				return nil, nil, err
			}
			return c, c.Approximations, nil
		}}
}

// controllerFields are read by the controller, not the tier: every
// command gets them with isolation.Command (its environment starts from
// the spec's, its working directory is the spec's unless a step says
// otherwise). A change to them need not change what a tier builds.
var controllerFields = []string{"Process.Env", "Process.Cwd"}

// Every field of specs.Spec — walked by reflection over its type, so a
// field a new version of the spec adds is walked too — set or changed on
// a plan of each tier, gets one of three answers from that tier's
// converter: enforcement (what the converter makes of the spec changes),
// a marked approximation (listed, with how), or a refusal wrapping
// isolation.ErrUnsupported. Never silence. And the answer is the one the
// tier's rules (specconv.Rules) give: a field no rule lists is refused by
// name.
func TestEveryFieldEnforcedApproximatedOrRefused(t *testing.T) {
	leaves := specconv.Leaves()
	if len(leaves) < 200 {
		t.Fatalf("the walk found %d fields of specs.Spec: too few", len(leaves))
	}
	for _, tc := range tierCases() {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.plan(t)
			want, baseApprox, err := tc.convert(base)
			if err != nil {
				t.Fatalf("the planner's own plan is refused: %v", err)
			}
			rules := specconv.Rules(tc.target)
			for _, a := range baseApprox {
				// An approximation marked where the tier enforces the
				// field (a cgroup holding the limits) is as untrue as
				// one left out.
				if r, _ := ruleOf(rules, a.Field); r.How != specconv.Approximated {
					t.Errorf("%s marked approximated, where the rules say %s", a.Field, r.How)
				}
			}
			for _, r := range rules {
				if !slices.ContainsFunc(leaves, func(f string) bool { return f == r.Field || strings.HasPrefix(f, r.Field+".") }) {
					t.Errorf("the rule of %s names no field of specs.Spec", r.Field)
				}
			}
			counts := map[string]int{}
			for _, f := range leaves {
				p := clonePlan(t, base)
				if err := mutate(reflect.ValueOf(p.Spec).Elem(), strings.Split(f, ".")); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				if m := p.Spec.Linux.Resources.Memory; f == specconv.FieldMemory && m != nil && m.Swap != nil {
					*m.Swap = *m.Limit // a coherent change: still no swap
				}
				got, approx, err := tc.convert(p)
				rule, listed := ruleOf(rules, f)
				switch {
				case err != nil:
					if !errors.Is(err, isolation.ErrUnsupported) {
						t.Errorf("%s: refused without ErrUnsupported: %v", f, err)
					}
					if !listed && !strings.Contains(err.Error(), f[:strings.IndexByte(f+".", '.')]) {
						t.Errorf("%s: no rule lists it, and the refusal does not name it: %v", f, err)
					}
					counts["refused"]++
				case !listed:
					t.Errorf("%s: no rule of %s lists it, yet the converter took it", f, tc.target)
				case rule.How == specconv.Approximated:
					if !slices.ContainsFunc(approx, func(a isolation.Approximation) bool { return a.Field == rule.Field && a.How != "" }) {
						t.Errorf("%s: approximated by the rules, not marked so: %v", f, approx)
					}
					counts["approximated"]++
				case reflect.DeepEqual(got, want) && !slices.Contains(controllerFields, f):
					t.Errorf("%s: taken, not approximated, and nothing the converter made changed: silently ignored", f)
				default:
					counts["enforced"]++
				}
			}
			t.Logf("%s: %d fields: %v", tc.target, len(leaves), counts)
		})
	}
}

func ruleOf(rules []specconv.Rule, f string) (specconv.Rule, bool) {
	for p := f; p != ""; {
		for _, r := range rules {
			if r.Field == p {
				return r, true
			}
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return specconv.Rule{}, false
}

func clonePlan(t *testing.T, p *isolation.Plan) *isolation.Plan {
	t.Helper()
	js, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var out isolation.Plan
	if err := json.Unmarshal(js, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// mutate changes the field at path below v: a value that is set changes,
// one that is not is set; on the way, nil pointers are made and an empty
// slice of structs gets one element (the first element is the one
// changed).
func mutate(v reflect.Value, path []string) error {
	if len(path) == 1 && path[0] == "Names" && v.Type() == reflect.TypeOf(specs.LinuxSyscall{}) {
		// A name this architecture has (one it has not has no call
		// to filter).
		v.FieldByName("Names").Set(reflect.Append(v.FieldByName("Names"), reflect.ValueOf("getpid")))
		return nil
	}
	if len(path) == 0 {
		return change(v)
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return mutate(v.Elem(), path)
	case reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem())))
		}
		return mutate(v.Index(0), path)
	case reflect.Struct:
		f := v.FieldByName(path[0])
		if !f.IsValid() {
			return fmt.Errorf("no field %s in %s", path[0], v.Type())
		}
		return mutate(f, path[1:])
	}
	return fmt.Errorf("cannot walk %s into %v", v.Kind(), path)
}

func change(v reflect.Value) error {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return change(v.Elem())
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float() + 1)
	case reflect.Slice:
		e := reflect.New(v.Type().Elem()).Elem()
		if err := change(e); err != nil {
			return err
		}
		v.Set(reflect.Append(v, e))
	case reflect.Map:
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		k := reflect.New(v.Type().Key()).Elem()
		if err := change(k); err != nil {
			return err
		}
		e := reflect.New(v.Type().Elem()).Elem()
		if e.Kind() != reflect.Struct {
			if err := change(e); err != nil {
				return err
			}
		}
		v.SetMapIndex(k, e)
	case reflect.Struct:
		return nil // an empty struct in a map: the key is the change
	case reflect.Interface:
		v.Set(reflect.ValueOf("x"))
	default:
		return fmt.Errorf("cannot change a %s", v.Kind())
	}
	return nil
}
