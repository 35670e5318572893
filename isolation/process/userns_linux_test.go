package process

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation"
)

func TestPlanIDMapping(t *testing.T) {
	one := func(in, out int) []syscall.SysProcIDMap {
		return []syscall.SysProcIDMap{{ContainerID: in, HostID: out, Size: 1}}
	}
	rootHost := hostIDs{euid: 0, egid: 0, reserved: DefaultReservedStart}
	user := hostIDs{euid: 1001, egid: 1001, subUID: 100000, subUIDCount: 65536, subGID: 200000, subGIDCount: 65536}
	noSub := hostIDs{euid: 1001, egid: 1001}
	for _, c := range []struct {
		name     string
		h        hostIDs
		priv     privilege.Privilege
		uid, gid uint32
		want     *idMapping
		err      error
	}{
		{"root, sudo user", rootHost, privilege.SameAsUser, 1000, 1000, nil, nil},
		{"root, reduced", rootHost, privilege.Reduced, 65534, 65534, nil, nil},
		{"root, no invoking user: never host root", rootHost, privilege.SameAsUser, 0, 0, &idMapping{
			uids: one(0, DefaultReservedStart), gids: one(0, DefaultReservedStart),
			become: &[2]uint32{0, 0}, idmapGrants: true, dropGroups: true}, nil},
		{"root, elevated", rootHost, privilege.Elevated, 0, 0, &idMapping{
			uids: one(0, DefaultReservedStart), gids: one(0, DefaultReservedStart),
			become: &[2]uint32{0, 0}, dropGroups: true}, nil},
		{"rootless same-as-user", user, privilege.SameAsUser, 1001, 1001, &idMapping{uids: one(1001, 1001), gids: one(1001, 1001), keepGroups: true}, nil},
		{"rootless same-as-user as someone else", user, privilege.SameAsUser, 1000, 1000, nil, ErrBadPlan},
		{"rootless elevated", user, privilege.Elevated, 0, 0, &idMapping{uids: one(0, 1001), gids: one(0, 1001), keepGroups: true}, nil},
		{"rootless reduced", user, privilege.Reduced, 65534, 65534, &idMapping{
			uids:   []syscall.SysProcIDMap{{ContainerID: 0, HostID: 1001, Size: 1}, {ContainerID: 65534, HostID: 165534, Size: 1}},
			gids:   []syscall.SysProcIDMap{{ContainerID: 0, HostID: 1001, Size: 1}, {ContainerID: 65534, HostID: 265534, Size: 1}},
			helper: true}, nil},
		{"rootless reduced, small range", hostIDs{euid: 1001, egid: 1001, subUID: 500, subUIDCount: 10, subGID: 700, subGIDCount: 1}, privilege.Reduced, 65534, 65534, &idMapping{
			uids:   []syscall.SysProcIDMap{{ContainerID: 0, HostID: 1001, Size: 1}, {ContainerID: 65534, HostID: 500, Size: 1}},
			gids:   []syscall.SysProcIDMap{{ContainerID: 0, HostID: 1001, Size: 1}, {ContainerID: 65534, HostID: 700, Size: 1}},
			helper: true}, nil},
		{"rootless reduced without subordinate ids", noSub, privilege.Reduced, 65534, 65534, nil, isolation.ErrUnsupported},
	} {
		got, err := planIDMapping(c.h, c.priv, c.uid, c.gid)
		if !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.err)
			continue
		}
		if !sameMapping(got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
		if c.h.euid != 0 && got != nil {
			for _, m := range append(got.uids, got.gids...) {
				if m.HostID == 0 {
					t.Errorf("%s: maps host id 0", c.name)
				}
			}
		}
	}
	_, err := planIDMapping(noSub, privilege.Reduced, 65534, 65534)
	var ue *isolation.UnsupportedError
	if !errors.As(err, &ue) || !strings.Contains(ue.Fix, "sudo sandboxed setup --user") {
		t.Errorf("reduced without subordinate ids: %v", err)
	}
}

