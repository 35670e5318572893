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
)

// readInt reads a file holding one integer ("max" reads as -1).
func readInt(p string) (int64, error) {
	b, err := os.ReadFile(p)
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
	b, err := os.ReadFile(p)
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
	b, err := os.ReadFile(p)
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
