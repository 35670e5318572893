package kubernetes

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
	"github.com/sandboxed-dev/sandboxed/isolation/specconv"
	planner "github.com/sandboxed-dev/sandboxed/sandbox"
)

func testPlan(mounts ...specs.Mount) *isolation.Plan {
	const runID = "20261123T220826-8669E25d69a7"
	spec, err := planner.NewSpec(runID, privilege.SameAsUser, planner.WithMemory(64<<20), planner.WithPids(256),
		planner.WithCPUs(0.5), planner.WithTmpfs(32<<20), planner.WithUser(1000, 1000), planner.WithTier(isolation.TierContainer, true))
	if err != nil {
		panic(err)
	}
	spec.Mounts = append(spec.Mounts, mounts...)
	return &isolation.Plan{
		RunID: runID, Tool: "my tool/v2!", Tier: isolation.TierContainer, Backend: isolation.BackendKubernetes,
		Privilege: privilege.SameAsUser, Image: "sandboxed-runner:latest", Runtime: "gvisor",
		Spec:   spec,
		Limits: isolation.Limits{MemoryBytes: 64 << 20, Pids: 256, CPUs: 0.5, TmpfsBytes: 32 << 20, Timeout: 30 * time.Second},
	}
}

func bindMount(src, dst string, ro bool) specs.Mount {
	o := "rw"
	if ro {
		o = "ro"
	}
	return specs.Mount{Destination: dst, Type: "bind", Source: src, Options: []string{"bind", o}}
}

func TestBuildObjectsSecurity(t *testing.T) {
	o, err := buildObjects(testPlan(), &Settings{}, podEnv{})
	if err != nil {
		t.Fatal(err)
	}
	pod := o.pod
	if pod.Name != "sbx-20261123t220826-8669e25d69a7" {
		t.Errorf("name %q", pod.Name)
	}
	if got := pod.Labels[isolation.AnnotationTool]; got != "my-tool-v2" {
		t.Errorf("tool label %q", got)
	}
	spec := pod.Spec
	if *spec.AutomountServiceAccountToken || *spec.EnableServiceLinks || spec.HostNetwork || spec.HostPID || spec.HostIPC {
		t.Errorf("pod reaches the node or the API: %+v", spec)
	}
	if spec.RestartPolicy != corev1.RestartPolicyNever || *spec.RuntimeClassName != "gvisor" || *spec.ActiveDeadlineSeconds != 30+startSlack {
		t.Errorf("restart %s runtime %s deadline %d", spec.RestartPolicy, *spec.RuntimeClassName, *spec.ActiveDeadlineSeconds)
	}
	if psc := spec.SecurityContext; *psc.RunAsUser != sandboxUID || *psc.RunAsGroup != sandboxUID || !*psc.RunAsNonRoot {
		t.Errorf("pod security context %+v: want the sandbox container as %d, non-root", psc, sandboxUID)
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	if *sc.RunAsUser != 1000 || !*sc.RunAsNonRoot || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation ||
		len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("security context %+v", sc)
	}
	if c.Resources.Limits.Memory().Value() != 64<<20 || c.Resources.Requests.Memory().Value() != 64<<20 || c.Resources.Limits.Cpu().MilliValue() != 500 {
		t.Errorf("resources %+v", c.Resources)
	}
	// PID 1 execs the init dialling the socket the bridge listens on, each
	// with the argv sbinit parses (ConnectArgs, BridgeArgs), and nothing a
	// shell would split or expand is in them.
	connect := "exec " + initPath + " " + strings.Join(sbinit.ConnectArgs(controlSocket), " ")
	bridge := "exec " + initPath + " " + strings.Join(sbinit.BridgeArgs(controlSocket), " ")
	for _, a := range append(sbinit.ConnectArgs(controlSocket), sbinit.BridgeArgs(controlSocket)...) {
		if strings.ContainsAny(a, " \t\n'\"$`\\;&|<>*?()[]{}~#") {
			t.Errorf("init argument %q needs quoting in the pod's scripts", a)
		}
	}
	if c.Stdin || c.TTY || !strings.HasSuffix(c.Command[2], connect) {
		t.Errorf("stdin %v tty %v command %v", c.Stdin, c.TTY, c.Command)
	}
	if argv := bridgeCommand(1234); argv[4] != "1234" || !strings.HasSuffix(argv[2], bridge) {
		t.Errorf("bridge command %v", argv)
	}
	var tmp *corev1.Volume
	for i, v := range spec.Volumes {
		for _, m := range c.VolumeMounts {
			if m.MountPath == "/tmp" && m.Name == v.Name {
				tmp = &spec.Volumes[i]
			}
		}
	}
	if tmp == nil || tmp.EmptyDir.Medium != corev1.StorageMediumMemory || tmp.EmptyDir.SizeLimit.Value() != 32<<20 {
		t.Errorf("/tmp volume %+v", tmp)
	}
	np := o.policy.Spec
	if len(np.Ingress) != 0 || len(np.Egress) != 0 || len(np.PolicyTypes) != 2 || np.PodSelector.MatchLabels[isolation.AnnotationRunID] != pod.Labels[isolation.AnnotationRunID] {
		t.Errorf("network policy %+v", np)
	}
	if o.configMap != nil {
		t.Errorf("a ConfigMap without read grants")
	}
}

