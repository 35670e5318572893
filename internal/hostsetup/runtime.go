package hostsetup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// DaemonJSON is the Docker engine's configuration file.
const DaemonJSON = "/etc/docker/daemon.json"

// dockerPidFile is where dockerd writes its pid by default.
const dockerPidFile = "/var/run/docker.pid"

// Runtimes are the OCI runtimes setup --runtime registers with the Docker
// engine, each with the runtime arguments the container tier's plans need.
// runsc needs --host-uds=open: the in-sandbox init dials the egress
// bridge's bind-mounted Unix socket, which gVisor refuses by default;
// --oci-seccomp, without which gVisor ignores the plan's seccomp filter;
// and --network=none: a plan never has a network (egress is the bridge's
// socket), and runsc's own network stack refuses to start on some hosts.
var Runtimes = map[string][]string{
	"runsc": {"--host-uds=open", "--network=none", "--oci-seccomp"},
}

// hostUDSArgs are runsc arguments that let the sandbox dial host Unix
// sockets: any of them in an entry setup did not write is enough.
var hostUDSArgs = []string{"--host-uds=open", "--host-uds=all", "--fsgofer-host-uds", "--fsgofer-host-uds=true"}

// MissingRuntimeArgs returns what the runtime name, registered with args,
// lacks for the container tier's plans to hold: for runsc, host Unix
// socket access (the egress bridge) and --oci-seccomp (without it gVisor
// ignores the plan's seccomp filter).
func MissingRuntimeArgs(name string, args []string) []string {
	if name != "runsc" {
		return nil
	}
	var missing []string
	if !slices.ContainsFunc(args, func(a string) bool { return slices.Contains(hostUDSArgs, a) }) {
		missing = append(missing, "--host-uds=open")
	}
	if !slices.Contains(args, "--oci-seccomp") && !slices.Contains(args, "--oci-seccomp=true") {
		missing = append(missing, "--oci-seccomp")
	}
	return missing
}

// RuntimeManifest records what setup --runtime added to daemon.json, so
// that undo removes exactly that. It is written before the change.
type RuntimeManifest struct {
	Runtime string `json:"runtime"`
	// DaemonJSON is the file changed; CreatedFile says setup made it,
	// CreatedRuntimesKey that setup added its "runtimes" key.
	DaemonJSON         string `json:"daemon_json"`
	CreatedFile        bool   `json:"created_file,omitempty"`
	CreatedRuntimesKey bool   `json:"created_runtimes_key,omitempty"`
	// Entry is the runtimes entry setup added.
	Entry RuntimeEntry `json:"entry"`
}

// RuntimeEntry is one entry of daemon.json's "runtimes".
type RuntimeEntry struct {
	Path        string   `json:"path"`
	RuntimeArgs []string `json:"runtimeArgs,omitempty"`
}

func (s *System) runtimeManifestPath(name string) string {
	return s.path(filepath.Join(ManifestDir, "runtime", name+".json"))
}

// checkRuntimeName refuses a runtime setup does not know.
func checkRuntimeName(name string) error {
	if _, ok := Runtimes[name]; !ok {
		return fmt.Errorf("runtime %q: setup registers only runsc (gVisor)", name)
	}
	return nil
}

