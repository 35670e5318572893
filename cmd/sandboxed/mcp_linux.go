package main

import (
	"fmt"
	"os"
	"syscall"
)

// protocolStdout returns a private copy of stdout for the MCP protocol and
// points fd 1 at stderr, so nothing else can write into the protocol
// stream: not a library, not a child process that inherits fd 1.
func protocolStdout() (*os.File, error) {
	fd, err := syscall.Dup(1)
	if err != nil {
		return nil, fmt.Errorf("mcp: duplicate stdout: %w", err)
	}
	syscall.CloseOnExec(fd)
	if err := syscall.Dup3(2, 1, 0); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("mcp: point stdout at stderr: %w", err)
	}
	return os.NewFile(uintptr(fd), "mcp-protocol"), nil
}
