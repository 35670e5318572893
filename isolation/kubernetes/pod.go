package kubernetes

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
	"github.com/sandboxed-dev/sandboxed/isolation/specconv"
)

const (
	// containerName is the one container of a run's pod.
	containerName = "sandbox"
	// initDir is where the init binary and the egress socket live in the
	// pod (a memory-backed emptyDir over the image's /.sandboxed).
	initDir  = "/.sandboxed"
	initPath = initDir + "/init"
	// MaxReadBytes caps the files of the read grants of one run: they
	// travel in one ConfigMap, which the API server keeps under 1 MiB.
	MaxReadBytes = 900 << 10
	// DefaultMaxWriteBytes caps each write grant's files, both ways.
	DefaultMaxWriteBytes = 256 << 20
	// nobody is the pod's uid when the plan's is root: a pod never runs
	// as root.
	nobody = privilege.NobodyID
	// sandboxUID is the uid (and gid) of the pod's sandbox container (the
	// pause process): non-root, as the usual pause image's own, and
	// apart from the run's, so under gVisor its tasks do not count
	// against the run's process limit (RLIMIT_NPROC counts per uid).
	sandboxUID = 65535
	// startSlack is added to the run's timeout for activeDeadlineSeconds,
	// the cluster's backstop should sandboxed vanish: the pod's start,
	// the copies and teardown.
	startSlack = 120
)

// podObjects are the API objects of one run and the file copies its
// write grants need.
type podObjects struct {
	pod       *corev1.Pod
	policy    *networkingv1.NetworkPolicy
	configMap *corev1.ConfigMap // nil when no file travels read-only
	// copies are the write grants: their files go in before the first
	// command and come back after the last.
	copies []grantCopy
}

// grantCopy is one write grant carried through the init's protocol.
type grantCopy struct {
	Host   string   // directory on the host (resolved)
	Target string   // the same directory in the pod
	Skip   []string // relative paths that are other mounts or masked
}

// skeleton destinations are the runtime's own (proc, dev, sys); the pod
// gets the container runtime's, which mask and protect the same paths.
var skeleton = map[string]bool{
	"/proc": true, "/dev": true, "/dev/pts": true, "/dev/shm": true, "/dev/mqueue": true,
	"/sys": true, "/sys/fs/cgroup": true,
}

// objectName is the name of every object of a run: DNS-1123, from the run id.
func objectName(runID string) string {
	return "sbx-" + strings.ToLower(runID)
}

var labelUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// labelValue makes s a valid label value: at most 63 of [A-Za-z0-9._-],
// starting and ending alphanumeric.
func labelValue(s string) string {
	s = labelUnsafe.ReplaceAllString(s, "-")
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.Trim(s, "-._")
}

// hostLabel names the host whose sandboxed made an object: gc reaps only
// its own host's runs, since only this host knows which of them are live.
const hostLabel = "dev.sandboxed.host"

// thisHost is the host label value of this machine.
func thisHost() string {
	h, err := os.Hostname()
	if err != nil || labelValue(h) == "" {
		return "unknown"
	}
	return labelValue(h)
}

func runLabels(p *isolation.Plan) map[string]string {
	return map[string]string{
		isolation.AnnotationRunID: labelValue(p.RunID),
		isolation.AnnotationTool:  labelValue(p.Tool),
		hostLabel:                 thisHost(),
	}
}

// podUID is the uid the pod runs as: the plan's, never root.
func podUID(p *isolation.Plan) (int64, int64) {
	uid, gid := int64(nobody), int64(nobody)
	if p.Spec != nil && p.Spec.Process != nil {
		if u := p.Spec.Process.User; u.UID != 0 {
			uid, gid = int64(u.UID), int64(u.GID)
		}
	}
	if p.Privilege == privilege.Reduced {
		uid, gid = nobody, nobody
	}
	return uid, gid
}

