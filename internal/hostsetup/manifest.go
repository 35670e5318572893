package hostsetup

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// ManifestDir holds one manifest per user setup prepared.
const ManifestDir = "/var/lib/sandboxed/setup"

// Manifest records what setup added for one user, so that undo removes
// exactly that. Each entry is written before the change it names, so a
// setup that stops half-way leaves nothing undo does not know about; undo
// removes an entry only once its change is gone. Paths are as on the host.
type Manifest struct {
	User string `json:"user"`
	UID  int    `json:"uid"`
	GID  int    `json:"gid"`
	// SubUID and SubGID are the lines setup added to /etc/subuid and
	// /etc/subgid.
	SubUID *SubIDRange `json:"subuid,omitempty"`
	SubGID *SubIDRange `json:"subgid,omitempty"`
	// CgroupDirs are the delegated v1 directories (sandboxed/user-UID)
	// setup made; CgroupParents the sandboxed directories it made for
	// them.
	CgroupDirs    []string `json:"cgroup_dirs,omitempty"`
	CgroupParents []string `json:"cgroup_parents,omitempty"`
	// Unit and UnitLink are the boot unit that makes the v1 directories
	// again and its enabling symlink.
	Unit     string `json:"unit,omitempty"`
	UnitLink string `json:"unit_link,omitempty"`
	// AppArmorProfile is the profile setup installed; other users'
	// manifests may name it too, and the last undo removes it.
	AppArmorProfile string `json:"apparmor_profile,omitempty"`
}

// empty reports whether m records no change.
func (m *Manifest) empty() bool {
	return m.SubUID == nil && m.SubGID == nil && len(m.CgroupDirs) == 0 && len(m.CgroupParents) == 0 &&
		m.Unit == "" && m.UnitLink == "" && m.AppArmorProfile == ""
}

func (s *System) manifestPath(name string) string {
	return s.path(filepath.Join(ManifestDir, name+".json"))
}

// loadManifest reads name's manifest; exists is false when there is none.
func (s *System) loadManifest(name string) (m *Manifest, exists bool, err error) {
	p := s.manifestPath(name)
	data, exists, err := readOptional(p)
	if err != nil {
		return nil, false, fmt.Errorf("read setup manifest %s: %w", p, err)
	}
	m = &Manifest{User: name}
	if !exists {
		return m, false, nil
	}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, true, fmt.Errorf("read setup manifest %s: %v: %w", p, err, ErrMalformed)
	}
	return m, true, nil
}

// saveManifest writes m, or removes it (and the directories that held
// only it) when it records nothing.
func (s *System) saveManifest(m *Manifest) error {
	p := s.manifestPath(m.User)
	if m.empty() {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove setup manifest: %w", err)
		}
		// Only empty directories go: anything else there is not ours.
		_ = os.Remove(filepath.Dir(p))
		_ = os.Remove(filepath.Dir(filepath.Dir(p)))
		return nil
	}
	return writeManifest(p, m)
}

// writeManifest writes manifest m (a user's or a runtime's) to p as
// indented JSON, atomically, making its directory.
func writeManifest(p string, m any) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("write setup manifest: %w", err)
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("write setup manifest: %w", err)
	}
	return writeAtomic(p, append(data, '\n'), 0o644)
}

// othersUsing reports whether a manifest of another user than name names
// the AppArmor profile at profile.
func (s *System) othersUsing(name, profile string) bool {
	ents, err := os.ReadDir(s.path(ManifestDir))
	if err != nil {
		return false
	}
	for _, e := range ents {
		other := e.Name()
		if filepath.Ext(other) != ".json" || other == name+".json" {
			continue
		}
		m, _, err := s.loadManifest(other[:len(other)-len(".json")])
		if err != nil {
			return true // cannot tell: keep the profile
		}
		if m.AppArmorProfile == profile {
			return true
		}
	}
	return false
}

// addOnce appends v to list unless it is there.
func addOnce(list []string, v string) []string {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

// without returns list without v.
func without(list []string, v string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(x string) bool { return x == v })
}
