//go:build !linux

package hostsetup

import (
	"context"
	"os"
)

// ProbeUser reports the user only: the probes are for Linux hosts.
func (s *System) ProbeUser(ctx context.Context, selfArgs []string) *Probe {
	return &Probe{
		Root:          os.Geteuid() == 0,
		User:          User{UID: os.Getuid(), GID: os.Getgid()},
		LandlockError: "Landlock is a Linux security module",
	}
}
