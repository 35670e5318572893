package hostsetup

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestParseStatus(t *testing.T) {
	for _, tc := range []struct {
		in       string
		seccomp  int
		nnp      bool
		sysAdmin bool
	}{
		{"", 0, false, false},
		{"Name:\tx\nCapEff:\t000001ffffffffff\nNoNewPrivs:\t0\nSeccomp:\t0\n", 0, false, true},
		// Docker's default: no CAP_SYS_ADMIN, a seccomp filter.
		{"CapEff:\t00000000a80425fb\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t1\n", 2, true, false},
		{"CapEff:\t0000000000200000\n", 0, false, true},
		{"CapEff:\tzz\nSeccomp:\tx\n", 0, false, false},
	} {
		s, n, a := parseStatus([]byte(tc.in))
		if s != tc.seccomp || n != tc.nnp || a != tc.sysAdmin {
			t.Errorf("parseStatus(%q) = %d %v %v, want %d %v %v", tc.in, s, n, a, tc.seccomp, tc.nnp, tc.sysAdmin)
		}
	}
}

func TestProbeContainer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		files  map[string]string
		env    map[string]string
		inside bool
		sign   string
	}{
		{name: "host", files: map[string]string{"proc/1/cgroup": "0::/init.scope\n"}},
		{name: "docker", files: map[string]string{".dockerenv": ""}, inside: true, sign: "/.dockerenv exists"},
		{name: "podman", files: map[string]string{"run/.containerenv": ""}, inside: true, sign: "/run/.containerenv"},
		{name: "nspawn", env: map[string]string{"container": "systemd-nspawn"}, inside: true, sign: "container=systemd-nspawn"},
		{name: "kubernetes", env: map[string]string{"KUBERNETES_SERVICE_HOST": "192.0.2.1"}, inside: true, sign: "Kubernetes pod"},
		{name: "cgroup path", files: map[string]string{"proc/1/cgroup": "12:pids:/kubepods/besteffort/pod1/abc\n"}, inside: true, sign: "/kubepods/besteffort"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for f, content := range tc.files {
				mustWrite(t, filepath.Join(root, f), content)
			}
			mustWrite(t, filepath.Join(root, "proc/self/status"), "CapEff:\t00000000a80425fb\nSeccomp:\t2\n")
			s := &System{Root: root, Getenv: func(k string) string { return tc.env[k] }}
			c := s.probeContainer()
			if c.Inside != tc.inside || !strings.Contains(strings.Join(c.Signs, "; "), tc.sign) {
				t.Errorf("probeContainer = %+v", c)
			}
			if c.Seccomp != 2 || c.CapSysAdmin {
				t.Errorf("status not read: %+v", c)
			}
		})
	}
}

func TestClassifyUserNS(t *testing.T) {
	docker := Container{Inside: true, Seccomp: 2}
	for _, tc := range []struct {
		name  string
		err   error
		root  bool
		files map[string]string
		c     Container
		cause string
		fix   string
	}{
		{name: "max 0", err: syscall.ENOSPC, files: map[string]string{"proc/sys/user/max_user_namespaces": "0\n"},
			cause: "user.max_user_namespaces is 0", fix: "sysctl -w user.max_user_namespaces=15000"},
		{name: "limit reached", err: syscall.ENOSPC, files: map[string]string{"proc/sys/user/max_user_namespaces": "10\n"},
			cause: "limit of user namespaces is reached", fix: "user.max_user_namespaces"},
		{name: "debian switch", err: syscall.EPERM, files: map[string]string{"proc/sys/kernel/unprivileged_userns_clone": "0\n"},
			cause: "kernel.unprivileged_userns_clone is 0", fix: "kernel.unprivileged_userns_clone=1"},
		{name: "debian switch does not bind root", err: syscall.EPERM, root: true, files: map[string]string{"proc/sys/kernel/unprivileged_userns_clone": "0\n"},
			cause: "the kernel refused it"},
		{name: "docker seccomp", err: syscall.EPERM, c: docker, cause: "seccomp filter of the enclosing container", fix: "seccomp=unconfined"},
		{name: "seccomp on the host", err: syscall.EPERM, c: Container{Seccomp: 2}, cause: "a seccomp filter on this process"},
		{name: "apparmor", err: syscall.EACCES, files: map[string]string{"proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1\n"},
			cause: "AppArmor restricts", fix: "sudo sandboxed setup --user ada"},
		{name: "no user ns in kernel", err: syscall.EINVAL, cause: "the kernel has no user namespaces", fix: "CONFIG_USER_NS"},
		{name: "too deep", err: syscall.EUSERS, cause: "nested 32 deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for f, content := range tc.files {
				mustWrite(t, filepath.Join(root, f), content)
			}
			s := &System{Root: root, Getenv: func(k string) string {
				if k == "USER" {
					return "ada"
				}
				return ""
			}}
			e := s.classifyUserNS(fmt.Errorf("fork/exec: %w", tc.err), tc.root, tc.c)
			if !strings.Contains(e.Cause, tc.cause) || !strings.Contains(e.Fix, tc.fix) || e.Fix == "" {
				t.Errorf("cause %q fix %q; want %q and %q", e.Cause, e.Fix, tc.cause, tc.fix)
			}
		})
	}
}