// Root's same-as-user run is planned as nobody in a pod (the spec says
// what runs); a spec of uid 0 is refused, never run as another uid.
func TestBuildObjectsRootRunsAsNobody(t *testing.T) {
	p := testPlan()
	spec, err := planner.NewSpec(p.RunID, privilege.SameAsUser, planner.WithMemory(64<<20), planner.WithPids(256),
		planner.WithUser(0, 0), planner.WithTier(isolation.TierContainer, true))
	if err != nil {
		t.Fatal(err)
	}
	p.Spec = spec
	o, err := buildObjects(p, &Settings{}, podEnv{})
	if err != nil {
		t.Fatal(err)
	}
	if u := *o.pod.Spec.Containers[0].SecurityContext.RunAsUser; u != nobody || spec.Process.User.UID != nobody {
		t.Errorf("uid %d, spec's %d", u, spec.Process.User.UID)
	}
	p.Spec.Process.User = specs.User{}
	if _, err := buildObjects(p, &Settings{}, podEnv{}); !errors.Is(err, isolation.ErrUnsupported) {
		t.Errorf("a spec of uid 0: %v, want refused", err)
	}
}

func TestBuildObjectsGrants(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"w/a.txt": "A", "w/.git/config": "[core]", "w/.git/HEAD": "ref", "w/secret.env": "S", "r/x.txt": "X", "r/sub/y.txt": "Y", "r/hidden": "H"} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	os.Symlink("/etc/passwd", filepath.Join(dir, "r/link"))
	w, r := filepath.Join(dir, "w"), filepath.Join(dir, "r")
	p := testPlan(
		bindMount(w, "/work", false),
		bindMount(filepath.Join(w, ".git"), "/work/.git", false),
		bindMount(filepath.Join(w, ".git/config"), "/work/.git/config", true),
		specs.Mount{Destination: "/work/secret.env", Type: "bind", Source: "/dev/null", Options: []string{"bind", "ro"}},
		bindMount(r, "/data", true),
		specs.Mount{Destination: "/data/hidden", Type: "bind", Source: "/dev/null", Options: []string{"bind", "ro"}},
	)
	o, err := buildObjects(p, &Settings{}, podEnv{})
	if err != nil {
		t.Fatal(err)
	}
	// Write grants: the outer one skips the nested mounts.
	if len(o.copies) != 2 || o.copies[0].Target != "/work" || strings.Join(o.copies[0].Skip, ",") != ".git,secret.env" || o.copies[1].Target != "/work/.git" || strings.Join(o.copies[1].Skip, ",") != "config" {
		t.Errorf("copies %+v", o.copies)
	}
	// Read grant: its files, without the masked one or the symlink.
	var data *corev1.Volume
	for i, v := range o.pod.Spec.Volumes {
		for _, m := range o.pod.Spec.Containers[0].VolumeMounts {
			if m.MountPath == "/data" && m.Name == v.Name {
				data = &o.pod.Spec.Volumes[i]
				if !m.ReadOnly {
					t.Errorf("/data is writable")
				}
			}
		}
	}
	if data == nil || data.ConfigMap == nil {
		t.Fatalf("/data volume %+v", data)
	}
	var paths []string
	for _, it := range data.ConfigMap.Items {
		paths = append(paths, it.Path)
		if string(o.configMap.BinaryData[it.Key]) == "" {
			t.Errorf("%s is empty", it.Path)
		}
	}
	if strings.Join(paths, ",") != "sub/y.txt,x.txt" {
		t.Errorf("read grant carries %v", paths)
	}
	// The protected file and the mask are read-only single files.
	for _, dst := range []string{"/work/.git/config", "/work/secret.env"} {
		found := false
		for _, m := range o.pod.Spec.Containers[0].VolumeMounts {
			if m.MountPath == dst {
				found = m.ReadOnly && m.SubPath == "f"
			}
		}
		if !found {
			t.Errorf("%s is not a read-only file mount", dst)
		}
	}
}

