//go:build linux

package sbinit

import (
	"net"
	"os"
)

func fileConn(f *os.File) (*net.UnixConn, error) {
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	return c.(*net.UnixConn), nil
}
