//go:build !linux

package container

import (
	"context"
	"fmt"

	"github.com/docker/docker/api/types/mount"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// bindIdentity is a bind source as pinned; off Linux nothing is pinned.
type bindIdentity struct{ source string }

func pinBinds([]mount.Mount, func(string) bool, string, bool) ([]bindIdentity, []string, error) {
	return nil, nil, nil
}

func unstage([]string) error { return nil }

func gcStaged(func(string) bool) ([]string, error) { return nil, nil }

func (b *Backend) verifyStarted(context.Context, string, []bindIdentity) error { return nil }

func shareStagingRoot(string) error { return errNoStaging }

func unshareStagingRoot(string) error { return nil }

func makePlaceholder(string, bool) error { return errNoStaging }

func stageOnto(string, string, string, bool, bool) (bindIdentity, error) {
	return bindIdentity{}, errNoStaging
}

func verifyBinds([]bindIdentity, int) error { return errNoStaging }

var errNoStaging = fmt.Errorf("stage binds: %w: needs Linux", isolation.ErrUnsupported)
