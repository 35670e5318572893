package container

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/sandboxed-dev/sandboxed/images"
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
	Seccomp        bool     `json:"seccomp"`
	UsernsRemap    bool     `json:"userns_remap"`
	CgroupVersion  string   `json:"cgroup_version,omitempty"`
	CgroupDriver   string   `json:"cgroup_driver,omitempty"`
	Image          string   `json:"image"`
	ImagePresent   bool     `json:"image_present"`
	ImageUpToDate  bool     `json:"image_up_to_date"`
	ImageID        string   `json:"image_id,omitempty"`
	// Problems say what keeps the tier from working, each with its fix.
	Problems []string `json:"problems,omitempty"`
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
		_, r.Runsc = info.Runtimes["runsc"]
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
	}
	return r, nil
}