// buildObjects turns a plan into the API objects of its run. It reads the
// read grants' files (they travel in the ConfigMap) and nothing else of
// the host. It refuses, wrapping isolation.ErrUnsupported, what a pod
// cannot honour.
func buildObjects(p *isolation.Plan, s *Settings, env podEnv) (*podObjects, error) {
	if p.Privilege == privilege.Elevated {
		return nil, unsupported("an elevated run (root inside a user namespace) on Kubernetes",
			"run it on the local backend (--backend local): a pod never runs as root")
	}
	if p.Spec == nil || p.Spec.Process == nil {
		return nil, fmt.Errorf("plan %s has no spec: %w", p.RunID, isolation.ErrUnsupported)
	}
	conv, err := convertSpec(p)
	if err != nil {
		return nil, err
	}
	name := objectName(p.RunID)
	labels := runLabels(p)
	uid, gid := podUID(p)
	o := &podObjects{}
	mv, err := planMounts(p, s, name)
	if err != nil {
		return nil, err
	}
	o.copies = mv.copies
	if len(mv.data) > 0 {
		o.configMap = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			BinaryData: mv.data,
			Immutable:  ptr(true),
		}
	}

	res := corev1.ResourceList{}
	mem := conv.resources.MemoryBytes
	if env.gvisor {
		mem += specconv.GVisorMemoryOverhead // the tool's limit is the tool's
	}
	res[corev1.ResourceMemory] = *resource.NewQuantity(mem, resource.BinarySI)
	if conv.resources.CPUQuota > 0 {
		res[corev1.ResourceCPU] = *resource.NewMilliQuantity(conv.resources.MilliCPUs(), resource.DecimalSI)
	}
	deadline := int64(p.Limits.Timeout.Seconds()) + startSlack
	volumes := append([]corev1.Volume{{
		Name:         "init",
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(64<<20, resource.BinarySI)}},
	}}, mv.volumes...)
	mounts := append([]corev1.VolumeMount{{Name: "init", MountPath: initDir}}, mv.mounts...)

	vars := []corev1.EnvVar{{Name: "PATH", Value: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}}
	o.pod = &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr(false),
			EnableServiceLinks:            ptr(false),
			TerminationGracePeriodSeconds: ptr(int64(1)),
			ActiveDeadlineSeconds:         &deadline,
			HostNetwork:                   false,
			HostPID:                       false,
			HostIPC:                       false,
			Hostname:                      cmp.Or(p.Spec.Hostname, "sandbox"),
			// No resolver: names are the proxy's to resolve.
			DNSPolicy: corev1.DNSNone,
			DNSConfig: &corev1.PodDNSConfig{Nameservers: []string{"127.0.0.1"}},
			SecurityContext: &corev1.PodSecurityContext{
				// The pod's sandbox (pause) container; the run's
				// container says its own uid below.
				RunAsUser:      ptr(int64(sandboxUID)),
				RunAsGroup:     ptr(int64(sandboxUID)),
				RunAsNonRoot:   ptr(true),
				SeccompProfile: env.seccomp(),
			},
			Volumes: volumes,
			Containers: []corev1.Container{{
				Name:            containerName,
				Image:           p.Image,
				ImagePullPolicy: corev1.PullPolicy(s.pullPolicy()),
				// PID 1 waits for the init to arrive (bridgeCommand)
				// and becomes it.
				Command:      []string{"/bin/sh", "-c", pid1Script},
				Env:          vars,
				VolumeMounts: mounts,
				Resources:    corev1.ResourceRequirements{Limits: res, Requests: res},
				SecurityContext: &corev1.SecurityContext{
					RunAsUser:                &uid,
					RunAsGroup:               &gid,
					RunAsNonRoot:             ptr(true),
					ReadOnlyRootFilesystem:   ptr(true),
					AllowPrivilegeEscalation: ptr(false),
					Privileged:               ptr(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile:           env.seccomp(),
				},
			}},
		},
	}
	if p.Runtime != "" {
		o.pod.Spec.RuntimeClassName = ptr(p.Runtime)
	}
	// No ingress or egress rule: nothing in, nothing out.
	o.policy = &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{isolation.AnnotationRunID: labels[isolation.AnnotationRunID]}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
	return o, nil
}

