package hostsetup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sandboxed-dev/sandboxed/isolation/cgroup"
)

// Report is what setup or undo did (Changes, one line each) and what it
// found that needs no change or is not its to make (Notes).
type Report struct {
	Changes []string `json:"changes"`
	Notes   []string `json:"notes"`
}

func (r *Report) change(format string, a ...any) {
	r.Changes = append(r.Changes, fmt.Sprintf(format, a...))
}
func (r *Report) note(format string, a ...any) { r.Notes = append(r.Notes, fmt.Sprintf(format, a...)) }

// SetupOptions say what setup prepares.
type SetupOptions struct {
	// User is the name of the unprivileged user to prepare.
	User string
	// CgroupsOnly makes only the delegated cgroup v1 directories (what a
	// reboot removes): the boot unit runs setup this way.
	CgroupsOnly bool
}

// RequireRoot fails with ErrNotRoot and the command to run when the
// caller is not root.
func RequireRoot(command string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%s changes /etc/subuid, /etc/subgid, cgroups and AppArmor profiles: it %w: sudo %s", command, ErrNotRoot, command)
	}
	return nil
}

// Setup prepares the host for opt.User: what is already there is left as
// it is, so a second run changes nothing. Each change is recorded in the
// user's manifest before it is made.
func (s *System) Setup(ctx context.Context, opt SetupOptions) (*Report, error) {
	u, err := s.lookup(opt.User)
	if err != nil {
		return nil, err
	}
	if u.UID == 0 {
		return nil, fmt.Errorf("user %q is root: root needs no setup (name the unprivileged user who will run sandboxed)", u.Name)
	}
	m, exists, err := s.loadManifest(u.Name)
	if err != nil {
		return nil, err
	}
	if exists && (m.UID != u.UID || m.GID != u.GID) && !m.empty() {
		return nil, fmt.Errorf("setup of %s was done for uid %d gid %d, and the user now has uid %d gid %d: run 'sandboxed setup --user %s --undo' first", u.Name, m.UID, m.GID, u.UID, u.GID, u.Name)
	}
	m.UID, m.GID = u.UID, u.GID
	rep := &Report{}
	var errs []error
	if !opt.CgroupsOnly {
		errs = append(errs, s.setupSubIDs(u, m, "uid", rep), s.setupSubIDs(u, m, "gid", rep))
	}
	errs = append(errs, s.setupCgroups(ctx, u, m, rep))
	if !opt.CgroupsOnly {
		if s.Cgroups.Version == 1 {
			errs = append(errs, s.setupBootUnit(ctx, u, m, rep))
		}
		errs = append(errs, s.setupAppArmor(ctx, m, rep))
		s.noteIDMapTools(rep)
	}
	return rep, errors.Join(errs...)
}

// subIDFile is /etc/subuid or /etc/subgid.
func subIDFile(kind string) string { return "/etc/sub" + kind }

// setupSubIDs gives u a range of SubIDCount subordinate ids of kind (uid
// or gid) unless it has one.
func (s *System) setupSubIDs(u User, m *Manifest, kind string, rep *Report) error {
	file := subIDFile(kind)
	data, _, err := readOptional(s.path(file))
	if err != nil {
		return fmt.Errorf("read %s: %w", file, err)
	}
	ranges, err := ParseSubIDs(data)
	if err != nil {
		return fmt.Errorf("read %s: %w (fix the line by hand; nothing was changed in it)", file, err)
	}
	if own := OwnedBy(ranges, u.Name, u.UID); len(own) > 0 {
		var total uint64
		var rs []string
		for _, r := range own {
			total += r.Count
			rs = append(rs, r.String())
		}
		if total < SubIDCount {
			rep.note("%s already has subordinate %ss %s in %s, fewer than %d: a tool that runs as nobody (65534) may not be mappable; widen the range by hand", u.Name, kind, strings.Join(rs, ", "), file, SubIDCount)
		}
		return nil
	}
	defs, _, err := readOptional(s.path("/etc/login.defs"))
	if err != nil {
		return fmt.Errorf("read /etc/login.defs: %w", err)
	}
	b := parseLoginDefs(defs, strings.ToUpper(kind))
	start, err := FreeRange(ranges, b.Min, b.Max, SubIDCount)
	if err != nil {
		return fmt.Errorf("add subordinate %ss for %s to %s: %w", kind, u.Name, file, err)
	}
	r := &SubIDRange{Owner: u.Name, Start: start, Count: SubIDCount}
	if kind == "uid" {
		m.SubUID = r
	} else {
		m.SubGID = r
	}
	if err := s.saveManifest(m); err != nil {
		return err
	}
	if err := writeAtomic(s.path(file), appendLine(data, r.Line()), 0o644); err != nil {
		return fmt.Errorf("add subordinate %ss for %s: %w", kind, u.Name, err)
	}
	rep.change("added subordinate %ss %s for %s to %s", kind, r, u.Name, file)
	return nil
}

