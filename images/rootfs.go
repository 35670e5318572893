package images

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/xdg"
)

// cacheDir returns dir, else the user's cache directory (package xdg),
// created with mode 0700.
func cacheDir(dir string) (string, error) {
	if dir == "" {
		var err error
		if dir, err = xdg.CacheDir(); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create cache directory %s: %w", dir, err)
	}
	return dir, nil
}

// rootfsTarball is where the made base's root filesystem is cached.
func rootfsTarball(cache string) string {
	return filepath.Join(cache, "rootfs-"+Suite+"-"+baseKey()[:12]+".tar")
}

func statFile(path string) (os.FileInfo, error) { return os.Stat(path) }
func openFile(path string) (*os.File, error)    { return os.Open(path) }

// DetectMirror returns the URI of the first apt source of the host that
// serves suite with the main component, reading /etc/apt/sources.list and
// /etc/apt/sources.list.d (one-line and deb822 formats).
func DetectMirror(suite string) (string, error) {
	files := []string{"/etc/apt/sources.list"}
	more, _ := filepath.Glob("/etc/apt/sources.list.d/*")
	sort.Strings(more)
	files = append(files, more...)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var m string
		switch {
		case strings.HasSuffix(f, ".sources"):
			m = mirrorDeb822(string(data), suite)
		case strings.HasSuffix(f, ".list") || f == "/etc/apt/sources.list":
			m = mirrorOneLine(string(data), suite)
		}
		if m != "" {
			return m, nil
		}
	}
	return "", fmt.Errorf("find a Debian mirror: %w: no apt source in /etc/apt/sources.list* serves %s main; configure one or pass the mirror explicitly", ErrBuild, suite)
}

// mirrorOneLine parses the one-line sources.list format:
// deb [options] URI SUITE COMPONENT...
func mirrorOneLine(text, suite string) string {
	for _, line := range strings.Split(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 4 || f[0] != "deb" {
			continue
		}
		f = f[1:]
		if strings.HasPrefix(f[0], "[") {
			for len(f) > 0 && !strings.HasSuffix(f[0], "]") {
				f = f[1:]
			}
			if len(f) == 0 {
				continue
			}
			f = f[1:]
		}
		if len(f) < 3 || f[1] != suite || !contains(f[2:], "main") {
			continue
		}
		return f[0]
	}
	return ""
}