// seccomp is the pod's seccomp profile: the Localhost profile the cluster
// has (the container tier's, which names the syscalls gVisor knows by
// other names both ways), else the runtime's default. Either way the init
// loads the plan's own filter below it.
func (e podEnv) seccomp() *corev1.SeccompProfile {
	if e.seccompProfile != "" {
		return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr(e.seccompProfile)}
	}
	return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
}

// The init reaches the pod through an exec session (a container's attach
// stream does not carry stdin under every runtime: gVisor's shim drops
// it). The session's shell reads the init binary from its stdin into the
// memory-backed init directory and becomes the bridge (sbinit.BridgeArgs),
// which listens on controlSocket; the container's PID 1 waits for that
// socket and becomes the init, dialling it (sbinit.ConnectArgs). head
// reads no further than it is told, and the host sends nothing more until
// the bridge said hello. The paths are constants of this package with no
// character a shell would read, so the argv is joined unquoted.
const controlSocket = initDir + "/control.sock"

var (
	pid1Script   = `while [ ! -S ` + controlSocket + ` ]; do sleep 0.02; done; exec ` + initPath + ` ` + strings.Join(sbinit.ConnectArgs(controlSocket), " ")
	bridgeScript = `set -e; head -c "$1" > ` + initPath + `.part; chmod 0500 ` + initPath + `.part; mv ` + initPath + `.part ` + initPath + `; exec ` + initPath + ` ` + strings.Join(sbinit.BridgeArgs(controlSocket), " ")
)

// bridgeCommand is the exec session's argv for an init binary of size bytes.
func bridgeCommand(size int64) []string {
	return []string{"/bin/sh", "-c", bridgeScript, "sh", strconv.FormatInt(size, 10)}
}

func ptr[T any](v T) *T { return &v }

func unsupported(what, fix string) error {
	return &isolation.UnsupportedError{What: what, Fix: fix}
}

// mountPlan is the pod's side of the spec's mounts.
type mountPlan struct {
	volumes []corev1.Volume
	mounts  []corev1.VolumeMount
	data    map[string][]byte // ConfigMap binary data
	copies  []grantCopy
	bytes   int64 // read-only bytes in data
}

// planned is one spec mount as the pod has it.
type planned struct {
	dst   string
	kind  int    // one of the kinds below
	host  string // bind source
	items []corev1.KeyToPath
	skip  []string // (write grants) relative paths not to copy
	vol   string
	// ro and file say a read-only volume, and a single file mounted
	// (subPath); volIdx is its volume in mountPlan.volumes (-1: none yet).
	ro, file bool
	volIdx   int
	parent   *planned
	// key and mode are a single file's in the ConfigMap; inlined says
	// the file is an item of its parent's placeholder volume instead of
	// a mount of its own (placeholders).
	key     string
	mode    int32
	inlined bool
}

const (
	kindTmpfs = iota // an emptyDir
	kindRead         // a ConfigMap directory or file
	kindWrite        // an emptyDir carried both ways
)

// planMounts maps the spec's mounts on volumes. Nested mounts stay nested
// (the runtime makes their mount points in the parent volume), except
// inside a read-only ConfigMap volume, where nothing can be made: there a
// mask is a file left out, a read-only bind of the same tree is already
// read-only, and a write grant is refused.
func planMounts(p *isolation.Plan, s *Settings, name string) (*mountPlan, error) {
	pl := &mountPlanner{mp: &mountPlan{data: map[string][]byte{}}, p: p, s: s, name: name}
	for _, m := range p.Spec.Mounts {
		if err := pl.add(m); err != nil {
			return nil, err
		}
	}
	pl.placeholders()
	pl.finish()
	if len(pl.mp.data) == 0 {
		pl.mp.data = nil
	}
	return pl.mp, nil
}

// mountPlanner builds a mountPlan, one spec mount at a time.
type mountPlanner struct {
	mp   *mountPlan
	done []*planned // the mounts planned so far, in the spec's order
	p    *isolation.Plan
	s    *Settings
	name string // the run's ConfigMap
}

// parent is the innermost mount planned so far that holds dst.
func (pl *mountPlanner) parent(dst string) *planned {
	var best *planned
	for _, q := range pl.done {
		if strings.HasPrefix(dst, q.dst+"/") && (best == nil || len(q.dst) > len(best.dst)) {
			best = q
		}
	}
	return best
}