// delegatedFiles are the control files of a v1 cgroup that its delegate
// must own (as LXC's pam_cgfs chowns them): to move processes in and to
// make children that inherit settings.
var delegatedFiles = []string{"cgroup.procs", "tasks", "cgroup.clone_children", "notify_on_release"}

// v1Mounts returns the distinct mountpoints of the v1 hierarchies the
// process tier uses, with the controllers each holds.
func (s *System) v1Mounts() (mounts []string, ctls map[string][]string) {
	ctls = map[string][]string{}
	for _, c := range V1Controllers {
		mnt, ok := s.Cgroups.V1[c]
		if !ok {
			continue
		}
		if _, seen := ctls[mnt]; !seen {
			mounts = append(mounts, mnt)
		}
		ctls[mnt] = append(ctls[mnt], c)
	}
	return mounts, ctls
}

// setupCgroups makes and hands over the delegated subtree on cgroup v1,
// and on v2 says whether systemd delegates to the user.
func (s *System) setupCgroups(ctx context.Context, u User, m *Manifest, rep *Report) error {
	switch s.Cgroups.Version {
	case 2:
		d := s.V2Delegation(u)
		if d.OK {
			rep.note("%s; nothing to change", d.Detail)
			return nil
		}
		if s.systemdRuns() {
			// The manager may just not be running: ask what it would get.
			out, err := s.output(ctx, "systemctl", "show", "--property=Delegate", "--value", fmt.Sprintf("user@%d.service", u.UID))
			if err == nil && strings.TrimSpace(string(out)) != "yes" {
				rep.note("cgroup v2: user@%d.service has no Delegate=yes, so %s's runs cannot get limits; setup does not change systemd: %s", u.UID, u.Name, v2DelegateFix)
				return nil
			}
		}
		rep.note("%s; setup does not change systemd: %s", d.Detail, d.Fix)
		return nil
	case 1:
	default:
		rep.note("no cgroup hierarchy is mounted: runs that need a limit will be refused")
		return nil
	}
	mounts, _ := s.v1Mounts()
	var errs []error
	for _, mnt := range mounts {
		errs = append(errs, s.delegateV1(u, m, mnt, rep))
	}
	return errors.Join(errs...)
}

