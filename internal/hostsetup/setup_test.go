package hostsetup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/isolation/cgroup"
)

// fakeHost is a System whose root is a temporary directory laid out like
// a cgroup v1 host (cpu and cpuacct mounted together), with one user.
type fakeHost struct {
	*System
	user User
	ran  []string // host commands run, space-joined
}

func newFakeHost(t *testing.T) *fakeHost {
	t.Helper()
	root := t.TempDir()
	// Without root, the user must be ourselves for chown to work.
	u := User{Name: "ada", UID: os.Getuid(), GID: os.Getgid()}
	if u.UID == 0 {
		u.UID, u.GID = 1234, 1235
	}
	h := &fakeHost{user: u}
	h.System = &System{
		Root:       root,
		Executable: "/usr/local/bin/sandboxed",
		Cgroups: Cgroups{Version: 1, V1: map[string]string{
			"memory":  "/sys/fs/cgroup/memory",
			"pids":    "/sys/fs/cgroup/pids",
			"cpu":     "/sys/fs/cgroup/cpu,cpuacct",
			"freezer": "/sys/fs/cgroup/freezer",
		}},
		LookupUser: func(name string) (User, error) {
			if name == u.Name {
				return u, nil
			}
			return User{}, fmt.Errorf("user %q: %w", name, ErrNoUser)
		},
		Run: func(_ context.Context, name string, args ...string) ([]byte, error) {
			h.ran = append(h.ran, strings.Join(append([]string{name}, args...), " "))
			return nil, nil
		},
	}
	for _, m := range h.Cgroups.V1 {
		mustMkdir(t, filepath.Join(root, m))
	}
	mustWrite(t, filepath.Join(root, "etc/subuid"), "bob:100000:65536\n")
	mustWrite(t, filepath.Join(root, "etc/subgid"), "")
	mustWrite(t, filepath.Join(root, "etc/login.defs"), "SUB_UID_MIN 100000\nSUB_GID_MIN 200000\n")
	mustMkdir(t, filepath.Join(root, "var/lib"))
	// The binary, where only the user setup runs as may change it.
	exe := filepath.Join(root, h.Executable)
	mustWrite(t, exe, "binary")
	for p := exe; p != root; p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func mustMkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, p, s string) {
	t.Helper()
	mustMkdir(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// snapshot lists every path under root with its mode, owner and content.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		uid, gid, _ := fileOwner(fi)
		v := fmt.Sprintf("%v %d:%d", fi.Mode(), uid, gid)
		if fi.Mode().IsRegular() {
			v += " " + readString(t, p)
		}
		out[strings.TrimPrefix(p, root)] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSetupV1RoundTrip(t *testing.T) {
	h := newFakeHost(t)
	ctx := context.Background()
	// The kernel makes a v1 group's control files; one hierarchy has a
	// group made already (root-owned), with its files.
	pre := filepath.Join(h.Root, "sys/fs/cgroup/pids/sandboxed")
	mustMkdir(t, pre)
	before := snapshot(t, h.Root)

	rep, err := h.Setup(ctx, SetupOptions{User: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"added subordinate uids 165536-231071 (65536 ids) for ada to /etc/subuid",
		"added subordinate gids 200000-265535 (65536 ids) for ada to /etc/subgid",
		"made cgroup /sys/fs/cgroup/memory/sandboxed (root's, mode 0755)",
		fmt.Sprintf("made cgroup /sys/fs/cgroup/memory/sandboxed/user-%d, delegated to ada (%d:%d)", h.user.UID, h.user.UID, h.user.GID),
		fmt.Sprintf("made cgroup /sys/fs/cgroup/pids/sandboxed/user-%d, delegated to ada (%d:%d)", h.user.UID, h.user.UID, h.user.GID),
		"made cgroup /sys/fs/cgroup/cpu,cpuacct/sandboxed (root's, mode 0755)",
		fmt.Sprintf("made cgroup /sys/fs/cgroup/cpu,cpuacct/sandboxed/user-%d, delegated to ada (%d:%d)", h.user.UID, h.user.UID, h.user.GID),
		"made cgroup /sys/fs/cgroup/freezer/sandboxed (root's, mode 0755)",
		fmt.Sprintf("made cgroup /sys/fs/cgroup/freezer/sandboxed/user-%d, delegated to ada (%d:%d)", h.user.UID, h.user.UID, h.user.GID),
	}
	if !reflect.DeepEqual(rep.Changes, want) {
		t.Fatalf("changes:\n%s\nwant:\n%s", strings.Join(rep.Changes, "\n"), strings.Join(want, "\n"))
	}
	if got := readString(t, filepath.Join(h.Root, "etc/subuid")); got != "bob:100000:65536\nada:165536:65536\n" {
		t.Errorf("/etc/subuid = %q", got)
	}
	if got := readString(t, filepath.Join(h.Root, "etc/subgid")); got != "ada:200000:65536\n" {
		t.Errorf("/etc/subgid = %q", got)
	}
	for _, mnt := range []string{"memory", "pids", "cpu,cpuacct", "freezer"} {
		dir := filepath.Join("/sys/fs/cgroup", mnt, cgroup.UserDir(h.user.UID))
		if !h.ownedBy(dir, h.user) {
			t.Errorf("%s is not owned by %d", dir, h.user.UID)
		}
	}
	// No systemd in this root: setup says the directories must be made
	// again after a boot.
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "vanish at reboot") {
		t.Errorf("notes lack the reboot warning: %q", rep.Notes)
	}

	// A second run changes nothing.
	rep, err = h.Setup(ctx, SetupOptions{User: "ada"})
	if err != nil || len(rep.Changes) != 0 {
		t.Fatalf("second setup: %q, %v", rep.Changes, err)
	}

	rep, err = h.Undo(ctx, "ada")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Changes) != 9 {
		t.Errorf("undo changes: %q", rep.Changes)
	}
	after := snapshot(t, h.Root)
	if !reflect.DeepEqual(before, after) {
		t.Errorf("undo left the host changed:\nbefore %v\nafter  %v", before, after)
	}
	// Nothing left to undo.
	rep, err = h.Undo(ctx, "ada")
	if err != nil || len(rep.Changes) != 0 {
		t.Fatalf("second undo: %q, %v", rep.Changes, err)
	}
}

func TestSetupChownsExistingGroupFiles(t *testing.T) {
	h := newFakeHost(t)
	dir := filepath.Join(h.Root, "sys/fs/cgroup/memory", cgroup.UserDir(h.user.UID))
	mustMkdir(t, dir)
	for _, f := range []string{"cgroup.procs", "tasks", "notify_on_release", "memory.limit_in_bytes"} {
		mustWrite(t, filepath.Join(dir, f), "")
	}
	if os.Getuid() != 0 {
		// Files we made are ours already: nothing to change.
		rep, err := h.Setup(context.Background(), SetupOptions{User: "ada", CgroupsOnly: true})
		if err != nil || strings.Contains(strings.Join(rep.Changes, "\n"), "/memory/") {
			t.Fatalf("setup over a group the user owns: %q, %v", rep.Changes, err)
		}
		return
	}
	if _, err := h.Setup(context.Background(), SetupOptions{User: "ada", CgroupsOnly: true}); err != nil {
		t.Fatal(err)
	}
	for f, ours := range map[string]bool{"": true, "cgroup.procs": true, "tasks": true, "notify_on_release": true, "memory.limit_in_bytes": false} {
		if got := h.ownedBy(filepath.Join("/sys/fs/cgroup/memory", cgroup.UserDir(h.user.UID), f), h.user); got != ours {
			t.Errorf("%q owned by the user: %v, want %v", f, got, ours)
		}
	}
	// The directory existed: undo leaves it.
	if _, err := h.Undo(context.Background(), "ada"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("undo removed a group setup did not make: %v", err)
	}
}

func TestUndoKeepsHandMadeRanges(t *testing.T) {
	h := newFakeHost(t)
	ctx := context.Background()
	if _, err := h.Setup(ctx, SetupOptions{User: "ada"}); err != nil {
		t.Fatal(err)
	}
	// The administrator adds a range of their own for ada, by hand.
	subuid := filepath.Join(h.Root, "etc/subuid")
	mustWrite(t, subuid, readString(t, subuid)+"ada:500000:1000\n")
	if err := os.Chmod(subuid, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Undo(ctx, "ada"); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, subuid); got != "bob:100000:65536\nada:500000:1000\n" {
		t.Errorf("/etc/subuid after undo = %q", got)
	}
	if fi, _ := os.Stat(subuid); fi.Mode().Perm() != 0o640 {
		t.Errorf("/etc/subuid mode %v, want 0640 kept", fi.Mode().Perm())
	}
	// A range made by hand is never replaced or added to by setup.
	rep, err := h.Setup(ctx, SetupOptions{User: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(rep.Changes, "\n"), "subordinate uids") {
		t.Errorf("setup added uids to a user who has some: %q", rep.Changes)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "fewer than 65536") {
		t.Errorf("notes do not say the hand-made range is small: %q", rep.Notes)
	}
}

func TestSetupRefusals(t *testing.T) {
	h := newFakeHost(t)
	ctx := context.Background()
	if _, err := h.Setup(ctx, SetupOptions{User: "nobody-here"}); !errors.Is(err, ErrNoUser) {
		t.Errorf("missing user: %v", err)
	}
	if _, err := h.Setup(ctx, SetupOptions{User: "../etc"}); !errors.Is(err, ErrNoUser) {
		t.Errorf("bad name: %v", err)
	}
	if _, err := h.Undo(ctx, "a/b"); !errors.Is(err, ErrNoUser) {
		t.Errorf("bad name in undo: %v", err)
	}
	mustWrite(t, filepath.Join(h.Root, "etc/subuid"), "bob:100000\n")
	_, err := h.Setup(ctx, SetupOptions{User: "ada"})
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "/etc/subuid") {
		t.Errorf("malformed /etc/subuid: %v", err)
	}
	if got := readString(t, filepath.Join(h.Root, "etc/subuid")); got != "bob:100000\n" {
		t.Errorf("a malformed file was changed: %q", got)
	}
}

func TestSetupBootUnitWithSystemd(t *testing.T) {
	h := newFakeHost(t)
	ctx := context.Background()
	mustMkdir(t, filepath.Join(h.Root, "run/systemd/system"))
	mustMkdir(t, filepath.Join(h.Root, "etc/systemd/system/multi-user.target.wants"))
	before := snapshot(t, h.Root)
	rep, err := h.Setup(ctx, SetupOptions{User: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(h.Root, "etc/systemd/system/sandboxed-setup-ada.service")
	text := readString(t, unit)
	if !strings.Contains(text, "ExecStart=/usr/local/bin/sandboxed setup --user ada --cgroups-only\n") ||
		!strings.Contains(text, "Type=oneshot") || !strings.Contains(text, "WantedBy=multi-user.target") {
		t.Errorf("unit:\n%s", text)
	}
	link := filepath.Join(h.Root, "etc/systemd/system/multi-user.target.wants/sandboxed-setup-ada.service")
	if target, err := os.Readlink(link); err != nil || target != "/etc/systemd/system/sandboxed-setup-ada.service" {
		t.Errorf("unit not enabled: %q, %v", target, err)
	}
	if !reflect.DeepEqual(h.ran, []string{"systemctl daemon-reload"}) {
		t.Errorf("ran %q", h.ran)
	}
	if strings.Contains(strings.Join(rep.Notes, "\n"), "vanish at reboot") {
		t.Errorf("reboot warning with a unit installed: %q", rep.Notes)
	}
	// The unit's own run makes only the directories.
	if rep, err := h.Setup(ctx, SetupOptions{User: "ada", CgroupsOnly: true}); err != nil || len(rep.Changes) != 0 {
		t.Fatalf("cgroups-only: %q, %v", rep.Changes, err)
	}
	h.ran = nil
	if _, err := h.Undo(ctx, "ada"); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(h.ran, []string{"systemctl daemon-reload"}) {
		t.Errorf("undo ran %q", h.ran)
	}
	if after := snapshot(t, h.Root); !reflect.DeepEqual(before, after) {
		t.Errorf("undo left the host changed:\nbefore %v\nafter  %v", before, after)
	}
}

func TestSetupAppArmor(t *testing.T) {
	for _, restrict := range []string{"", "0", "1"} {
		t.Run("sysctl="+restrict, func(t *testing.T) {
			h := newFakeHost(t)
			ctx := context.Background()
			if restrict != "" {
				mustWrite(t, filepath.Join(h.Root, AppArmorSysctl), restrict+"\n")
				mustMkdir(t, filepath.Join(h.Root, "etc/apparmor.d"))
			}
			before := snapshot(t, h.Root)
			if _, err := h.Setup(ctx, SetupOptions{User: "ada"}); err != nil {
				t.Fatal(err)
			}
			profile := filepath.Join(h.Root, "etc/apparmor.d/sandboxed")
			text, err := os.ReadFile(profile)
			if restrict != "1" {
				if err == nil || len(h.ran) != 0 {
					t.Fatalf("profile installed without the restriction (ran %q)", h.ran)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"abi <abi/4.0>,", "include <tunables/global>",
				"profile sandboxed /usr/local/bin/sandboxed flags=(unconfined) {", "  userns,", "include if exists <local/sandboxed>"} {
				if !strings.Contains(string(text), want) {
					t.Errorf("profile lacks %q:\n%s", want, text)
				}
			}
			if !reflect.DeepEqual(h.ran, []string{"apparmor_parser -r /etc/apparmor.d/sandboxed"}) {
				t.Errorf("ran %q", h.ran)
			}
			h.ran = nil
			if _, err := h.Undo(ctx, "ada"); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(h.ran, []string{"apparmor_parser -R /etc/apparmor.d/sandboxed"}) {
				t.Errorf("undo ran %q", h.ran)
			}
			if after := snapshot(t, h.Root); !reflect.DeepEqual(before, after) {
				t.Errorf("undo left the host changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

func TestAppArmorProfileSharedByUsers(t *testing.T) {
	h := newFakeHost(t)
	ctx := context.Background()
	mustWrite(t, filepath.Join(h.Root, AppArmorSysctl), "1\n")
	bob := User{Name: "bob", UID: h.user.UID, GID: h.user.GID}
	lookup := h.LookupUser
	h.LookupUser = func(name string) (User, error) {
		if name == "bob" {
			return bob, nil
		}
		return lookup(name)
	}
	for _, name := range []string{"ada", "bob"} {
		if _, err := h.Setup(ctx, SetupOptions{User: name, CgroupsOnly: false}); err != nil && name == "ada" {
			t.Fatal(err)
		}
	}
	profile := filepath.Join(h.Root, "etc/apparmor.d/sandboxed")
	if _, err := h.Undo(ctx, "ada"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(profile); err != nil {
		t.Fatalf("undo of one user removed the profile another needs: %v", err)
	}
	if _, err := h.Undo(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(profile); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the last undo left the profile: %v", err)
	}
}

func TestSetupLeavesHandMadeProfile(t *testing.T) {
	h := newFakeHost(t)
	mustWrite(t, filepath.Join(h.Root, AppArmorSysctl), "1\n")
	profile := filepath.Join(h.Root, "etc/apparmor.d/sandboxed")
	mustWrite(t, profile, "# the admin's own\n")
	rep, err := h.Setup(context.Background(), SetupOptions{User: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	if readString(t, profile) != "# the admin's own\n" || len(h.ran) != 0 {
		t.Errorf("setup replaced a profile it did not write")
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "setup did not write it") {
		t.Errorf("notes: %q", rep.Notes)
	}
}

func TestSetupV2ChangesNoCgroup(t *testing.T) {
	h := newFakeHost(t)
	h.Cgroups = Cgroups{Version: 2, V2: "/sys/fs/cgroup"}
	mgr := filepath.Join(h.Root, "sys/fs/cgroup", V2UserManagerDir(h.user.UID))
	for _, tc := range []struct {
		controllers string // "" = no manager
		ok          bool
		say         string
	}{
		{"", false, "loginctl enable-linger ada"},
		{"cpuset io", false, "Delegate=cpu cpuset io memory pids"},
		{"cpuset cpu io memory pids", true, "systemd delegates memory pids cpu"},
	} {
		if tc.controllers != "" {
			mustWrite(t, filepath.Join(mgr, "cgroup.controllers"), tc.controllers+"\n")
		}
		d := h.V2Delegation(h.user)
		if d.OK != tc.ok || !strings.Contains(d.Detail+" "+d.Fix, tc.say) {
			t.Errorf("controllers %q: %+v", tc.controllers, d)
		}
		rep, err := h.Setup(context.Background(), SetupOptions{User: "ada", CgroupsOnly: true})
		if err != nil || len(rep.Changes) != 0 || !strings.Contains(strings.Join(rep.Notes, "\n"), tc.say) {
			t.Errorf("controllers %q: setup %+v, %v", tc.controllers, rep, err)
		}
	}
}

func TestWriteAtomicKeepsModeAndOwner(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	mustWrite(t, p, "old")
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeAtomic(p, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 || readString(t, p) != "new" {
		t.Fatalf("after write: %v %v %q", fi.Mode(), err, readString(t, p))
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
	if err := writeAtomic(filepath.Join(dir, "g"), []byte("x"), 0o640); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "g")); fi.Mode().Perm() != 0o640 {
		t.Errorf("new file mode %v", fi.Mode())
	}
}

func TestUndoRefusesABusySubtree(t *testing.T) {
	h := newFakeHost(t)
	ctx := context.Background()
	if _, err := h.Setup(ctx, SetupOptions{User: "ada"}); err != nil {
		t.Fatal(err)
	}
	// A run of the user still has its group in the subtree.
	run := filepath.Join(h.Root, "sys/fs/cgroup/memory", cgroup.UserDir(h.user.UID), "run-1")
	mustMkdir(t, run)
	_, err := h.Undo(ctx, "ada")
	if err == nil || !strings.Contains(err.Error(), "still holds processes or groups") {
		t.Fatalf("undo of a busy subtree: %v", err)
	}
	m, exists, err := h.loadManifest("ada")
	if err != nil || !exists || len(m.CgroupDirs) != 1 || m.SubUID != nil {
		t.Fatalf("manifest after a partial undo: %+v %v %v", m, exists, err)
	}
	if err := os.Remove(run); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Undo(ctx, "ada"); err != nil {
		t.Fatal(err)
	}
	if _, exists, _ := h.loadManifest("ada"); exists {
		t.Errorf("manifest left after a complete undo")
	}
}

// ownedBy reports whether the file at p (on the host) belongs to u.
func (s *System) ownedBy(p string, u User) bool {
	fi, err := os.Stat(s.path(p))
	if err != nil {
		return false
	}
	uid, _, ok := fileOwner(fi)
	return ok && uid == u.UID
}

// The boot unit runs the binary as root at each boot, and the AppArmor
// profile exempts whatever sits at its path: setup refuses both when
// someone other than root could replace the binary (a binary in a user's
// ~/go/bin, run once with sudo). Before, the unit was installed with
// ExecStart= naming a file the user could overwrite: root at next boot.
func TestSetupRefusesABinaryOthersCanReplace(t *testing.T) {
	for _, c := range []struct {
		name            string
		dirMode, exMode fs.FileMode
	}{
		{"directory writable by others", 0o777, 0o755},
		{"binary writable by its group", 0o755, 0o775},
	} {
		h := newFakeHost(t)
		h.Executable = "/home/ada/go/bin/sandboxed"
		mustMkdir(t, h.path("/run/systemd/system"))
		mustMkdir(t, h.path("/etc/systemd/system/multi-user.target.wants"))
		mustWrite(t, h.path(AppArmorSysctl), "1\n")
		exe := h.path(h.Executable)
		mustWrite(t, exe, "binary")
		if err := os.Chmod(filepath.Dir(exe), c.dirMode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(exe, c.exMode); err != nil {
			t.Fatal(err)
		}
		_, err := h.Setup(context.Background(), SetupOptions{User: h.user.Name})
		if err == nil || !strings.Contains(err.Error(), h.Executable) {
			t.Errorf("%s: setup = %v; want it refused, naming %s", c.name, err, h.Executable)
		}
		unit := h.path(filepath.Join("/etc/systemd/system", unitName(h.user.Name)))
		if _, err := os.Stat(unit); err == nil {
			t.Errorf("%s: the boot unit was installed", c.name)
		}
		if _, err := os.Stat(h.path(appArmorProfilePath)); err == nil {
			t.Errorf("%s: the AppArmor profile was installed", c.name)
		}
	}
}

// A binary in a directory of root's own under a sticky directory such as
// /tmp is safe: no one else can rename or remove what is in it.
func TestSetupAcceptsABinaryUnderAStickyDirectory(t *testing.T) {
	h := newFakeHost(t)
	h.Executable = "/tmp/build/sandboxed"
	mustMkdir(t, h.path("/run/systemd/system"))
	mustMkdir(t, h.path("/etc/systemd/system/multi-user.target.wants"))
	mustWrite(t, h.path(h.Executable), "binary")
	if err := os.Chmod(h.path("/tmp/build"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(h.path("/tmp"), 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Setup(context.Background(), SetupOptions{User: h.user.Name}); err != nil {
		t.Errorf("setup: %v", err)
	}
}
