package hostsetup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// System is the host that setup changes and doctor probes. Every path it
// reads or writes is taken under Root, so tests point it at a temporary
// directory.
type System struct {
	// Root is "/" on the real host.
	Root string
	// Cgroups is the host's cgroup layout, its paths as seen from Root.
	Cgroups Cgroups
	// Executable is the absolute path of the sandboxed binary on the host:
	// the AppArmor profile and the boot unit name it.
	Executable string
	// LookupUser finds a user by name; nil means the host's user database
	// (os/user).
	LookupUser func(name string) (User, error)
	// Run runs a host command (apparmor_parser, systemctl) and returns its
	// combined output; nil means os/exec.
	Run func(ctx context.Context, name string, args ...string) ([]byte, error)
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Signal sends a signal to a host process (SIGHUP to dockerd); nil
	// means syscall.Kill.
	Signal func(pid int, sig syscall.Signal) error
}

// Cgroups is the cgroup layout of a host, as isolation/cgroup detects it.
type Cgroups struct {
	// Version is 1 on legacy and hybrid hosts, 2 on unified ones, 0 when
	// no cgroup hierarchy is mounted.
	Version int
	// V1 maps each v1 controller the process tier uses (memory, pids,
	// cpu, freezer) to its mountpoint, e.g. /sys/fs/cgroup/memory, or
	// /sys/fs/cgroup/cpu,cpuacct where controllers are mounted together.
	V1 map[string]string
	// V2 is the unified mountpoint, /sys/fs/cgroup on v2 hosts.
	V2 string
}

// V1Controllers are the v1 controllers the process tier puts a run in, in
// the order they are reported.
var V1Controllers = []string{"memory", "pids", "cpu", "freezer"}

// User is a user of the host.
type User struct {
	Name string
	UID  int
	GID  int
}

// path is p (an absolute path on the host) under s.Root.
func (s *System) path(p string) string {
	return filepath.Join(s.Root, p)
}

func (s *System) getenv(k string) string {
	if s.Getenv == nil {
		return os.Getenv(k)
	}
	return s.Getenv(k)
}

func (s *System) run(ctx context.Context, name string, args ...string) error {
	_, err := s.output(ctx, name, args...)
	return err
}

// output runs a host command and returns its output.
func (s *System) output(ctx context.Context, name string, args ...string) ([]byte, error) {
	var out []byte
	var err error
	if s.Run == nil {
		out, err = exec.CommandContext(ctx, name, args...).CombinedOutput()
	} else {
		out, err = s.Run(ctx, name, args...)
	}
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg != "" {
			return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, msg)
		}
		return out, fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return out, nil
}

// lookup finds the user name names, or fails with ErrNoUser and the fix.
func (s *System) lookup(name string) (User, error) {
	if !validUserName(name) {
		return User{}, fmt.Errorf("user %q: not a user name: %w", name, ErrNoUser)
	}
	if s.LookupUser != nil {
		return s.LookupUser(name)
	}
	u, err := user.Lookup(name)
	if err != nil {
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) {
			return User{}, fmt.Errorf("user %q: %w on this host (create it first: useradd -m %s)", name, ErrNoUser, name)
		}
		return User{}, fmt.Errorf("look up user %q: %w", name, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return User{}, fmt.Errorf("user %q has uid %q and gid %q: not numbers", name, u.Uid, u.Gid)
	}
	return User{Name: u.Username, UID: uid, GID: gid}, nil
}

// validUserName accepts what can safely name a file and a systemd unit
// instance: the names useradd accepts, without their optional trailing $.
func validUserName(name string) bool {
	if name == "" || len(name) > 256 || name == "." || name == ".." || name[0] == '-' {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