// delegateV1 makes MNT/sandboxed (root's, 0755) and MNT/sandboxed/user-UID
// (u's) where missing, and gives u the group and its control files.
func (s *System) delegateV1(u User, m *Manifest, mnt string, rep *Report) error {
	parent := filepath.Join(mnt, cgroup.Parent)
	if _, err := os.Stat(s.path(parent)); errors.Is(err, fs.ErrNotExist) {
		m.CgroupParents = addOnce(m.CgroupParents, parent)
		if err := s.saveManifest(m); err != nil {
			return err
		}
		if err := os.Mkdir(s.path(parent), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("make cgroup %s: %w", parent, err)
		}
		if err := os.Chmod(s.path(parent), 0o755); err != nil {
			return fmt.Errorf("make cgroup %s: %w", parent, err)
		}
		rep.change("made cgroup %s (root's, mode 0755)", parent)
	} else if err != nil {
		return fmt.Errorf("make cgroup %s: %w", parent, err)
	}
	dir := filepath.Join(mnt, cgroup.UserDir(u.UID))
	made := false
	if _, err := os.Stat(s.path(dir)); errors.Is(err, fs.ErrNotExist) {
		m.CgroupDirs = addOnce(m.CgroupDirs, dir)
		if err := s.saveManifest(m); err != nil {
			return err
		}
		if err := os.Mkdir(s.path(dir), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("make cgroup %s: %w", dir, err)
		}
		made = true
	} else if err != nil {
		return fmt.Errorf("make cgroup %s: %w", dir, err)
	}
	chowned := false
	for _, name := range append([]string{""}, delegatedFiles...) {
		p := s.path(filepath.Join(dir, name))
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) && name != "" {
			continue // not every hierarchy has every file
		}
		if err != nil {
			return fmt.Errorf("delegate cgroup %s: %w", dir, err)
		}
		if uid, gid, ok := fileOwner(fi); ok && uid == u.UID && gid == u.GID {
			continue
		}
		if err := os.Chown(p, u.UID, u.GID); err != nil {
			return fmt.Errorf("delegate cgroup %s to %s: %w", dir, u.Name, err)
		}
		chowned = true
	}
	switch {
	case made:
		rep.change("made cgroup %s, delegated to %s (%d:%d)", dir, u.Name, u.UID, u.GID)
	case chowned:
		rep.change("delegated cgroup %s to %s (%d:%d)", dir, u.Name, u.UID, u.GID)
	}
	return nil
}

// unitName is the boot unit of name's delegated cgroups.
func unitName(name string) string {
	return "sandboxed-setup-" + name + ".service"
}

// unitText is the oneshot unit that makes name's v1 directories again at
// boot.
func unitText(exe, name string) string {
	return fmt.Sprintf(`# Made by 'sandboxed setup --user %[2]s'; 'sandboxed setup --user %[2]s --undo' removes it.
# cgroup v1 directories do not survive a reboot: this makes the subtree
# delegated to %[2]s again.
[Unit]
Description=Delegate sandboxed's cgroup v1 subtree to %[2]s
After=local-fs.target

[Service]
Type=oneshot
ExecStart=%[1]s setup --user %[2]s --cgroups-only

[Install]
WantedBy=multi-user.target
`, systemdQuote(exe), name)
}

// systemdQuote quotes a path for an ExecStart= line where it needs it.
func systemdQuote(p string) string {
	if !strings.ContainsAny(p, " \t\"'\\$%;") {
		return p
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `$$`, `%`, `%%`)
	return `"` + r.Replace(p) + `"`
}

// checkExecutableSafe refuses to name s.Executable in what root runs or
// trusts (the boot unit's ExecStart=, the AppArmor profile's attachment)
// when someone other than the user setup runs as (root) could replace
// it: the file, with symlinks resolved, and every directory above it
// must belong to that user and be writable by no group and no other.
func (s *System) checkExecutableSafe(what string) error {
	if s.Executable == "" || !filepath.IsAbs(s.Executable) {
		return fmt.Errorf("%s: the path of the sandboxed binary is unknown", what)
	}
	fix := fmt.Sprintf("install it where only root can change it (sudo install -m 0755 %s /usr/local/bin/) and run setup from there", s.Executable)
	return s.checkOnlyRootReplaces(what, s.Executable, fix)
}

