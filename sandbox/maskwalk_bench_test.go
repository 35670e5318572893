package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxed-dev/sandboxed/policy"
)

// BenchmarkSecretMaskWalk is the walk of a read grant of 20000 files in
// 200 folders against the built-in secret names.
func BenchmarkSecretMaskWalk(b *testing.B) {
	dir := b.TempDir()
	for d := 0; d < 200; d++ {
		sub := filepath.Join(dir, fmt.Sprintf("d%d", d))
		if err := os.Mkdir(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := 0; f < 100; f++ {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%d.txt", f)), nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	var patterns []string
	for _, n := range policy.DefaultSecretNames() {
		patterns = append(patterns, "**/"+string(n))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := expandMasks(dir, patterns); err != nil {
			b.Fatal(err)
		}
	}
}
