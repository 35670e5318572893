package hostsetup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func runtimeHost(t *testing.T, daemon string) (*fakeHost, *[]int) {
	t.Helper()
	h := newFakeHost(t)
	mustWrite(t, filepath.Join(h.Root, "usr/bin/runsc"), "runsc")
	for _, p := range []string{"usr/bin/runsc", "usr/bin", "usr"} {
		if err := os.Chmod(filepath.Join(h.Root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if daemon != "" {
		mustWrite(t, filepath.Join(h.Root, DaemonJSON), daemon)
	}
	mustWrite(t, filepath.Join(h.Root, dockerPidFile), "4242\n")
	mustWrite(t, filepath.Join(h.Root, "proc/4242/comm"), "dockerd\n")
	var hups []int
	h.Signal = func(pid int, sig syscall.Signal) error {
		if sig != syscall.SIGHUP {
			t.Errorf("signal %v, want SIGHUP", sig)
		}
		hups = append(hups, pid)
		return nil
	}
	return h, &hups
}

func TestSetupRuntimeRoundTrip(t *testing.T) {
	ctx := context.Background()
	orig := `{"data-root": "/var/lib/docker", "storage-driver": "fuse-overlayfs", "log-opts": {"max-size": "10m"}}`
	h, hups := runtimeHost(t, orig)
	rep, err := h.SetupRuntime(ctx, "runsc")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Changes) != 2 || len(*hups) != 1 || (*hups)[0] != 4242 {
		t.Fatalf("changes %q, SIGHUPs %v", rep.Changes, *hups)
	}
	got := readString(t, filepath.Join(h.Root, DaemonJSON))
	want := `{
  "data-root": "/var/lib/docker",
  "storage-driver": "fuse-overlayfs",
  "log-opts": {
    "max-size": "10m"
  },
  "runtimes": {
    "runsc": {
      "path": "/usr/bin/runsc",
      "runtimeArgs": [
        "--host-uds=open",
        "--network=none",
        "--oci-seccomp"
      ]
    }
  }
}
`
	if got != want {
		t.Fatalf("daemon.json:\n%s\nwant\n%s", got, want)
	}
	// A second run changes nothing and does not reload.
	rep, err = h.SetupRuntime(ctx, "runsc")
	if err != nil || len(rep.Changes) != 0 || len(*hups) != 1 {
		t.Fatalf("second setup: %v, changes %q, SIGHUPs %v", err, rep.Changes, *hups)
	}
	if _, err := h.UndoRuntime(ctx, "runsc"); err != nil {
		t.Fatal(err)
	}
	got = readString(t, filepath.Join(h.Root, DaemonJSON))
	if !strings.Contains(got, `"storage-driver": "fuse-overlayfs"`) || strings.Contains(got, "runtimes") || len(*hups) != 2 {
		t.Fatalf("after undo (%d SIGHUPs):\n%s", len(*hups), got)
	}
	if _, err := os.Stat(filepath.Join(h.Root, ManifestDir)); !os.IsNotExist(err) {
		t.Fatalf("manifest directory left: %v", err)
	}
	rep, err = h.UndoRuntime(ctx, "runsc")
	if err != nil || len(rep.Changes) != 0 {
		t.Fatalf("second undo: %v %q", err, rep.Changes)
	}
}

func TestSetupRuntimeKeepsOtherRuntimes(t *testing.T) {
	ctx := context.Background()
	h, _ := runtimeHost(t, `{"runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}}`)
	if _, err := h.SetupRuntime(ctx, "runsc"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.UndoRuntime(ctx, "runsc"); err != nil {
		t.Fatal(err)
	}
	got := readString(t, filepath.Join(h.Root, DaemonJSON))
	want := "{\n  \"runtimes\": {\n    \"nvidia\": {\n      \"path\": \"nvidia-container-runtime\"\n    }\n  }\n}\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestSetupRuntimeMakesAndRemovesTheFile(t *testing.T) {
	ctx := context.Background()
	h, _ := runtimeHost(t, "")
	if _, err := h.SetupRuntime(ctx, "runsc"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.UndoRuntime(ctx, "runsc"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(h.Root, DaemonJSON)); !os.IsNotExist(err) {
		t.Fatalf("daemon.json left: %v", err)
	}
}

func TestSetupRuntimeRefusals(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct{ daemon, want string }{
		"malformed":    {`{"a": 1,}`, "malformed"},
		"duplicate":    {`{"a": 1, "a": 2}`, "twice"},
		"runtimes":     {`{"runtimes": []}`, "not a JSON object"},
		"no host uds":  {`{"runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--oci-seccomp"]}}}`, "--host-uds=open"},
		"no seccomp":   {`{"runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--host-uds=all"]}}}`, "--oci-seccomp"},
		"not a object": {`[1]`, "not a JSON object"},
	} {
		t.Run(name, func(t *testing.T) {
			h, hups := runtimeHost(t, tc.daemon)
			_, err := h.SetupRuntime(ctx, "runsc")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if got := readString(t, filepath.Join(h.Root, DaemonJSON)); got != tc.daemon || len(*hups) != 0 {
				t.Fatalf("daemon.json changed to %q or reloaded (%v)", got, *hups)
			}
		})
	}
	h, _ := runtimeHost(t, "")
	if _, err := h.SetupRuntime(ctx, "crun"); err == nil {
		t.Fatal("setup of an unknown runtime succeeded")
	}
}

func TestUndoRuntimeLeavesAChangedEntry(t *testing.T) {
	ctx := context.Background()
	h, _ := runtimeHost(t, "{}")
	if _, err := h.SetupRuntime(ctx, "runsc"); err != nil {
		t.Fatal(err)
	}
	changed := `{"runtimes": {"runsc": {"path": "/opt/runsc", "runtimeArgs": ["--host-uds=all", "--oci-seccomp"]}}}`
	mustWrite(t, filepath.Join(h.Root, DaemonJSON), changed)
	rep, err := h.UndoRuntime(ctx, "runsc")
	if err != nil || len(rep.Changes) != 0 || len(rep.Notes) != 1 {
		t.Fatalf("undo: %v, %+v", err, rep)
	}
	if got := readString(t, filepath.Join(h.Root, DaemonJSON)); got != changed {
		t.Fatalf("daemon.json changed: %s", got)
	}
}

func TestReloadDockerWithSystemd(t *testing.T) {
	h, hups := runtimeHost(t, "{}")
	mustMkdir(t, filepath.Join(h.Root, "run/systemd/system"))
	if _, err := h.SetupRuntime(context.Background(), "runsc"); err != nil {
		t.Fatal(err)
	}
	if len(*hups) != 0 || !strings.Contains(strings.Join(h.ran, "\n"), "systemctl reload docker.service") {
		t.Fatalf("ran %q, SIGHUPs %v", h.ran, *hups)
	}
}