// checkOnlyRootReplaces refuses exe (a host path) when someone other than
// the user setup runs as could replace the file, with symlinks resolved,
// or a directory above it; fix says what to do instead.
func (s *System) checkOnlyRootReplaces(what, exe, fix string) error {
	p, err := filepath.EvalSymlinks(s.path(exe))
	if err != nil {
		return fmt.Errorf("%s: %s: %w", what, exe, err)
	}
	root := filepath.Clean(s.path("/"))
	me := os.Geteuid()
	below := p // the file itself is never a sticky directory
	for {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", what, exe, err)
		}
		uid, _, ok := fileOwner(fi)
		// A sticky directory (/tmp) may be writable by all: no one but
		// its owner can rename or remove the entry below it, which is
		// checked in turn.
		sticky := p != below && fi.IsDir() && fi.Mode()&fs.ModeSticky != 0
		if !ok || !sticky && (uid != me || fi.Mode().Perm()&0o022 != 0) {
			return fmt.Errorf("%s: %s could be replaced by uid %d or its group or others (%s is %v): root would run what they put there; %s",
				what, exe, uid, strings.TrimPrefix(p, strings.TrimSuffix(root, "/")), fi.Mode().Perm(), fix)
		}
		if p == root || len(p) <= len(root) {
			return nil
		}
		p = filepath.Dir(p)
	}
}

// systemdRuns reports whether systemd is the host's init.
func (s *System) systemdRuns() bool {
	fi, err := os.Stat(s.path("/run/systemd/system"))
	return err == nil && fi.IsDir()
}

// setupBootUnit installs and enables the unit that makes the v1
// directories again at boot, where systemd is the init; elsewhere it says
// that setup must run again after each boot.
func (s *System) setupBootUnit(ctx context.Context, u User, m *Manifest, rep *Report) error {
	if !s.systemdRuns() {
		rep.note("the init of this host is not systemd: the cgroup v1 directories vanish at reboot; run 'sandboxed setup --user %s' again after each boot ('sandboxed doctor' says when they are missing)", u.Name)
		return nil
	}
	if err := s.checkExecutableSafe("install boot unit"); err != nil {
		return err
	}
	unit := filepath.Join("/etc/systemd/system", unitName(u.Name))
	link := filepath.Join("/etc/systemd/system/multi-user.target.wants", unitName(u.Name))
	text := unitText(s.Executable, u.Name)
	old, exists, err := readOptional(s.path(unit))
	if err != nil {
		return fmt.Errorf("install boot unit %s: %w", unit, err)
	}
	changed := false
	if !exists || string(old) != text {
		if exists && m.Unit != unit {
			rep.note("%s exists and setup did not write it: left as it is", unit)
			return nil
		}
		m.Unit = unit
		if err := s.saveManifest(m); err != nil {
			return err
		}
		if err := writeAtomic(s.path(unit), []byte(text), 0o644); err != nil {
			return fmt.Errorf("install boot unit: %w", err)
		}
		rep.change("installed %s: it makes the delegated cgroup v1 directories again at each boot", unit)
		changed = true
	}
	if target, err := os.Readlink(s.path(link)); err != nil || target != unit {
		m.UnitLink = link
		if err := s.saveManifest(m); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(s.path(link)), 0o755); err != nil {
			return fmt.Errorf("enable boot unit: %w", err)
		}
		_ = os.Remove(s.path(link))
		if err := os.Symlink(unit, s.path(link)); err != nil {
			return fmt.Errorf("enable boot unit: %w", err)
		}
		rep.change("enabled %s (%s)", unitName(u.Name), link)
		changed = true
	}
	if changed {
		return s.run(ctx, "systemctl", "daemon-reload")
	}
	return nil
}

// AppArmorSysctl is the Ubuntu (24.04 and later) switch that confines
// every unprivileged user namespace unless a profile allows it.
const AppArmorSysctl = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"

// appArmorProfilePath is where setup installs the profile for the binary.
const appArmorProfilePath = "/etc/apparmor.d/sandboxed"

// appArmorRestricts reports whether AppArmor confines unprivileged user
// namespaces on this host.
func (s *System) appArmorRestricts() bool {
	b, err := os.ReadFile(s.path(AppArmorSysctl))
	return err == nil && strings.TrimSpace(string(b)) == "1"
}

