//go:build !linux

package main

import "os"

// protocolStdout returns stdout itself where fds cannot be rearranged.
func protocolStdout() (*os.File, error) { return os.Stdout, nil }
