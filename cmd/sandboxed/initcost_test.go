package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Every package linked into the CLI runs its init in every command,
// `sandboxed run` included, whether the command uses it or not. The guard
// below builds the CLI, runs `sandboxed version` with GODEBUG=inittrace=1
// and checks what package initialisation allocated: counts and bytes are
// deterministic where clock times are not (no test asserts a time).
const (
	// initAllocBudget and initByteBudget bound the whole CLI's package
	// initialisation. The CLI's own packages and the process tier's
	// dependencies allocate about 5,300 times (0.9 MB; 10,200 and 1.5 MB
	// before the Docker client and Masterminds/semver left); the
	// Kubernetes backend's client (client-go's rest, clientcmd and
	// remotecommand, the k8s.io/api types) adds about 4,500 (0.55 MB):
	// 9,900 and 1.46 MB. The backend is linked into the one binary, so
	// that a copied-alone sandboxed runs every backend; what that costs
	// every command was measured (README, "The CLI's start-up"). The
	// budget leaves room for small growth, not for another heavy
	// dependency.
	initAllocBudget = 10800
	initByteBudget  = 1600 << 10
	// sizeBudget bounds the stripped CLI without the embedded init (make
	// build adds 3 MB): the runtime's start-up work grows with the binary's
	// tables. 26.5 MB with the Docker client and Masterminds/semver, 25.0 MB
	// without, 35.4 MB with the Kubernetes backend linked.
	sizeBudget = 37 << 20
	// initPkgAllocBudget bounds one package's init: more is a package
	// building tables or compiling expressions at start-up.
	initPkgAllocBudget = 400
)

// heavyInit are packages whose init the CLI must not pay, with what to do
// instead.
var heavyInit = map[string]string{
	"github.com/Masterminds/semver/v3":      "compiles regular expressions at init: tool/semver.go parses versions by hand",
	"github.com/distribution/reference":     "compiles regular expressions at init (pulled in by github.com/docker/docker/client): talk to the engine through internal/dockerapi",
	"github.com/docker/docker/client":       "links distribution/reference and OpenTelemetry: talk to the engine through internal/dockerapi",
	"go.opentelemetry.io/otel":              "tracing the CLI does not use (pulled in by github.com/docker/docker/client)",
	"runtime/pprof":                         "profiling the CLI does not do",
	"k8s.io/client-go/kubernetes/scheme":    "registers every built-in API type at init: build the client on k8s.io/client-go/rest with the few types a run needs",
	"k8s.io/client-go/kubernetes":           "the typed clientset registers every built-in API group at init: use k8s.io/client-go/rest with the few types a run needs",
	"github.com/santhosh-tekuri/jsonschema": "a JSON-Schema compiler the run path does not need",
}

// initKnown are packages allowed over initPkgAllocBudget, with why.
var initKnown = map[string]string{
	"github.com/google/pprof/profile":         "imported by github.com/dop251/goja, which runs transforms",
	"github.com/opencontainers/go-digest":     "imported by the Docker API types (image-spec) the container tier sends",
	"k8s.io/api/core/v1":                      "the pod, config map and event types the Kubernetes backend sends and reads",
	"k8s.io/apimachinery/pkg/util/validation": "imported by k8s.io/api/core/v1 (name validation's regular expressions)",
}

type pkgInit struct {
	pkg           string
	bytes, allocs int
}

func TestInitCost(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "sandboxed")
	build := exec.Command(goBin, "build", "-tags", "urfave_cli_no_docs", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if fi, err := os.Stat(bin); err != nil {
		t.Fatal(err)
	} else if fi.Size() > sizeBudget {
		t.Errorf("the CLI grew to %.1f MB (stripped, without the init), over its budget of %.1f MB: every command maps it and the Go runtime walks its tables at start-up. See what grew with: go build -o /tmp/s ./cmd/sandboxed && go tool nm -size -sort size /tmp/s | head -50; keep heavy dependencies out of cmd/sandboxed's imports",
			float64(fi.Size())/1e6, float64(sizeBudget)/1e6)
	}
	run := exec.Command(bin, "version")
	run.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	run.Stderr = &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("sandboxed version: %v\n%s", err, stderr.Bytes())
	}
	inits, err := parseInitTrace(stderr.Bytes())
	if err != nil || len(inits) == 0 {
		t.Fatalf("no init trace (%v) in:\n%s", err, stderr.Bytes())
	}
	checkInits(t, inits)
}

// checkInits fails for a denied package, a package over its budget, or a
// whole over the CLI's budget, saying which and how to fix it.
func checkInits(t testing.TB, inits []pkgInit) {
	t.Helper()
	const how = "every command of the CLI, `sandboxed run` included, pays every linked package's init; keep the package out of cmd/sandboxed's imports (see why with: go list -deps ./cmd/sandboxed, go mod why -m MODULE), put the work behind a sync.OnceValue, or use a lighter package"
	var allocs, bytes int
	denied := map[string][]string{} // heavyInit prefix: packages linked
	for _, p := range inits {
		allocs += p.allocs
		bytes += p.bytes
		for prefix := range heavyInit {
			if p.pkg == prefix || strings.HasPrefix(p.pkg, prefix+"/") {
				denied[prefix] = append(denied[prefix], p.pkg)
			}
		}
		if _, ok := initKnown[p.pkg]; !ok && p.allocs > initPkgAllocBudget {
			t.Errorf("package %s allocates %d times (%d bytes) at init, over the budget of %d per package. %s", p.pkg, p.allocs, p.bytes, initPkgAllocBudget, how)
		}
	}
	for prefix, pkgs := range denied {
		t.Errorf("%s is linked into the CLI (%s): %s. %s", prefix, strings.Join(pkgs, ", "), heavyInit[prefix], how)
	}
	if allocs > initAllocBudget || bytes > initByteBudget {
		sort.Slice(inits, func(i, j int) bool { return inits[i].allocs > inits[j].allocs })
		var top strings.Builder
		for _, p := range inits[:min(12, len(inits))] {
			fmt.Fprintf(&top, "\n  %6d allocs %8d bytes  %s", p.allocs, p.bytes, p.pkg)
		}
		t.Errorf("the CLI's package initialisation grew to %d allocations and %d bytes (budget %d and %d); the largest:%s\n%s. A backend with a heavy client builds it on the lightest package that serves (as the Kubernetes backend on k8s.io/client-go/rest, not the typed clientset).",
			allocs, bytes, initAllocBudget, initByteBudget, top.String(), how)
	}
}

// parseInitTrace reads GODEBUG=inittrace=1 lines:
//
//	init PKG @0.5 ms, 0.1 ms clock, 1024 bytes, 12 allocs
func parseInitTrace(trace []byte) ([]pkgInit, error) {
	var out []pkgInit
	sc := bufio.NewScanner(bytes.NewReader(trace))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 11 || f[0] != "init" || f[8] != "bytes," || f[10] != "allocs" {
			continue
		}
		b, err1 := strconv.Atoi(f[7])
		a, err2 := strconv.Atoi(f[9])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad init trace line %q", sc.Text())
		}
		out = append(out, pkgInit{pkg: f[1], bytes: b, allocs: a})
	}
	return out, sc.Err()
}