// appArmorProfile lets the binary at exe make user namespaces, and
// nothing else changes for it (unconfined), as bubblewrap's profile does.
func appArmorProfile(exe string) string {
	return fmt.Sprintf(`# Made by 'sandboxed setup'; 'sandboxed setup --undo' removes it.
# AppArmor restricts unprivileged user namespaces on this host
# (kernel.apparmor_restrict_unprivileged_userns=1): this lets sandboxed
# make them, and confines it no further.
abi <abi/4.0>,
include <tunables/global>

profile sandboxed %s flags=(unconfined) {
  userns,

  include if exists <local/sandboxed>
}
`, appArmorQuote(exe))
}

// appArmorQuote quotes a path for a profile where it needs it.
func appArmorQuote(p string) string {
	if !strings.ContainsAny(p, " \t\"") {
		return p
	}
	return `"` + strings.ReplaceAll(p, `"`, `\"`) + `"`
}

// setupAppArmor installs and loads the profile, only where AppArmor
// restricts unprivileged user namespaces.
func (s *System) setupAppArmor(ctx context.Context, m *Manifest, rep *Report) error {
	if !s.appArmorRestricts() {
		return nil
	}
	if err := s.checkExecutableSafe("install AppArmor profile"); err != nil {
		return err
	}
	text := appArmorProfile(s.Executable)
	old, exists, err := readOptional(s.path(appArmorProfilePath))
	if err != nil {
		return fmt.Errorf("install AppArmor profile: %w", err)
	}
	if exists && string(old) == text {
		if m.AppArmorProfile == "" && s.othersUsing(m.User, appArmorProfilePath) {
			m.AppArmorProfile = appArmorProfilePath // shared: the last undo removes it
			return s.saveManifest(m)
		}
		return nil
	}
	if exists && m.AppArmorProfile == "" && !s.othersUsing(m.User, appArmorProfilePath) {
		rep.note("%s exists and setup did not write it: left as it is; it must allow userns for %s", appArmorProfilePath, s.Executable)
		return nil
	}
	m.AppArmorProfile = appArmorProfilePath
	if err := s.saveManifest(m); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path(appArmorProfilePath)), 0o755); err != nil {
		return fmt.Errorf("install AppArmor profile: %w", err)
	}
	if err := writeAtomic(s.path(appArmorProfilePath), []byte(text), 0o644); err != nil {
		return fmt.Errorf("install AppArmor profile: %w", err)
	}
	if err := s.run(ctx, "apparmor_parser", "-r", appArmorProfilePath); err != nil {
		return fmt.Errorf("load AppArmor profile: %w", err)
	}
	rep.change("installed and loaded AppArmor profile %s: %s may make user namespaces", appArmorProfilePath, s.Executable)
	return nil
}

// noteIDMapTools says when newuidmap and newgidmap, which map a user's
// subordinate ids, are missing.
func (s *System) noteIDMapTools(rep *Report) {
	for _, t := range []string{"newuidmap", "newgidmap"} {
		if s.findTool(t) == "" {
			rep.note("%s is not installed: install it (apt-get install uidmap, dnf install shadow-utils) so runs as nobody (reduced) can use the subordinate ids", t)
		}
	}
}

