//go:build !linux

package container

import (
	"context"

	"github.com/docker/docker/api/types/mount"
)

type bindIdentity struct{}

func pinBinds([]mount.Mount, func(string) bool, string, bool) ([]bindIdentity, []string, error) {
	return nil, nil, nil
}

func unstage([]string) error { return nil }

func gcStaged(func(string) bool) ([]string, error) { return nil, nil }

func (b *Backend) verifyStarted(context.Context, string, []bindIdentity) error { return nil }
