package container

import (
	"context"
	"fmt"
	"strings"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/sandboxed-dev/sandboxed/images"
	"github.com/sandboxed-dev/sandboxed/internal/dockerapi"
	"github.com/sandboxed-dev/sandboxed/internal/hostsetup"
	"github.com/sandboxed-dev/sandboxed/isolation"
)

// ProbeResult is what `sandboxed doctor` shows of the container tier.
type ProbeResult struct {
	Host           string   `json:"host"`
	Reachable      bool     `json:"reachable"`
	ServerVersion  string   `json:"server_version,omitempty"`
	APIVersion     string   `json:"api_version,omitempty"` // negotiated, what this client speaks
	ServerAPI      string   `json:"server_api_version,omitempty"`
	Runtimes       []string `json:"runtimes,omitempty"`
	DefaultRuntime string   `json:"default_runtime,omitempty"`
	Runsc          bool     `json:"runsc"`
	// RunscMissing are the runtime arguments the registered runsc lacks
	// for sandboxed's plans (empty when it has them or is not there).
	RunscMissing  []string `json:"runsc_missing_args,omitempty"`
	Seccomp       bool     `json:"seccomp"`
	UsernsRemap   bool     `json:"userns_remap"`
	CgroupVersion string   `json:"cgroup_version,omitempty"`
	CgroupDriver  string   `json:"cgroup_driver,omitempty"`
	Image         string   `json:"image"`
	ImagePresent  bool     `json:"image_present"`
	ImageUpToDate bool     `json:"image_up_to_date"`
	ImageID       string   `json:"image_id,omitempty"`
	// InitStatic is false when the init binary is not a static ELF.
	InitStatic bool `json:"init_static"`
	// Outside names this process's own container when the engine runs it
	// (a CI container with the host's socket mounted): the engine sees
	// only the paths bound from its host at the same path (copy.go).
	Outside string `json:"engine_outside,omitempty"`
	// EngineVM names the engine when it runs its containers in a VM
	// (Docker Desktop, colima, OrbStack; vm.go), and Shares what of this
	// host it sees at the same paths.
	EngineVM string   `json:"engine_vm,omitempty"`
	Shares   []string `json:"engine_shares,omitempty"`
	// Problems say what keeps the tier from working, each with its fix.
	Problems []string `json:"problems,omitempty"`

	engineErr error // why the engine could not be reached
}

// Checks renders the probe as doctor lines. Optional features (runsc,
// user namespace remapping) are OK when absent; their detail says what
// needs them.
func (r *ProbeResult) Checks() []hostsetup.Check {
	engine := hostsetup.Check{Tier: string(isolation.TierContainer), Name: "docker engine", OK: r.Reachable, Detail: r.Host}
	switch {
	case r.Reachable:
		engine.Detail = fmt.Sprintf("%s: engine %s, API %s (client speaks %s), cgroup v%s (%s)", r.Host, r.ServerVersion, r.ServerAPI, r.APIVersion, r.CgroupVersion, r.CgroupDriver)
	case r.engineErr != nil:
		engine.Detail = r.engineErr.Error()
		engine.Fix = dockerapi.EngineFix(r.engineErr)
	default:
		engine.Fix = dockerapi.EngineFix(nil)
	}
	out := []hostsetup.Check{engine}
	if !r.Reachable {
		return out
	}
	out = append(out,
		hostsetup.Check{Tier: string(isolation.TierContainer), Name: "seccomp", OK: r.Seccomp, Detail: "the engine loads seccomp profiles", Fix: fixIf(!r.Seccomp, "use a Docker engine built with seccomp support")},
		runscCheck(r),
		hostsetup.Check{Tier: string(isolation.TierContainer), Name: "userns remap", OK: true, Detail: yesNo(r.UsernsRemap, "on: elevated runs are allowed", "off: elevated runs are refused in containers"),
			Fix: fixIf(!r.UsernsRemap, `for elevated runs: "userns-remap": "default" in /etc/docker/daemon.json, then restart Docker`)},
	)
	img := hostsetup.Check{Tier: string(isolation.TierContainer), Name: "runner image", OK: r.ImagePresent, Detail: r.Image}
	switch {
	case !r.ImagePresent:
		img.Detail += " is missing"
		img.Fix = "run: " + images.BuildCommandFor(r.Image)
	case !r.ImageUpToDate:
		img.Detail += " is out of date (" + shortID(r.ImageID) + ")"
		img.Fix = "run: " + images.BuildCommandFor(r.Image)
	default:
		img.Detail += " is up to date (" + shortID(r.ImageID) + ")"
	}
	out = append(out, img, hostsetup.Check{Tier: string(isolation.TierContainer), Name: "init binary", OK: r.InitStatic, Detail: yesNo(r.InitStatic, "static: runs in any image", "dynamically linked"),
		Fix: fixIf(!r.InitStatic, "build sandboxed with CGO_ENABLED=0")})
	if r.Outside != "" {
		out = append(out, hostsetup.Check{Tier: string(isolation.TierContainer), Name: "engine's paths", OK: true,
			Detail: "the engine runs this container (" + r.Outside + ") and resolves paths on its own host: what it cannot see is copied into a volume of each run (the init, read grants without what the masks cover), and the init speaks over the container's attached streams",
			Fix:    "write grants it cannot see are refused: mount them from the host at the same path (docker run -v /srv/ci:/srv/ci)"})
	}
	if r.EngineVM != "" {
		shares := "nothing known"
		if len(r.Shares) > 0 {
			shares = strings.Join(r.Shares, ", ")
		}
		out = append(out, hostsetup.Check{Tier: string(isolation.TierContainer), Name: "engine's paths", OK: true,
			Detail: r.EngineVM + " runs containers in a VM that shares " + shares + " at the same paths: grants there are bound, read grants elsewhere copied into a volume of each run, and the init speaks over the container's attached streams",
			Fix:    "write grants outside the shares are refused: grant a path in them"})
	}
	return out
}