// SetupRuntime registers the OCI runtime name (runsc) with the local
// Docker engine the way nvidia-ctk runtime configure does: it adds the
// runtime to the "runtimes" of daemon.json, keeping every other key and
// its order, writes the file atomically, and makes dockerd reload it
// (systemctl reload docker where systemd runs it, else SIGHUP, which
// reloads runtimes without stopping containers). A runtime already
// registered is left as it is.
func (s *System) SetupRuntime(ctx context.Context, name string) (*Report, error) {
	if err := checkRuntimeName(name); err != nil {
		return nil, err
	}
	rep := &Report{}
	exe := s.findTool(name)
	if exe == "" {
		return nil, fmt.Errorf("runtime %s: no %s in /usr/bin, /bin, /usr/sbin, /sbin or /usr/local/bin: install it first (apt-get install %s, or gVisor's release)", name, name, name)
	}
	if err := s.checkOnlyRootReplaces("register runtime "+name, exe, "install it where only root can change it"); err != nil {
		return nil, err
	}
	file := s.path(DaemonJSON)
	data, exists, err := readOptional(file)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", DaemonJSON, err)
	}
	top, err := parseObject(data)
	if err != nil {
		return nil, fmt.Errorf("read %s: %v: %w (fix it by hand; nothing was changed)", DaemonJSON, err, ErrMalformed)
	}
	rts, hasRuntimes, err := top.object("runtimes")
	if err != nil {
		return nil, fmt.Errorf("read %s: %v: %w (fix it by hand; nothing was changed)", DaemonJSON, err, ErrMalformed)
	}
	if raw, ok := rts.get(name); ok {
		var e RuntimeEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("read %s: runtimes.%s: %v: %w", DaemonJSON, name, err, ErrMalformed)
		}
		if missing := MissingRuntimeArgs(name, e.RuntimeArgs); len(missing) > 0 {
			return rep, fmt.Errorf("runtime %s is registered in %s without %s, which sandboxed's plans need (host Unix sockets for the egress bridge, the plan's seccomp filter): add them to its runtimeArgs by hand, or remove the entry and run setup again", name, DaemonJSON, strings.Join(missing, " "))
		}
		rep.note("runtime %s is registered in %s (%s); nothing to change", name, DaemonJSON, e.Path)
		return rep, nil
	}
	m := &RuntimeManifest{Runtime: name, DaemonJSON: DaemonJSON, CreatedFile: !exists, CreatedRuntimesKey: !hasRuntimes,
		Entry: RuntimeEntry{Path: exe, RuntimeArgs: Runtimes[name]}}
	entry, err := json.Marshal(m.Entry)
	if err != nil {
		return nil, err
	}
	rts.set(name, entry)
	top.set("runtimes", bytes.TrimSpace(rts.encode("")))
	if err := s.saveRuntimeManifest(m); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return nil, fmt.Errorf("write %s: %w", DaemonJSON, err)
	}
	if err := writeAtomic(file, top.encode(""), 0o644); err != nil {
		return nil, err
	}
	rep.change("registered runtime %s (%s %s) in %s", name, exe, strings.Join(m.Entry.RuntimeArgs, " "), DaemonJSON)
	return rep, s.reloadDocker(ctx, rep)
}

// UndoRuntime removes what SetupRuntime added for name, as its manifest
// records: the runtimes entry (only while it is still the one setup
// wrote), the "runtimes" key and the file if setup made them and they
// hold nothing else; then dockerd reloads.
func (s *System) UndoRuntime(ctx context.Context, name string) (*Report, error) {
	if err := checkRuntimeName(name); err != nil {
		return nil, err
	}
	rep := &Report{}
	mp := s.runtimeManifestPath(name)
	mdata, exists, err := readOptional(mp)
	if err != nil {
		return nil, fmt.Errorf("read setup manifest %s: %w", mp, err)
	}
	if !exists {
		rep.note("setup registered no runtime %s that is left to undo (no %s)", name, filepath.Join(ManifestDir, "runtime", name+".json"))
		return rep, nil
	}
	var m RuntimeManifest
	if err := json.Unmarshal(mdata, &m); err != nil {
		return nil, fmt.Errorf("read setup manifest %s: %v: %w", mp, err, ErrMalformed)
	}
	file := s.path(m.DaemonJSON)
	data, fexists, err := readOptional(file)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", m.DaemonJSON, err)
	}
	top, err := parseObject(data)
	if err != nil {
		return nil, fmt.Errorf("read %s: %v: %w (fix it by hand; nothing was changed)", m.DaemonJSON, err, ErrMalformed)
	}
	rts, _, err := top.object("runtimes")
	if err != nil {
		return nil, fmt.Errorf("read %s: %v: %w (fix it by hand; nothing was changed)", m.DaemonJSON, err, ErrMalformed)
	}
	changed := false
	if raw, ok := rts.get(name); ok {
		var e RuntimeEntry
		if json.Unmarshal(raw, &e) == nil && e.Path == m.Entry.Path && slices.Equal(e.RuntimeArgs, m.Entry.RuntimeArgs) {
			rts.remove(name)
			changed = true
			rep.change("removed runtime %s from %s", name, m.DaemonJSON)
		} else {
			rep.note("runtime %s in %s was changed since setup registered it: left as it is", name, m.DaemonJSON)
		}
	}
	if changed {
		if len(rts.keys) == 0 && m.CreatedRuntimesKey {
			top.remove("runtimes")
		} else {
			top.set("runtimes", bytes.TrimSpace(rts.encode("")))
		}
		if m.CreatedFile && len(top.keys) == 0 {
			if err := os.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return rep, fmt.Errorf("remove %s: %w", m.DaemonJSON, err)
			}
			rep.change("removed %s (setup made it and it holds nothing else)", m.DaemonJSON)
		} else if fexists {
			if err := writeAtomic(file, top.encode(""), 0o644); err != nil {
				return rep, err
			}
		}
	}
	if err := os.Remove(mp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return rep, fmt.Errorf("remove setup manifest: %w", err)
	}
	for d := filepath.Dir(mp); len(d) > len(s.path(filepath.Dir(ManifestDir))); d = filepath.Dir(d) {
		_ = os.Remove(d) // only empty directories go
	}
	_ = os.Remove(s.path(filepath.Dir(ManifestDir)))
	if !changed {
		return rep, nil
	}
	return rep, s.reloadDocker(ctx, rep)
}