// add plans the spec mount m.
func (pl *mountPlanner) add(m specs.Mount) error {
	dst := filepath.Clean(m.Destination)
	size := int64(0)
	if isolation.IsSkeleton(dst) {
		// The runtime builds /proc and /dev as its own; /tmp is an
		// emptyDir of the spec's size. A spec that says otherwise of
		// them is refused.
		var err error
		if size, err = isolation.CheckSkeleton(m); err != nil {
			return err
		}
		if dst != "/tmp" {
			return nil
		}
	} else if skeleton[dst] {
		return unsupported(fmt.Sprintf("a mount at %s, which the runtime makes itself", dst), "plan the run with sandbox.Plan")
	} else if err := isolation.CheckMountOptions(m); err != nil {
		return err
	}
	if !filepath.IsAbs(dst) || dst == "/" || dst == initDir || strings.HasPrefix(dst, initDir+"/") {
		return unsupported(fmt.Sprintf("a mount at %s", m.Destination), "grant another path")
	}
	bind := m.Type == "bind" || hasOpt(m.Options, "bind") || hasOpt(m.Options, "rbind")
	ro := hasOpt(m.Options, "ro")
	par := pl.parent(dst)
	if par != nil && par.kind == kindRead {
		return insideRead(par, m, dst, bind, ro)
	}
	q := &planned{dst: dst, vol: fmt.Sprintf("m%d", len(pl.done)), parent: par, ro: ro, volIdx: len(pl.mp.volumes)}
	mp := pl.mp
	switch {
	case !bind && m.Type == "tmpfs":
		q.kind = kindTmpfs
		if dst != "/tmp" {
			size = tmpfsSize(m.Options)
		}
		ed := &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}
		if size > 0 {
			ed.SizeLimit = resource.NewQuantity(size, resource.BinarySI)
		}
		mp.volumes = append(mp.volumes, corev1.Volume{Name: q.vol, VolumeSource: corev1.VolumeSource{EmptyDir: ed}})
		mp.mounts = append(mp.mounts, corev1.VolumeMount{Name: q.vol, MountPath: dst, ReadOnly: ro})
	case bind && m.Source == "/dev/null":
		// A masked file: an empty, read-only file.
		q.kind = kindRead
		pl.emptyFile(q)
	case bind && ro:
		q.kind, q.host = kindRead, m.Source
		if err := pl.addRead(q); err != nil {
			return err
		}
	case bind:
		q.kind, q.host = kindWrite, m.Source
		fi, err := os.Stat(m.Source)
		if err != nil {
			return fmt.Errorf("write grant %s: %w", m.Source, err)
		}
		if !fi.IsDir() {
			return unsupported(fmt.Sprintf("the write grant of the single file %s on Kubernetes", m.Source),
				"grant its directory for writing, or run with --backend local")
		}
		ed := &corev1.EmptyDirVolumeSource{SizeLimit: resource.NewQuantity(pl.s.maxWriteBytes(), resource.BinarySI)}
		mp.volumes = append(mp.volumes, corev1.Volume{Name: q.vol, VolumeSource: corev1.VolumeSource{EmptyDir: ed}})
		mp.mounts = append(mp.mounts, corev1.VolumeMount{Name: q.vol, MountPath: dst})
	default:
		return unsupported(fmt.Sprintf("a %s mount at %s on Kubernetes", m.Type, dst), "run with --backend local")
	}
	if par != nil && par.kind == kindWrite {
		rel, _ := filepath.Rel(par.dst, dst)
		par.skip = append(par.skip, rel)
	}
	pl.done = append(pl.done, q)
	return nil
}

