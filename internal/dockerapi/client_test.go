package dockerapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
)

// fakeEngine serves the engine API on a Unix socket and records requests.
type fakeEngine struct {
	mu       sync.Mutex
	requests []*http.Request
	bodies   []string
	pings    int
}

func startFake(t *testing.T, version string) (*fakeEngine, string) {
	t.Helper()
	f := &fakeEngine{}
	sock := filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.requests = append(f.requests, r)
		f.bodies = append(f.bodies, string(body))
		if r.URL.Path == "/_ping" {
			f.pings++
		}
		f.mu.Unlock()
		w.Header().Set("Api-Version", version)
		switch {
		case r.URL.Path == "/_ping":
			io.WriteString(w, "OK")
		case strings.HasSuffix(r.URL.Path, "/containers/create"):
			io.WriteString(w, `{"Id":"c0ffee","Warnings":[]}`)
		case strings.Contains(r.URL.Path, "/containers/gone"):
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"message":"No such container: gone"}`)
		case strings.Contains(r.URL.Path, "/containers/busy"):
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `{"message":"container busy is not running"}`)
		case strings.HasSuffix(r.URL.Path, "/containers/json"):
			io.WriteString(w, `[{"Id":"a","Names":["/x"]}]`)
		case strings.HasSuffix(r.URL.Path, "/build"):
			w.Header().Set("Ostype", "linux")
			io.WriteString(w, `{"stream":"done"}`)
		case strings.HasSuffix(r.URL.Path, "/update"):
			io.WriteString(w, `{"Warnings":[]}`)
		case r.Method == http.MethodGet:
			io.WriteString(w, `{}`)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return f, "unix://" + sock
}

func (f *fakeEngine) last() (*http.Request, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[len(f.requests)-1], f.bodies[len(f.bodies)-1]
}

func TestClientNegotiatesAndCreates(t *testing.T) {
	f, host := startFake(t, "1.41")
	c, err := New(host, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	res, err := c.ContainerCreate(ctx, &container.Config{Image: "img"}, &container.HostConfig{CapDrop: []string{"all"}, CapAdd: []string{"chown", "CAP_KILL"}}, nil, nil, "sandboxed-1")
	if err != nil || res.ID != "c0ffee" {
		t.Fatalf("ContainerCreate = %+v, %v", res, err)
	}
	r, body := f.last()
	if r.URL.Path != "/v1.41/containers/create" || r.URL.Query().Get("name") != "sandboxed-1" {
		t.Errorf("create went to %s", r.URL)
	}
	var sent struct {
		Image      string
		HostConfig struct{ CapAdd, CapDrop []string }
	}
	if err := json.Unmarshal([]byte(body), &sent); err != nil {
		t.Fatal(err)
	}
	if sent.Image != "img" || strings.Join(sent.HostConfig.CapAdd, ",") != "CAP_CHOWN,CAP_KILL" || strings.Join(sent.HostConfig.CapDrop, ",") != "ALL" {
		t.Errorf("create body %s", body)
	}
	if err := c.ContainerStart(ctx, "c0ffee", container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	mem := int64(64 << 20)
	if _, err := c.ContainerUpdate(ctx, "c0ffee", container.UpdateConfig{Resources: container.Resources{Memory: mem}}); err != nil {
		t.Fatal(err)
	}
	if r, body := f.last(); r.URL.Path != "/v1.41/containers/c0ffee/update" || !strings.Contains(body, `"Memory":67108864`) {
		t.Errorf("update sent %s %s", r.URL.Path, body)
	}
	if c.ClientVersion() != "1.41" || f.pings != 1 {
		t.Errorf("version %s after %d pings, want 1.41 after 1", c.ClientVersion(), f.pings)
	}
	list, err := c.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", "sandboxed.run"))})
	if err != nil || len(list) != 1 {
		t.Fatalf("ContainerList = %v, %v", list, err)
	}
	r, _ = f.last()
	if r.URL.Query().Get("all") != "1" || !strings.Contains(r.URL.Query().Get("filters"), "sandboxed.run") {
		t.Errorf("list query %s", r.URL.RawQuery)
	}
}

func TestClientNewerEngine(t *testing.T) {
	_, host := startFake(t, "9.99")
	c, _ := New(host, nil)
	if _, err := c.Info(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c.ClientVersion() != maxVersion {
		t.Errorf("version %s with a newer engine, want %s", c.ClientVersion(), maxVersion)
	}
}

func TestClientErrors(t *testing.T) {
	_, host := startFake(t, "1.45")
	c, _ := New(host, nil)
	ctx := context.Background()
	_, err := c.ContainerInspect(ctx, "gone")
	var e *Error
	if !cerrdefs.IsNotFound(err) || !errors.As(err, &e) || !strings.Contains(e.Message, "No such container") {
		t.Errorf("inspect of a missing container: %v", err)
	}
	if err := c.ContainerKill(ctx, "busy", "KILL"); !cerrdefs.IsConflict(err) {
		t.Errorf("kill of a stopped container: %v", err)
	}

	dead, err := New("unix://"+filepath.Join(t.TempDir(), "none.sock"), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = dead.Info(ctx)
	if !IsConnectionFailed(err) {
		t.Errorf("an engine nobody serves: %v, want a connection error", err)
	}
	if fix := EngineFix(err); !strings.Contains(fix, "start the Docker engine") {
		t.Errorf("fix for an engine nobody serves: %q (%v)", fix, err)
	}
	// A socket this user may not use: the engine runs, the fix differs.
	denied := &ConnectionError{Host: "unix:///var/run/docker.sock", Err: &url.Error{Op: "Get", URL: "http://api.moby.localhost/_ping",
		Err: &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.EACCES)}}}
	if !denied.Denied() || !strings.Contains(denied.Error(), "may not use its socket") || !strings.Contains(EngineFix(fmt.Errorf("ping: %w", denied)), "docker group") {
		t.Errorf("a socket that refuses this user: %v, fix %q", denied, EngineFix(denied))
	}
	if os.Geteuid() != 0 {
		// For real where permissions apply: a socket only its owner's
		// group may use, and this user is not in it.
		sock := filepath.Join(t.TempDir(), "engine.sock")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if err := os.Chmod(sock, 0); err != nil {
			t.Fatal(err)
		}
		c, _ := New("unix://"+sock, nil)
		if _, err := c.Ping(ctx); !strings.Contains(EngineFix(err), "docker group") {
			t.Errorf("a socket of mode 0: %v, fix %q", err, EngineFix(err))
		}
	}
	for _, h := range []string{"ssh://host", "npipe:////./pipe/docker", "nonsense"} {
		if _, err := New(h, nil); err == nil {
			t.Errorf("New(%q) accepted", h)
		}
	}
}

func TestClientBuildQuery(t *testing.T) {
	f, host := startFake(t, "1.41")
	c, _ := New(host, nil)
	arg := "base:1"
	resp, err := c.ImageBuild(context.Background(), strings.NewReader("tar"), build.ImageBuildOptions{
		Tags: []string{"runner:latest"}, Dockerfile: "Dockerfile", BuildArgs: map[string]*string{"BASE": &arg},
		Labels: map[string]string{"k": "v"}, Remove: true, ForceRemove: true, NetworkMode: "none", Version: build.BuilderV1,
	})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	r, body := f.last()
	q := r.URL.Query()
	if q.Get("t") != "runner:latest" || q.Get("buildargs") != `{"BASE":"base:1"}` || q.Get("labels") != `{"k":"v"}` ||
		q.Get("forcerm") != "1" || q.Has("rm") || q.Get("networkmode") != "none" || q.Get("version") != "1" || body != "tar" ||
		r.Header.Get("Content-Type") != "application/x-tar" || resp.OSType != "linux" {
		t.Errorf("build sent %s %q (%s)", r.URL.RawQuery, body, r.Header.Get("Content-Type"))
	}
}

func TestFromEnvPinsVersion(t *testing.T) {
	f, host := startFake(t, "1.45")
	t.Setenv("DOCKER_HOST", host)
	t.Setenv("DOCKER_API_VERSION", "1.40")
	t.Setenv("DOCKER_CERT_PATH", "")
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ServerVersion(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, _ := f.last()
	if r.URL.Path != "/v1.40/version" || f.pings != 0 {
		t.Errorf("pinned version: went to %s after %d pings", r.URL.Path, f.pings)
	}
}