// checkOf returns the check of tier and name in cs.
func checkOf(t *testing.T, cs []Check, tier, name string) Check {
	t.Helper()
	for _, c := range cs {
		if c.Tier == tier && c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s check %q in %+v", tier, name, cs)
	return Check{}
}

func TestChecksRootless(t *testing.T) {
	p := &Probe{
		User:        User{Name: "ada", UID: 1000},
		SubUIDs:     []SubIDRange{{"ada", 100000, 65536}},
		IDMapTools:  []string{"/usr/bin/newuidmap", "/usr/bin/newgidmap"},
		Delegation:  Delegation{Version: 1, Detail: "cgroup v1: memory not delegated", Fix: "sudo sandboxed setup --user ada"},
		LandlockABI: 3,
	}
	cs := p.Checks()
	if c := checkOf(t, cs, "all", "mode"); !strings.HasPrefix(c.Detail, "rootless") {
		t.Errorf("mode: %+v", c)
	}
	if c := checkOf(t, cs, "process", "subordinate ids"); c.OK || !strings.Contains(c.Detail, "/etc/subgid") || c.Fix != "sudo sandboxed setup --user ada" {
		t.Errorf("subordinate ids: %+v", c)
	}
	if c := checkOf(t, cs, "process", "cgroup delegation"); c.OK || c.Fix == "" {
		t.Errorf("delegation: %+v", c)
	}
	if c := checkOf(t, cs, "process", "landlock"); !c.OK || strings.Contains(c.Detail, "TCP") {
		t.Errorf("landlock ABI 3: %+v", c)
	}
	if c := checkOf(t, cs, "all", "environment"); !c.OK || !strings.HasPrefix(c.Detail, "not inside") {
		t.Errorf("environment: %+v", c)
	}

	// AppArmor restricts and this binary has no profile.
	p.AppArmorRestricts, p.AppArmorLabel = true, "unconfined"
	if c := checkOf(t, p.Checks(), "process", "user namespaces"); c.OK || !strings.Contains(c.Fix, "setup --user ada") {
		t.Errorf("apparmor: %+v", c)
	}
	p.AppArmorLabel = "sandboxed (unconfined)"
	if c := checkOf(t, p.Checks(), "process", "user namespaces"); !c.OK {
		t.Errorf("apparmor with the profile: %+v", c)
	}
}

// Inside a container the checks say so and what the signs are; what each
// tier can do there is doctor's trial, not an inference from the signs.
func TestChecksInUnprivilegedContainer(t *testing.T) {
	p := &Probe{
		Root:      true,
		User:      User{Name: "root"},
		UserNS:    &UserNSError{Cause: "the seccomp filter of the enclosing container refuses it", Fix: "x"},
		Container: Container{Inside: true, Signs: []string{"/.dockerenv exists"}, Seccomp: 2},
	}
	cs := p.Checks()
	if c := checkOf(t, cs, "all", "environment"); !strings.Contains(c.Detail, "inside a container") || !strings.Contains(c.Detail, "/.dockerenv") || !strings.Contains(c.Detail, "seccomp filter") {
		t.Errorf("environment: %+v", c)
	}
	for _, c := range cs {
		if c.Name == "possible here" {
			t.Errorf("an inferred verdict: %+v", c)
		}
	}
}

func TestContainerFix(t *testing.T) {
	in := Container{Inside: true, Signs: []string{"/.dockerenv exists"}}
	withSocket := in
	withSocket.DockerSocket = "unix:///var/run/docker.sock"
	for _, tc := range []struct {
		name      string
		c         Container
		tier      string
		root      bool
		tiers     []string
		want, not []string
	}{
		{"outside a container", Container{}, "process", true, nil, nil, []string{"docker"}},
		{"process as root", in, "process", true, nil, []string{"--cap-add SYS_ADMIN", "--cap-add NET_ADMIN", "seccomp=unconfined", "/sys/fs/cgroup:rw", "securityContext"}, []string{"--user 0", "landlock"}},
		{"process as a user", in, "process", false, nil, []string{"--user 0", "runAsUser: 0", "subordinate ids"}, nil},
		{"process, landlock built", in, "process", false, []string{"process", "landlock"}, []string{"--isolation landlock"}, nil},
		{"container without a socket", in, "container", true, nil, []string{"/var/run/docker.sock", "root on that host"}, nil},
		{"container with a socket", withSocket, "container", true, nil, nil, []string{"docker.sock"}},
		{"landlock itself", in, "landlock", false, []string{"landlock"}, nil, []string{"--isolation landlock"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.c.Fix(tc.tier, tc.root, tc.tiers)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("fix %q lacks %q", got, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("fix %q has %q", got, n)
				}
			}
			if len(tc.want) == 0 && len(tc.not) > 0 && tc.name == "outside a container" && got != "" {
				t.Errorf("outside a container: %q, want none", got)
			}
		})
	}
}