// findTool returns the path of a setuid helper in the usual directories,
// or "".
func (s *System) findTool(name string) string {
	for _, d := range []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin"} {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(s.path(p)); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// Undo removes what setup added for the user name, as its manifest
// records, and nothing else. It needs no user database entry: a user
// deleted since setup is undone all the same.
func (s *System) Undo(ctx context.Context, name string) (*Report, error) {
	if !validUserName(name) {
		return nil, fmt.Errorf("user %q: not a user name: %w", name, ErrNoUser)
	}
	m, exists, err := s.loadManifest(name)
	if err != nil {
		return nil, err
	}
	rep := &Report{}
	if !exists {
		rep.note("setup made no change for %s that is left to undo (no %s)", name, filepath.Join(ManifestDir, name+".json"))
		return rep, nil
	}
	var errs []error
	for _, kind := range []string{"uid", "gid"} {
		errs = append(errs, s.undoSubIDs(m, kind, rep))
	}
	errs = append(errs, s.undoAppArmor(ctx, m, rep), s.undoBootUnit(ctx, m, rep), s.undoCgroups(m, rep))
	errs = append(errs, s.saveManifest(m))
	return rep, errors.Join(errs...)
}

func (s *System) undoSubIDs(m *Manifest, kind string, rep *Report) error {
	r := m.SubUID
	if kind == "gid" {
		r = m.SubGID
	}
	if r == nil {
		return nil
	}
	file := subIDFile(kind)
	data, _, err := readOptional(s.path(file))
	if err != nil {
		return fmt.Errorf("read %s: %w", file, err)
	}
	if out, found := removeLine(data, r.Line()); found {
		if err := writeAtomic(s.path(file), out, 0o644); err != nil {
			return fmt.Errorf("remove subordinate %ss of %s: %w", kind, m.User, err)
		}
		rep.change("removed subordinate %ss %s of %s from %s", kind, r, m.User, file)
	} else {
		rep.note("%s no longer holds %q: nothing to remove", file, r.Line())
	}
	if kind == "uid" {
		m.SubUID = nil
	} else {
		m.SubGID = nil
	}
	return nil
}

// undoCgroups removes the delegated directories, then the parents setup
// made where no other group is left in them.
func (s *System) undoCgroups(m *Manifest, rep *Report) error {
	var errs []error
	for _, dir := range m.CgroupDirs {
		err := os.Remove(s.path(dir))
		switch {
		case err == nil:
			rep.change("removed cgroup %s", dir)
		case errors.Is(err, fs.ErrNotExist):
		case errors.Is(err, syscall.EBUSY), errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, fs.ErrExist):
			errs = append(errs, fmt.Errorf("remove cgroup %s: it still holds processes or groups (a run of %s?): end them, then undo again", dir, m.User))
			continue
		default:
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dir, err))
			continue
		}
		m.CgroupDirs = without(m.CgroupDirs, dir)
	}
	if len(m.CgroupDirs) > 0 {
		return errors.Join(errs...) // the parents still hold them
	}
	for _, parent := range m.CgroupParents {
		err := os.Remove(s.path(parent))
		switch {
		case err == nil:
			rep.change("removed cgroup %s", parent)
		case errors.Is(err, fs.ErrNotExist):
		case errors.Is(err, syscall.EBUSY), errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, fs.ErrExist):
			rep.note("left cgroup %s: other groups are in it", parent)
		default:
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", parent, err))
			continue
		}
		m.CgroupParents = without(m.CgroupParents, parent)
	}
	return errors.Join(errs...)
}

func (s *System) undoBootUnit(ctx context.Context, m *Manifest, rep *Report) error {
	if m.Unit == "" && m.UnitLink == "" {
		return nil
	}
	for _, p := range []string{m.UnitLink, m.Unit} {
		if p == "" {
			continue
		}
		if err := os.Remove(s.path(p)); err == nil {
			rep.change("removed %s", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove boot unit: %w", err)
		}
	}
	m.Unit, m.UnitLink = "", ""
	if s.systemdRuns() {
		return s.run(ctx, "systemctl", "daemon-reload")
	}
	return nil
}

func (s *System) undoAppArmor(ctx context.Context, m *Manifest, rep *Report) error {
	p := m.AppArmorProfile
	if p == "" {
		return nil
	}
	if !s.othersUsing(m.User, p) {
		if _, err := os.Stat(s.path(p)); err == nil {
			if err := s.run(ctx, "apparmor_parser", "-R", p); err != nil {
				return fmt.Errorf("unload AppArmor profile: %w", err)
			}
			if err := os.Remove(s.path(p)); err != nil {
				return fmt.Errorf("remove AppArmor profile: %w", err)
			}
			rep.change("unloaded and removed AppArmor profile %s", p)
		}
	} else {
		rep.note("kept AppArmor profile %s: setup of another user needs it", p)
	}
	m.AppArmorProfile = ""
	return nil
}