func TestBuildObjectsRefuses(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644)
	big := filepath.Join(dir, "big")
	os.Mkdir(big, 0o755)
	os.WriteFile(filepath.Join(big, "blob"), make([]byte, MaxReadBytes+1), 0o644)
	os.Mkdir(filepath.Join(dir, "r"), 0o755)
	os.Mkdir(filepath.Join(dir, "r", "w"), 0o755)
	elevated := testPlan()
	elevated.Privilege = privilege.Elevated
	for name, p := range map[string]*isolation.Plan{
		"elevated":          elevated,
		"single-file write": testPlan(bindMount(filepath.Join(dir, "file"), "/f", false)),
		"read too large":    testPlan(bindMount(big, "/big", true)),
		"write inside read": testPlan(bindMount(filepath.Join(dir, "r"), "/r", true), bindMount(filepath.Join(dir, "r", "w"), "/r/w", false)),
		"over the init":     testPlan(bindMount(dir, "/.sandboxed", true)),
	} {
		if _, err := buildObjects(p, &Settings{}, podEnv{}); !errors.Is(err, isolation.ErrUnsupported) {
			t.Errorf("%s: %v, want ErrUnsupported", name, err)
		}
	}
}

func TestLabelValue(t *testing.T) {
	for in, want := range map[string]string{
		"weather":                 "weather",
		"-x/y z.":                 "x-y-z",
		strings.Repeat("a", 70):   strings.Repeat("a", 63),
		"ünïcode tool":            "n-code-tool",
		"20261123T220826-8669e25": "20261123T220826-8669e25",
	} {
		if got := labelValue(in); got != want {
			t.Errorf("labelValue(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReadOnlyDirHasMountPoints(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "out"), 0o755)
	cwd := specs.Mount{Destination: "/work", Type: "tmpfs", Source: "tmpfs", Options: []string{"ro", "size=4k"}}
	o, err := buildObjects(testPlan(cwd, bindMount(filepath.Join(dir, "out"), "/work/out", false)), &Settings{}, podEnv{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range o.pod.Spec.Containers[0].VolumeMounts {
		if m.MountPath != "/work" {
			continue
		}
		if !m.ReadOnly {
			t.Errorf("/work is writable")
		}
		for _, v := range o.pod.Spec.Volumes {
			if v.Name == m.Name && (v.ConfigMap == nil || len(v.ConfigMap.Items) != 1 || v.ConfigMap.Items[0].Path != "out/.mountpoint") {
				t.Errorf("/work's volume has no mount point for out: %+v", v)
			}
		}
	}
	if _, ok := o.configMap.BinaryData[placeholderKey]; !ok {
		t.Errorf("no placeholder in the ConfigMap")
	}
}

// The run's trust bundle (credentials) is written after Check: Check
// plans its place, Start carries its content.
func TestBuildObjectsTrustBundle(t *testing.T) {
	dir := t.TempDir()
	bundle := filepath.Join(dir, "ca-bundle.crt")
	p := testPlan(bindMount(bundle, isolation.SandboxCABundle, true))
	p.Egress = &isolation.Egress{CABundle: bundle}
	if _, err := buildObjects(p, &Settings{}, podEnv{}); err != nil {
		t.Fatalf("before the bundle is written: %v", err)
	}
	if err := os.WriteFile(bundle, []byte("PEM"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := buildObjects(p, &Settings{}, podEnv{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, b := range o.configMap.BinaryData {
		found = found || string(b) == "PEM"
	}
	if !found {
		t.Errorf("the bundle's content is not in the ConfigMap: %v", o.configMap.BinaryData)
	}
	// Any other missing read grant is still an error.
	p.Egress.CABundle = ""
	os.Remove(bundle)
	if _, err := buildObjects(p, &Settings{}, podEnv{}); err == nil {
		t.Error("a missing read grant was accepted")
	}
}

func TestBuildObjectsSeccompProfile(t *testing.T) {
	for _, c := range []struct {
		name    string
		env     podEnv
		typ     corev1.SeccompProfileType
		profile string
	}{
		{"no profile on the nodes", podEnv{}, corev1.SeccompProfileTypeRuntimeDefault, ""},
		{"the container tier's on the nodes", podEnv{seccompProfile: "sandboxed.json"}, corev1.SeccompProfileTypeLocalhost, "sandboxed.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, err := buildObjects(testPlan(), &Settings{}, c.env)
			if err != nil {
				t.Fatal(err)
			}
			for _, sp := range []*corev1.SeccompProfile{o.pod.Spec.SecurityContext.SeccompProfile, o.pod.Spec.Containers[0].SecurityContext.SeccompProfile} {
				got := ""
				if sp.LocalhostProfile != nil {
					got = *sp.LocalhostProfile
				}
				if sp.Type != c.typ || got != c.profile {
					t.Errorf("seccomp profile %s %q; want %s %q", sp.Type, got, c.typ, c.profile)
				}
			}
		})
	}
}

func TestParseFacts(t *testing.T) {
	f := parseFacts(map[string]string{factsSeccompProfile: " sandboxed.json\n", factsGVisor: "gvisor  gvisor-nonet"})
	if f.seccompProfile != "sandboxed.json" || !f.gvisor["gvisor"] || !f.gvisor["gvisor-nonet"] || len(f.gvisor) != 2 {
		t.Errorf("facts %+v", f)
	}
	if f := parseFacts(nil); f.seccompProfile != "" || len(f.gvisor) != 0 {
		t.Errorf("no facts: %+v", f)
	}
	for h, want := range map[string]bool{"runsc": true, "runsc-nonet": true, "runc": false, "kata": false, "runscx": false} {
		if gVisorHandler(h) != want {
			t.Errorf("gVisorHandler(%q) = %v", h, !want)
		}
	}
}

// TestInsideRead checks what a mount inside a read grant (a read-only
// ConfigMap volume) may be.
func TestInsideRead(t *testing.T) {
	for _, tc := range []struct {
		name    string
		m       specs.Mount
		refused string // "" when the path is left out of the grant's files
	}{
		{"a masked file", bindMount("/dev/null", "/data/.env", true), ""},
		{"a read-only view of the same tree", bindMount("/srv/data/sub", "/data/sub", true), ""},
		{"a read-only mount of another tree", bindMount("/etc/other", "/data/sub", true), "read-only mount of /etc/other"},
		{"a write grant", bindMount("/srv/data/out", "/data/out", false), "write grant /data/out"},
		{"a tmpfs (a masked directory)", specs.Mount{Destination: "/data/secret", Type: "tmpfs"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			par := &planned{dst: "/data", host: "/srv/data", kind: kindRead, items: []corev1.KeyToPath{
				{Key: "a", Path: ".env"}, {Key: "b", Path: "sub/x"}, {Key: "c", Path: "out/y"}, {Key: "d", Path: "secret/z"}, {Key: "e", Path: "keep"},
			}}
			dst := filepath.Clean(tc.m.Destination)
			err := insideRead(par, tc.m, dst, tc.m.Type == "bind", hasOpt(tc.m.Options, "ro"))
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Errorf("insideRead = %v, want refused with %q", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel("/data", dst)
			for _, it := range par.items {
				if it.Path == rel || strings.HasPrefix(it.Path, rel+"/") {
					t.Errorf("%s is still among the grant's files", it.Path)
				}
			}
			if len(par.items) != 4 {
				t.Errorf("items = %v, want the other 4 kept", par.items)
			}
		})
	}
}

// TestTrustBundlePlaceholderIsAFile: the trust bundle is a single file
// whether or not it is written yet, so the mount point a read-only
// directory above it gets is a file in both.
func TestTrustBundlePlaceholderIsAFile(t *testing.T) {
	dir := t.TempDir()
	bundle := filepath.Join(dir, "ca.crt")
	cwd := specs.Mount{Destination: "/work", Type: "tmpfs", Source: "tmpfs", Options: []string{"ro", "size=4k"}}
	p := testPlan(cwd, bindMount(bundle, "/work/ca.crt", true))
	p.Egress = &isolation.Egress{CABundle: bundle}
	for _, written := range []bool{false, true} {
		if written {
			if err := os.WriteFile(bundle, []byte("PEM"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		mp, err := planMounts(p, &Settings{}, "cm")
		if err != nil {
			t.Fatal(err)
		}
		cm := mp.volumes[1].ConfigMap
		if cm == nil || len(cm.Items) != 1 || cm.Items[0].Path != "ca.crt" {
			t.Errorf("written %v: /work's volume is %+v, want a ConfigMap with the file ca.crt", written, mp.volumes[1])
		}
	}
}

// Under gVisor the pod's memory limit holds the Sentry's above the
// tool's; elsewhere it is the tool's.
func TestPodMemoryHoldsGVisorOverhead(t *testing.T) {
	for _, gv := range []bool{false, true} {
		o, err := buildObjects(testPlan(), &Settings{}, podEnv{gvisor: gv})
		if err != nil {
			t.Fatal(err)
		}
		want := int64(64 << 20)
		if gv {
			want += specconv.GVisorMemoryOverhead
		}
		got := o.pod.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]
		if got.Value() != want {
			t.Errorf("gvisor %v: pod memory %d, want %d", gv, got.Value(), want)
		}
	}
}

// A single read-only file inside a read-only directory (a grant of one
// file in the working directory) is an item of the directory's volume,
// with its content and mode, not a file mounted over a placeholder, which
// gVisor refuses to start.
func TestReadOnlyDirHoldsSingleFiles(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "out"), 0o755)
	os.WriteFile(filepath.Join(dir, ".env"), []byte("ENV"), 0o600)
	cwd := specs.Mount{Destination: "/work", Type: "tmpfs", Source: "tmpfs", Options: []string{"ro", "size=4k"}}
	o, err := buildObjects(testPlan(cwd, bindMount(filepath.Join(dir, ".env"), "/work/data/.env", true),
		bindMount(filepath.Join(dir, "out"), "/work/out", false)), &Settings{}, podEnv{})
	if err != nil {
		t.Fatal(err)
	}
	var work *corev1.Volume
	for _, m := range o.pod.Spec.Containers[0].VolumeMounts {
		if strings.HasPrefix(m.MountPath, "/work/data") || m.SubPath != "" {
			t.Errorf("a file mount is left: %+v", m)
		}
		for i, v := range o.pod.Spec.Volumes {
			if v.Name == m.Name && m.MountPath == "/work" {
				work = &o.pod.Spec.Volumes[i]
			}
		}
	}
	if work == nil || work.ConfigMap == nil {
		t.Fatalf("/work's volume %+v", work)
	}
	got := map[string]string{}
	for _, it := range work.ConfigMap.Items {
		got[it.Path] = string(o.configMap.BinaryData[it.Key])
		if it.Path == "data/.env" && (it.Mode == nil || *it.Mode != 0o444) {
			t.Errorf("data/.env has mode %v", it.Mode)
		}
	}
	if len(got) != 2 || got["data/.env"] != "ENV" || got["out/.mountpoint"] != "" {
		t.Errorf("/work's items %v", got)
	}
	if len(o.pod.Spec.Volumes) != len(o.pod.Spec.Containers[0].VolumeMounts) {
		t.Errorf("%d volumes for %d mounts", len(o.pod.Spec.Volumes), len(o.pod.Spec.Containers[0].VolumeMounts))
	}
}
