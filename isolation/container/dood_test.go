package container

import (
	"errors"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// An engine outside this container sees a path only through a bind from
// its host at the same path; the deepest bind decides.
func TestOutsideVisible(t *testing.T) {
	o := &outside{self: "ci-job", binds: []container.MountPoint{
		{Source: "/srv/ci", Destination: "/srv/ci"},
		{Source: "/var/lib/other", Destination: "/srv/ci/cache"},
		{Source: "/home/runner/work", Destination: "/builds"},
		{Source: "/var/run/docker.sock", Destination: "/var/run/docker.sock"},
	}}
	for path, want := range map[string]bool{
		"/srv/ci":              true,
		"/srv/ci/run/x":        true,
		"/srv/ci/cache/init":   false, // bound from elsewhere
		"/srv/cix":             false,
		"/builds/project":      false, // another path on the host
		"/run/sandboxed/RUN":   false,
		"/var/run/docker.sock": true,
	} {
		if got := o.visible(path); got != want {
			t.Errorf("visible(%s) = %t, want %t", path, got, want)
		}
	}
	err := o.check([]string{"/srv/ci/run", "/builds/project", "/run/sandboxed/RUN"})
	if !errors.Is(err, isolation.ErrUnsupported) || !strings.Contains(err.Error(), "/builds/project, /run/sandboxed/RUN") || strings.Contains(err.Error(), "/srv/ci/run,") {
		t.Errorf("check: %v", err)
	}
	if err := o.check([]string{"/srv/ci/a", "/srv/ci/b"}); err != nil {
		t.Errorf("all visible: %v", err)
	}
}
