package e2e

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxed-dev/sandboxed/internal/doccheck"
)

// TestDocsExamplesRun runs every command of the documentation's runnable
// blocks (```sh run, see package doccheck) with the built binary as
// `sandboxed` on PATH, in a fresh directory holding the repository's
// README.md, docs/ and examples/, as the suite's user: each must exit 0.
// That every other command line the pages show parses with the CLI's
// flags is checked by cmd/sandboxed's TestDocsCommandsParse.
func TestDocsExamplesRun(t *testing.T) {
	begin(t)
	pages, err := doccheck.Pages("..")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, root := range []string{"README.md", "docs", "examples"} {
		err := filepath.WalkDir(filepath.Join("..", root), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel("..", p)
			files[rel] = string(b)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// `sandboxed` on PATH is the binary under test; the front finds the
	// CLI beside the file it was started from.
	binDir, err := os.MkdirTemp(env.workRoot, "docs-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(binDir) })
	if err := os.Chmod(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(env.bin, filepath.Join(binDir, "sandboxed")); err != nil {
		t.Fatal(err)
	}

	blocks := 0
	for _, p := range pages {
		for _, b := range doccheck.Blocks(p) {
			if !b.Runnable {
				continue
			}
			blocks++
			cmds, err := doccheck.Commands(b)
			if err != nil {
				t.Error(err)
				continue
			}
			if len(cmds) == 0 {
				t.Errorf("%s: a runnable block with no command", b.Where())
			}
			t.Run(strings.ReplaceAll(b.Where(), "/", "_"), func(t *testing.T) {
				dir := workdir(t, files)
				for _, c := range cmds {
					runDocCommand(t, dir, binDir, c)
				}
			})
		}
	}
	if blocks < 3 {
		t.Errorf("found %d runnable blocks in the documentation; it has more: is the parser broken?", blocks)
	}
}

// runDocCommand runs one documented command line with bash in dir, as
// the suite runs sandboxed (its environment, its user), and fails the test
// unless it exits 0.
func runDocCommand(t *testing.T, dir, binDir string, c doccheck.Command) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := []string{"bash", "-e", "-o", "pipefail", "-c", c.Text}
	if env.runner != nil && cgroupV2() {
		args = append([]string{"systemd-run", "--user", "--scope", "--quiet", "--collect", "--"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(runEnv(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	asRunner(cmd)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := runCtx(ctx, cmd); err != nil {
		t.Errorf("%s: %s: %v\n%s", c.Where, c.Text, err, out.String())
	}
}
