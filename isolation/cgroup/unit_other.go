//go:build !linux

package cgroup

// AdoptUnitCgroup adopts nothing where there are no cgroups.
func AdoptUnitCgroup() (string, error) { return "", nil }
