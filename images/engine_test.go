package images

import (
	"context"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
)

// requireEngine gates tests that need a real Docker engine: they run when
// SANDBOXED_E2E=1, and fail rather than skip under CI (package testenv).
func requireEngine(t *testing.T) {
	t.Helper()
	testenv.NeedE2E(t)
	testenv.NeedDocker(t)
	c, err := Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Ping(context.Background()); err != nil {
		t.Fatalf("the real-engine tests need a Docker engine: %v", EngineError("ping", err))
	}
}

func TestEngineBuild(t *testing.T) {
	requireEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	opts := BuildOptions{Progress: func(e Event) { t.Logf("%s: %s", e.Stage, e.Message) }}
	start := time.Now()
	res, err := Build(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first build: built=%v in %s: %+v", res.Built, time.Since(start), res)

	start = time.Now()
	again, err := Build(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("second build: built=%v in %s", again.Built, time.Since(start))
	if again.Built || again.ID != res.ID {
		t.Fatalf("rebuilding an up-to-date image built again: %+v then %+v", res, again)
	}

	im, err := Inspect(ctx, DefaultImage)
	if err != nil {
		t.Fatal(err)
	}
	if !im.UpToDate || im.Kind != KindRunner {
		t.Fatalf("inspect %s: %+v, want an up-to-date runner", DefaultImage, im)
	}
	list, err := List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, l := range list {
		found = found || l.ID == res.ID
	}
	if !found {
		t.Fatalf("list does not show %s: %+v", res.ID, list)
	}
}