func (s *System) saveRuntimeManifest(m *RuntimeManifest) error {
	p := s.runtimeManifestPath(m.Runtime)
	return writeManifest(p, m)
}

// reloadDocker makes dockerd read daemon.json again: systemctl reload
// where systemd runs docker.service, else SIGHUP to the pid in
// /var/run/docker.pid. A host with no running dockerd gets a note: the
// engine reads the file when it starts.
func (s *System) reloadDocker(ctx context.Context, rep *Report) error {
	if s.systemdRuns() {
		if _, err := s.output(ctx, "systemctl", "is-active", "--quiet", "docker.service"); err == nil {
			if err := s.run(ctx, "systemctl", "reload", "docker.service"); err != nil {
				return fmt.Errorf("reload the Docker engine: %w (run 'systemctl reload docker' by hand)", err)
			}
			rep.change("reloaded the Docker engine (systemctl reload docker.service)")
			return nil
		}
	}
	data, ok, err := readOptional(s.path(dockerPidFile))
	if err != nil || !ok {
		rep.note("no running Docker engine found (%s): it reads %s when it starts", dockerPidFile, DaemonJSON)
		return nil
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		return fmt.Errorf("reload the Docker engine: %s holds %q, not a pid (send SIGHUP to dockerd by hand)", dockerPidFile, bytes.TrimSpace(data))
	}
	if comm, err := os.ReadFile(s.path(fmt.Sprintf("/proc/%d/comm", pid))); err != nil || strings.TrimSpace(string(comm)) != "dockerd" {
		rep.note("no running Docker engine found (%s names pid %d, which is not dockerd): it reads %s when it starts", dockerPidFile, pid, DaemonJSON)
		return nil
	}
	kill := s.Signal
	if kill == nil {
		kill = syscall.Kill
	}
	if err := kill(pid, syscall.SIGHUP); err != nil {
		return fmt.Errorf("reload the Docker engine: SIGHUP to dockerd (pid %d): %w", pid, err)
	}
	rep.change("reloaded the Docker engine (SIGHUP to dockerd, pid %d)", pid)
	return nil
}

// object is a JSON object that keeps its keys in the order read.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

// parseObject reads a JSON object; empty input (or only white space) is
// an empty object. Duplicate keys are an error: which one the engine
// takes is not ours to guess.
func parseObject(data []byte) (*object, error) {
	o := &object{vals: map[string]json.RawMessage{}}
	if len(bytes.TrimSpace(data)) == 0 {
		return o, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("key %q: %w", k, err)
		}
		if _, dup := o.vals[k]; dup {
			return nil, fmt.Errorf("key %q appears twice", k)
		}
		o.keys = append(o.keys, k)
		o.vals[k] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("text after the object")
	}
	return o, nil
}

func (o *object) get(k string) (json.RawMessage, bool) {
	v, ok := o.vals[k]
	return v, ok
}

// object returns the value of k as an object (empty when k is absent).
func (o *object) object(k string) (*object, bool, error) {
	raw, ok := o.vals[k]
	if !ok {
		return &object{vals: map[string]json.RawMessage{}}, false, nil
	}
	v, err := parseObject(raw)
	if err != nil || len(bytes.TrimSpace(raw)) == 0 || bytes.TrimSpace(raw)[0] != '{' {
		return nil, true, fmt.Errorf("%q is not a JSON object", k)
	}
	return v, true, nil
}

func (o *object) set(k string, v json.RawMessage) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) remove(k string) {
	delete(o.vals, k)
	o.keys = slices.DeleteFunc(o.keys, func(x string) bool { return x == k })
}

// encode writes o indented by two spaces per level (prefix before each
// line but the first), keys in their order, ending in a newline at the
// top level.
func (o *object) encode(prefix string) []byte {
	var b bytes.Buffer
	if len(o.keys) == 0 {
		b.WriteString("{}")
	} else {
		b.WriteString("{\n")
		for i, k := range o.keys {
			kb, _ := json.Marshal(k)
			b.WriteString(prefix + "  ")
			b.Write(kb)
			b.WriteString(": ")
			var v bytes.Buffer
			if err := json.Indent(&v, o.vals[k], prefix+"  ", "  "); err != nil {
				b.Write(o.vals[k])
			} else {
				b.Write(v.Bytes())
			}
			if i < len(o.keys)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(prefix + "}")
	}
	if prefix == "" {
		b.WriteByte('\n')
	}
	return b.Bytes()
}
