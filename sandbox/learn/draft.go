package learn

import (
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
	"github.com/sandboxed-dev/sandboxed/internal/pathglob"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/egress"
	"github.com/sandboxed-dev/sandboxed/sandbox"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// Param is a parameter whose value names a host path: Path is that value,
// absolute and clean.
type Param struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// HostInfo is what drafting needs to know of the host. It is an
// interface so that drafting stays pure and table-tested.
type HostInfo interface {
	// Stat says whether path exists on the host, and whether it is a
	// directory.
	Stat(path string) (exists, dir bool)
}

// Scene is where a learning run took place: what its sandbox showed and
// what names the paths it touched.
type Scene struct {
	// View are the host paths the learning sandbox showed besides what
	// every sandbox shows (the paths of its parameters, its working
	// directory), absolute and clean.
	View []string
	// Params are the parameters naming paths: a path at or under one is
	// written with the parameter ({OUT}/x).
	Params []Param
	// Cwd, when set, writes other paths under it relative to it (./x):
	// permissions resolve relative paths against the run's working
	// directory.
	Cwd string
	// Home, when set, writes other paths under it as ~/x.
	Home string
	// Given reports a path every sandbox shows anyway (the system
	// directories, /proc, /dev, /tmp): it needs no permission.
	Given func(path string) bool
	Host  HostInfo
}

// Draft is the least required-permissions that cover what a run did, and
// what the run did that they do not cover.
type Draft struct {
	// Permissions are the drafted required-permissions, reads first, then
	// writes, then hosts, each sorted.
	Permissions []string `json:"permissions"`
	// Hidden are host paths the tool looked for that the learning sandbox
	// did not show (so the run went without them): a permission for one
	// is the reviewer's call.
	Hidden []string `json:"hidden,omitempty"`
	// Refused are connections the proxy refused even while learning
	// (loopback, private and metadata addresses), as HOST:PORT.
	Refused []string `json:"refused,omitempty"`
}

// minFold is how many files of one directory a run must read for the
// draft to grant the directory rather than each file.
const minFold = 2

// MakeDraft turns what a learning run touched into required-permissions:
//
//   - Only paths the learning sandbox showed (Scene.View) or that lie
//     under a parameter's path count; a path every sandbox shows anyway
//     (Scene.Given) needs nothing, and any other path that exists on the
//     host is Hidden.
//   - A write grants the file written when it existed before the run, the
//     directory made or removed, and otherwise the directory a file was
//     created, removed or renamed in. A path both read and written is
//     granted the write only (a write grant reads too).
//   - Reads (and executions) grant the file, or its directory when the run
//     read minFold or more files of it, or listed it.
//   - A path at or under a parameter's value is written with the
//     parameter ({OUT}, {OUT}/x); the longest such value wins. Another
//     path is relative to the working directory (./x) when under it, or
//     under ~, or absolute.
//   - A host reached through the proxy is network:external:HOST, with
//     :PORT unless the port is 80 or 443.
//
// Environment variables are not observed: a tool reading one it was not
// given sees it unset, and nothing records that it looked.
func MakeDraft(accesses []isolation.Access, conns []sandbox.EgressEntry, sc Scene) *Draft {
	d := &Draft{Permissions: []string{}}
	shown := func(p string) bool {
		for _, v := range sc.View {
			if within(p, v) {
				return true
			}
		}
		for _, pp := range sc.Params {
			if within(p, pp.Path) {
				return true
			}
		}
		return false
	}
	var writes []string
	readFiles := map[string][]string{} // directory -> files read in it
	var readDirs []string
	for _, a := range accesses {
		p := filepath.Clean(a.Path)
		if !filepath.IsAbs(p) || within(p, "/.sandboxed") {
			continue
		}
		if !shown(p) {
			exists, _ := sc.Host.Stat(p)
			if exists && (sc.Given == nil || !sc.Given(p)) && !slices.Contains(d.Hidden, p) {
				d.Hidden = append(d.Hidden, p)
			}
			continue
		}
		switch a.Op {
		case isolation.AccessWrite:
			exists, dir := sc.Host.Stat(p)
			switch {
			case a.Dir || (exists && !dir):
				writes = appendNew(writes, p)
			default:
				writes = appendNew(writes, filepath.Dir(p))
			}
		case isolation.AccessRead, isolation.AccessExec:
			if a.Dir {
				readDirs = appendNew(readDirs, p)
				continue
			}
			if exists, _ := sc.Host.Stat(p); !exists {
				continue // looked for and not there: nothing to grant
			}
			dir := filepath.Dir(p)
			readFiles[dir] = appendNew(readFiles[dir], p)
		}
	}
	var reads []string
	reads = append(reads, readDirs...)
	for dir, files := range readFiles {
		if len(files) >= minFold && shown(dir) {
			reads = appendNew(reads, dir)
			continue
		}
		for _, f := range files {
			reads = appendNew(reads, f)
		}
	}
	writes = dropCovered(writes, nil)
	reads = dropCovered(reads, writes)
	for _, set := range []struct {
		kind  tool.PermKind
		paths []string
	}{{tool.PermFSRead, reads}, {tool.PermFSWrite, writes}} {
		var perms []string
		for _, p := range set.paths {
			perms = append(perms, string(set.kind)+":"+sc.name(p))
		}
		slices.Sort(perms)
		d.Permissions = append(d.Permissions, perms...)
	}
	var hosts []string
	for _, c := range conns {
		hp := hostPort(c.Host, c.Port)
		if c.Verdict != string(egress.Allow) {
			if !slices.Contains(d.Refused, hp) {
				d.Refused = append(d.Refused, hp)
			}
			continue
		}
		r := netrule.Rule{Host: c.Host}
		if c.Port != 80 && c.Port != 443 {
			r.Port = c.Port
		}
		hosts = appendNew(hosts, r.String())
	}
	slices.Sort(hosts)
	d.Permissions = append(d.Permissions, hosts...)
	slices.Sort(d.Hidden)
	return d
}

func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

// name writes p with the parameter whose path holds it, else relative to
// the working directory, else with ~.
func (sc Scene) name(p string) string {
	best := -1
	for i, pp := range sc.Params {
		if within(p, pp.Path) && (best < 0 || len(pp.Path) > len(sc.Params[best].Path)) {
			best = i
		}
	}
	if best >= 0 {
		pp := sc.Params[best]
		return "{" + pp.Name + "}" + strings.TrimPrefix(p, pp.Path)
	}
	if sc.Cwd != "" && sc.Cwd != "/" && within(p, sc.Cwd) {
		return "." + strings.TrimPrefix(p, sc.Cwd)
	}
	if sc.Home != "" && sc.Home != "/" && within(p, sc.Home) {
		return "~" + strings.TrimPrefix(p, sc.Home)
	}
	return p
}

// dropCovered removes from paths each path at or under another of paths
// (a different one) or of by.
func dropCovered(paths, by []string) []string {
	var out []string
	for i, p := range paths {
		covered := false
		for j, q := range paths {
			if i != j && p != q && within(p, q) {
				covered = true
			}
		}
		for _, q := range by {
			if within(p, q) {
				covered = true
			}
		}
		if !covered {
			out = append(out, p)
		}
	}
	return out
}

// within reports whether p is dir or lies under it.
func within(p, dir string) bool { return pathglob.Within(p, dir) }

func appendNew(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