func sameMapping(a, b *idMapping) bool {
	if a == nil || b == nil {
		return a == b
	}
	eq := func(x, y []syscall.SysProcIDMap) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	return eq(a.uids, b.uids) && eq(a.gids, b.gids) && a.helper == b.helper && a.keepGroups == b.keepGroups &&
		a.idmapGrants == b.idmapGrants && a.dropGroups == b.dropGroups && (a.become == nil) == (b.become == nil) &&
		(a.become == nil || *a.become == *b.become)
}

func TestReservedStart(t *testing.T) {
	dir := t.TempDir()
	files := func(uid, gid string) (string, string) {
		u, g := filepath.Join(dir, "subuid"), filepath.Join(dir, "subgid")
		os.WriteFile(u, []byte(uid), 0o644)
		os.WriteFile(g, []byte(gid), 0o644)
		return u, g
	}
	for _, c := range []struct {
		name, uid, gid string
		want           int
		err            bool
	}{
		{"no files' entries: the default", "", "", DefaultReservedStart, false},
		{"ordinary users' ranges", "alice:100000:65536\nbob:165536:65536\n", "alice:100000:65536\n", DefaultReservedStart, false},
		{"a sandboxed entry wins", "alice:100000:65536\nsandboxed:3000000000:65536\n", "sandboxed:3000000000:65536\n", 3000000000, false},
		{"the default collides", "carol:1879000000:100000\n", "", 0, true},
		{"entries differ", "sandboxed:5000000:65536\n", "sandboxed:6000000:65536\n", 0, true},
	} {
		u, g := files(c.uid, c.gid)
		got, err := reservedStart(u, g)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("%s: %d, %v; want %d (error %v)", c.name, got, err, c.want, c.err)
		}
		if err != nil && !errors.Is(err, isolation.ErrUnsupported) {
			t.Errorf("%s: %v is not an UnsupportedError", c.name, err)
		}
	}
	u, _ := files("# comment\nsbx:100000:65536\n1002:300000:1000\n", "")
	if s, n, err := subIDs(u, "sbx", 1001); s != 100000 || n != 65536 || err != nil {
		t.Errorf("subIDs by name: %d %d %v", s, n, err)
	}
	if s, n, err := subIDs(u, "", 1002); s != 300000 || n != 1000 || err != nil {
		t.Errorf("subIDs by uid: %d %d %v", s, n, err)
	}
	if _, n, err := subIDs(u, "nobody", 9); n != 0 || err != nil {
		t.Errorf("subIDs of a user without: %d %v", n, err)
	}
	// A line that cannot be read cannot be avoided: refused, not guessed.
	u, g := files("sbx:100000:65536\nbroken\n", "")
	if _, _, err := subIDs(u, "sbx", 1001); !errors.Is(err, isolation.ErrUnsupported) {
		t.Errorf("subIDs of a malformed file: %v", err)
	}
	if _, err := reservedStart(u, g); !errors.Is(err, isolation.ErrUnsupported) {
		t.Errorf("reservedStart of a malformed file: %v", err)
	}
}

func TestSetInitPath(t *testing.T) {
	cmd := &exec.Cmd{ExtraFiles: []*os.File{os.Stdin}}
	done, err := setInitPath(cmd, "/usr/libexec/init")
	if err != nil || cmd.Path != "/usr/libexec/init" || len(cmd.ExtraFiles) != 1 {
		t.Fatalf("a plain path: %q %d %v", cmd.Path, len(cmd.ExtraFiles), err)
	}
	done()
	f, err := os.CreateTemp(t.TempDir(), "init")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The init in a memory file of this process: the child gets it as
	// its own descriptor (fd 3 is ExtraFiles[0], the control socket).
	done, err = setInitPath(cmd, fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if cmd.Path != "/proc/self/fd/4" || len(cmd.ExtraFiles) != 2 {
		t.Fatalf("a memory file: %q, %d extra files", cmd.Path, len(cmd.ExtraFiles))
	}
	a, _ := os.Stat(f.Name())
	b, _ := cmd.ExtraFiles[1].Stat()
	if !os.SameFile(a, b) {
		t.Error("the descriptor passed is not the init's file")
	}
}
