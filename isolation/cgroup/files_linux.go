package cgroup

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// readFile reads the whole file p. Control files of cgroups and /proc are
// read and written with the system calls themselves: os.File registers
// each with the runtime's poller (two more system calls, and a finalizer),
// and a sandbox's start and end read and write a dozen.
func readFile(p string) ([]byte, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	b := make([]byte, 0, 512)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: p, Err: err}
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// writeFile writes data to the existing file p in one write (a control
// file takes one value per write).
func writeFile(p string, data []byte) error {
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: p, Err: err}
	}
	for {
		_, err = unix.Write(fd, data)
		if err != unix.EINTR {
			break
		}
	}
	cerr := unix.Close(fd)
	if err != nil {
		return &os.PathError{Op: "write", Path: p, Err: err}
	}
	if cerr != nil {
		return &os.PathError{Op: "close", Path: p, Err: cerr}
	}
	return nil
}

// readInt reads a file holding one integer ("max" reads as -1).
func readInt(p string) (int64, error) {
	b, err := readFile(p)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return -1, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

// readKey reads "key value" lines and returns value of key (0 if absent).
func readKey(p, key string) (int64, error) {
	b, err := readFile(p)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == key {
			return strconv.ParseInt(f[1], 10, 64)
		}
	}
	return 0, nil
}

// readProcs parses a cgroup.procs file.
func readProcs(p string) ([]int, error) {
	b, err := readFile(p)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids, nil
}

func signalAll(pids []int, sig syscall.Signal) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, sig)
	}
}

// WaitEmpty polls procs until it reports no process or ctx ends. Killed
// processes leave their cgroup within microseconds, so the first polls are
// tight.
func WaitEmpty(ctx context.Context, procs func() ([]int, error)) error {
	return poll(ctx, func() (bool, error) {
		pids, err := procs()
		return len(pids) == 0, err
	})
}

// poll calls done until it reports true or ctx ends, tightly at first. A
// file done finds missing (the group is gone) counts as done.
func poll(ctx context.Context, done func() (bool, error)) error {
	delay := 100 * time.Microsecond
	for {
		ok, err := done()
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if ok {
			return nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if delay < 20*time.Millisecond {
			delay *= 2
		}
	}
}