// insideRead plans the mount m at dst inside the read grant par, a
// read-only ConfigMap volume where nothing can be made: a mask or a
// read-only view of the same tree leaves the path out of par's files; any
// other mount is refused.
func insideRead(par *planned, m specs.Mount, dst string, bind, ro bool) error {
	rel, _ := filepath.Rel(par.dst, dst)
	switch {
	case bind && !ro && m.Source != "/dev/null":
		return unsupported(fmt.Sprintf("the write grant %s inside the read grant %s on Kubernetes", dst, par.dst),
			"grant the outer path for writing too, or run with --backend local")
	case bind && m.Source != "/dev/null" && m.Source != filepath.Join(par.host, rel):
		return unsupported(fmt.Sprintf("a read-only mount of %s over %s inside the read grant %s", m.Source, dst, par.dst),
			"run with --backend local")
	}
	par.items = dropItems(par.items, rel)
	return nil
}

// emptyFile mounts an empty, read-only file at q.
func (pl *mountPlanner) emptyFile(q *planned) {
	key := fmt.Sprintf("f%d", len(pl.mp.data))
	pl.mp.data[key] = []byte{}
	pl.fileVolume(q, key, 0o444)
}

// fileVolume mounts the ConfigMap's key as the single file q, with mode.
func (pl *mountPlanner) fileVolume(q *planned, key string, mode int32) {
	pl.mp.volumes = append(pl.mp.volumes, configMapVolume(q.vol, pl.name, []corev1.KeyToPath{{Key: key, Path: "f", Mode: ptr(mode)}}))
	pl.mp.mounts = append(pl.mp.mounts, corev1.VolumeMount{Name: q.vol, MountPath: q.dst, SubPath: "f", ReadOnly: true})
	q.file, q.key, q.mode = true, key, mode
}

// addRead plans the read grant q: a file becomes a file of the ConfigMap;
// a directory, its files (its volume is made by finish, once nested masks
// took their files out).
func (pl *mountPlanner) addRead(q *planned) error {
	fi, err := os.Stat(q.host)
	if err != nil && errors.Is(err, fs.ErrNotExist) && pl.p.Egress != nil && q.host == pl.p.Egress.CABundle {
		// The run's trust bundle is written when the run starts, after
		// Check: Check sees its place, Start its content.
		pl.emptyFile(q)
		return nil
	}
	if err != nil {
		return fmt.Errorf("read grant %s: %w", q.host, err)
	}
	if !fi.IsDir() {
		key, err := pl.mp.add(q.host, fi)
		if err != nil {
			return err
		}
		pl.fileVolume(q, key, fileMode(fi))
		return nil
	}
	q.items, err = pl.mp.addTree(q.host)
	return err
}

// placeholders turns a read-only empty directory (a working directory no
// grant covers) with mounts inside into a ConfigMap volume that has their
// mount points, as empty placeholders the mounts then cover: the runtime
// cannot make them in a read-only volume. A single read-only file inside
// (a read grant of one file, a masked file) is an item of that volume
// itself, with its content, not a mount over a placeholder: a file mounted
// (subPath) over a file of a ConfigMap volume, whose names are symlinks
// into its data, fails to start under gVisor (runsc 2022-12: "reading
// mounts file: error unmarshaling mounts").
func (pl *mountPlanner) placeholders() {
	for _, q := range pl.done {
		if q.kind != kindTmpfs || !q.ro {
			continue
		}
		var items []corev1.KeyToPath
		for _, c := range pl.done {
			if c.parent != q {
				continue
			}
			rel, _ := filepath.Rel(q.dst, c.dst)
			rel = filepath.ToSlash(rel)
			if c.file {
				items = append(items, corev1.KeyToPath{Key: c.key, Path: rel, Mode: ptr(c.mode)})
				c.inlined = true
				continue
			}
			items = append(items, corev1.KeyToPath{Key: placeholderKey, Path: rel + "/.mountpoint", Mode: ptr(int32(0o444))})
			pl.mp.data[placeholderKey] = []byte{}
		}
		if len(items) > 0 {
			pl.mp.volumes[q.volIdx] = configMapVolume(q.vol, pl.name, items)
		}
	}
	inlined := map[string]bool{}
	for _, c := range pl.done {
		if c.inlined {
			inlined[c.vol] = true
		}
	}
	pl.mp.volumes = slices.DeleteFunc(pl.mp.volumes, func(v corev1.Volume) bool { return inlined[v.Name] })
	pl.mp.mounts = slices.DeleteFunc(pl.mp.mounts, func(m corev1.VolumeMount) bool { return inlined[m.Name] })
}