func yesNo(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

func fixIf(b bool, fix string) string {
	if b {
		return fix
	}
	return ""
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// OK reports whether the container tier can run plans that need nothing
// beyond the defaults.
func (r *ProbeResult) OK() bool { return r.Reachable && r.ImagePresent && r.Seccomp }

// Probe asks the engine at DOCKER_HOST what `sandboxed doctor` reports:
// reachable, versions, runtimes (runsc?), security options and whether the
// runner image image ("" for images.DefaultImage) is present and up to
// date. An unreachable engine is a Problem, not an error.
func Probe(ctx context.Context, image string) (*ProbeResult, error) {
	b, err := New()
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return b.Probe(ctx, image)
}

// Probe is the package-level Probe on this backend's engine.
func (b *Backend) Probe(ctx context.Context, image string) (*ProbeResult, error) {
	if image == "" {
		image = images.DefaultImage
	}
	r := &ProbeResult{Host: b.api.DaemonHost(), Image: image}
	v, err := b.api.ServerVersion(ctx)
	if err != nil {
		r.engineErr = err
		r.Problems = append(r.Problems, b.engineErr("reach the Docker engine", err).Error())
		return r, nil
	}
	r.Reachable = true
	r.ServerVersion = v.Version
	r.ServerAPI = v.APIVersion
	r.APIVersion = b.api.ClientVersion()

	info, err := b.engineInfo(ctx)
	if err != nil {
		r.Problems = append(r.Problems, err.Error())
	} else {
		r.Runtimes = runtimeNames(info)
		r.DefaultRuntime = info.DefaultRuntime
		rt, ok := info.Runtimes["runsc"]
		r.Runsc = ok
		if ok {
			r.RunscMissing = hostsetup.MissingRuntimeArgs("runsc", rt.Args)
		}
		r.Seccomp = hasSecOpt(info, "seccomp")
		r.UsernsRemap = hasSecOpt(info, "userns")
		r.CgroupVersion = info.CgroupVersion
		r.CgroupDriver = info.CgroupDriver
		if !r.Seccomp {
			r.Problems = append(r.Problems, "the Docker engine has no seccomp support: use an engine built with seccomp")
		}
	}

	ii, err := b.api.ImageInspect(ctx, image)
	switch {
	case err == nil:
		im := images.FromInspect(ii)
		r.ImagePresent, r.ImageID = true, ii.ID
		r.ImageUpToDate = im.UpToDate
		if !im.UpToDate {
			r.Problems = append(r.Problems, fmt.Sprintf("image %s is out of date: run: %s", image, images.BuildCommandFor(image)))
		}
	case cerrdefs.IsNotFound(err):
		r.Problems = append(r.Problems, imageErr(image, err).Error())
	default:
		r.Problems = append(r.Problems, b.engineErr("inspect image "+image, err).Error())
	}
	if err := b.checkInitBinary(); err != nil {
		r.Problems = append(r.Problems, err.Error())
	} else {
		r.InitStatic = true
	}
	if o := b.engineOutside(ctx); o != nil && o.vm != nil {
		r.EngineVM, r.Shares = o.vm.name, o.vm.shared
	} else if o != nil {
		r.Outside = o.self
	} else if b.outsideErr != nil {
		r.Problems = append(r.Problems, b.outsideErr.Error())
	}
	return r, nil
}

// runscCheck is doctor's line on runtime runsc: optional, but a runsc
// registered without the arguments plans need is a problem with its fix.
func runscCheck(r *ProbeResult) hostsetup.Check {
	c := hostsetup.Check{Tier: string(isolation.TierContainer), Name: "runtime runsc", OK: true, Detail: yesNo(r.Runsc, "registered (plans may ask for runtime runsc)", "not registered (only plans that ask for it need it)"),
		Fix: fixIf(!r.Runsc, "for gVisor: apt-get install runsc, then sudo sandboxed setup --runtime runsc")}
	if r.Runsc && len(r.RunscMissing) > 0 {
		c.OK = false
		c.Detail = "registered without " + strings.Join(r.RunscMissing, " ") + ": runs that ask for runsc are refused"
		c.Fix = "add them to its runtimeArgs in /etc/docker/daemon.json and reload dockerd, or remove the entry and run: sudo sandboxed setup --runtime runsc"
	}
	return c
}