// mirrorDeb822 parses the deb822 .sources format: stanzas of fields
// separated by blank lines.
func mirrorDeb822(text, suite string) string {
	for _, stanza := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		fields := map[string]string{}
		var last string
		for _, line := range strings.Split(stanza, "\n") {
			if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
				continue
			}
			if line[0] == ' ' || line[0] == '\t' {
				if last != "" {
					fields[last] += " " + strings.TrimSpace(line)
				}
				continue
			}
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			last = strings.ToLower(strings.TrimSpace(k))
			fields[last] = strings.TrimSpace(v)
		}
		if strings.EqualFold(fields["enabled"], "no") {
			continue
		}
		if !contains(strings.Fields(fields["types"]), "deb") ||
			!contains(strings.Fields(fields["suites"]), suite) ||
			!contains(strings.Fields(fields["components"]), "main") {
			continue
		}
		if uris := strings.Fields(fields["uris"]); len(uris) > 0 {
			return uris[0]
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// makeRootfs runs debootstrap into a directory next to tarball, tars the
// result into tarball (atomically) and removes the directory. It installs
// debootstrap with apt-get when it is missing. It needs root.
func makeRootfs(ctx context.Context, tarball, mirror string, progress func(Event)) (retErr error) {
	emit := func(stage string) func(string) {
		return func(line string) {
			if progress != nil {
				progress(Event{Stage: stage, Message: line})
			}
		}
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("make the runner base: %w: debootstrap needs root; run `%s` as root, or pass --base IMAGE to build on an image you have", ErrBuild, BuildCommand)
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		emit("debootstrap")("installing debootstrap with apt-get")
		env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if err := run(ctx, env, emit("apt"), "apt-get", "update"); err != nil {
			return fmt.Errorf("make the runner base: apt-get update: %w: %w", ErrBuild, err)
		}
		if err := run(ctx, env, emit("apt"), "apt-get", "install", "-y", "--no-install-recommends", "debootstrap"); err != nil {
			return fmt.Errorf("make the runner base: install debootstrap: %w: %w", ErrBuild, err)
		}
	}

	dir := filepath.Dir(tarball)
	root, err := os.MkdirTemp(dir, "rootfs-")
	if err != nil {
		return fmt.Errorf("make the runner base: %w", err)
	}
	defer func() {
		if err := os.RemoveAll(root); err != nil && retErr == nil {
			retErr = fmt.Errorf("remove %s: %w", root, err)
		}
	}()
	if err := os.Chmod(root, 0o755); err != nil {
		return fmt.Errorf("make the runner base: %w", err)
	}
	args := []string{
		"--variant=minbase",
		"--components=main",
		"--include=" + strings.Join(Packages, ","),
		Suite, root, mirror,
	}
	if err := run(ctx, nil, emit("debootstrap"), "debootstrap", args...); err != nil {
		return fmt.Errorf("make the runner base: debootstrap %s: %w: %w", strings.Join(args, " "), ErrBuild, err)
	}
	// Drop what the image does not need: package lists, caches, logs.
	for _, g := range []string{"var/lib/apt/lists/*", "var/cache/apt/*.bin", "var/cache/apt/archives/*.deb", "var/log/*.log", "var/cache/debconf/*-old"} {
		matches, _ := filepath.Glob(filepath.Join(root, g))
		for _, m := range matches {
			if fi, err := os.Lstat(m); err == nil && !fi.IsDir() {
				_ = os.Remove(m)
			}
		}
	}

	emit("debootstrap")("writing " + tarball)
	tmpf, err := os.CreateTemp(dir, "rootfs-*.tar.tmp")
	if err != nil {
		return fmt.Errorf("make the runner base: %w", err)
	}
	tmp := tmpf.Name()
	tmpf.Close()
	// GNU tar keeps owners, modes, links and devices exactly; the kernel's
	// pseudo filesystems are left empty, Docker mounts its own.
	if err := run(ctx, nil, nil, "tar", "--numeric-owner", "--xattrs", "-C", root,
		"--exclude=./dev/*", "--exclude=./proc/*", "--exclude=./sys/*", "--exclude=./run/*",
		"-cf", tmp, "."); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("make the runner base: tar %s: %w: %w", root, ErrBuild, err)
	}
	if err := os.Rename(tmp, tarball); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("make the runner base: %w", err)
	}
	return nil
}

// run runs name with args, sending each output line to line (if set) and
// keeping the last lines for the error.
func run(ctx context.Context, env []string, line func(string), name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return err
	}
	tail := make([]string, 0, 8)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			l := sc.Text()
			if len(tail) == cap(tail) {
				tail = append(tail[:0], tail[1:]...)
			}
			tail = append(tail, l)
			if line != nil {
				line(l)
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	err := cmd.Wait()
	pw.Close()
	<-done
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.Join(tail, " | "))
	}
	return nil
}

// buildContext returns a tar build context holding dockerfile as
// "Dockerfile" and nothing else.
func buildContext(dockerfile []byte) (io.Reader, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(dockerfile); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return &buf, nil
}

// message is one line of the engine's JSON progress stream.
type message struct {
	Stream      string `json:"stream"`
	Status      string `json:"status"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
}

// readMessages reads an engine JSON message stream to its end, passing each
// text line to line and returning the first error the stream reports.
func readMessages(r io.Reader, line func(string)) error {
	dec := json.NewDecoder(r)
	for {
		var m message
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read engine progress: %w", err)
		}
		if m.Error != "" {
			return errors.New(strings.TrimSpace(m.Error))
		}
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			return errors.New(strings.TrimSpace(m.ErrorDetail.Message))
		}
		if line == nil {
			continue
		}
		for _, s := range []string{m.Stream, m.Status} {
			for _, l := range strings.Split(s, "\n") {
				if l = strings.TrimSpace(l); l != "" {
					line(l)
				}
			}
		}
	}
}