// finish makes the volumes of read grants of directories, and the copies
// of write grants.
func (pl *mountPlanner) finish() {
	mp := pl.mp
	for _, q := range pl.done {
		switch {
		case q.kind == kindRead && q.items != nil:
			if len(q.items) == 0 {
				// An empty directory: ConfigMap items must not be
				// empty (that would project every key).
				mp.volumes = append(mp.volumes, corev1.Volume{Name: q.vol, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: resource.NewQuantity(4096, resource.BinarySI)}}})
			} else {
				mp.volumes = append(mp.volumes, configMapVolume(q.vol, pl.name, q.items))
			}
			mp.mounts = append(mp.mounts, corev1.VolumeMount{Name: q.vol, MountPath: q.dst, ReadOnly: true})
		case q.kind == kindWrite:
			sort.Strings(q.skip)
			mp.copies = append(mp.copies, grantCopy{Host: q.host, Target: q.dst, Skip: q.skip})
		}
	}
}

// placeholderKey is the ConfigMap's empty file that stands in for mount
// points.
const placeholderKey = "mountpoint"

func configMapVolume(vol, name string, items []corev1.KeyToPath) corev1.Volume {
	return corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: name},
		Items:                items,
		DefaultMode:          ptr(int32(0o444)),
	}}}
}

// fileMode is a read-only file's mode in the pod: readable by all, and
// executable where it was.
func fileMode(fi fs.FileInfo) int32 {
	return int32(0o444 | fi.Mode().Perm()&0o111)
}

// add puts the regular file at path into the ConfigMap and returns its key.
func (mp *mountPlan) add(path string, fi fs.FileInfo) (string, error) {
	if !fi.Mode().IsRegular() {
		return "", unsupported(fmt.Sprintf("the read grant %s (not a regular file or directory) on Kubernetes", path), "grant a regular file or a directory")
	}
	mp.bytes += fi.Size()
	if mp.bytes > MaxReadBytes {
		return "", unsupported(fmt.Sprintf("read grants of more than %d KiB on Kubernetes (they travel in one ConfigMap)", MaxReadBytes>>10),
			"grant narrower paths, or run with --backend local")
	}
	b, err := readNoFollow(path)
	if err != nil {
		return "", fmt.Errorf("read grant %s: %w", path, err)
	}
	key := fmt.Sprintf("f%d", len(mp.data))
	mp.data[key] = b
	return key, nil
}

// addTree puts every regular file under dir into the ConfigMap. Symlinks
// and special files are left out: a read grant carries the tree's own
// files, never what a link points at.
func (mp *mountPlan) addTree(dir string) ([]corev1.KeyToPath, error) {
	items := []corev1.KeyToPath{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		key, err := mp.add(path, fi)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		items = append(items, corev1.KeyToPath{Key: key, Path: filepath.ToSlash(rel), Mode: ptr(fileMode(fi))})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return items, nil
}

// dropItems leaves rel, and what is under it, out of items.
func dropItems(items []corev1.KeyToPath, rel string) []corev1.KeyToPath {
	rel = filepath.ToSlash(rel)
	out := items[:0]
	for _, it := range items {
		if it.Path != rel && !strings.HasPrefix(it.Path, rel+"/") {
			out = append(out, it)
		}
	}
	return out
}

func tmpfsSize(opts []string) int64 {
	for _, o := range opts {
		if v, ok := strings.CutPrefix(o, "size="); ok {
			v = strings.TrimSuffix(v, "k")
			n, err := strconv.ParseInt(v, 10, 64)
			if err == nil && strings.HasSuffix(strings.TrimPrefix(o, "size="), "k") {
				n <<= 10
			}
			if err == nil {
				return n
			}
		}
	}
	return 0
}

func hasOpt(opts []string, o string) bool {
	for _, x := range opts {
		if x == o {
			return true
		}
	}
	return false
}

// readNoFollow reads the regular file at path, refusing a symlink.
func readNoFollow(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxReadBytes+1))
}
