package process

import (
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/sbinit"
)

func TestTailBufferKeepsHeadAndTail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"short", []string{"fatal: x"}, "fatal: x"},
		{"cut in the middle", []string{"fatal error: x"}, "fatal \n...\nror: x"},
		{"fits", []string{"abcd", "efgh"}, "abcdefgh"},
		{"cut", []string{"HEAD", strings.Repeat("m", 20), "TAIL"}, "HEADmm\n...\nmmTAIL"},
		{"one write", []string{"HEAD" + strings.Repeat("m", 20) + "TAIL"}, "HEADmm\n...\nmmTAIL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &tailBuffer{max: 12}
			for _, w := range tc.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := b.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// The init's spare threads are added to a pids limit, never made one.
func TestResourcesSpareThreads(t *testing.T) {
	if r := resources(isolation.Limits{}); r.Pids != 0 {
		t.Errorf("no pids limit became %d", r.Pids)
	}
	if r := resources(isolation.Limits{Pids: 24}); r.Pids != 24+sbinit.SpareThreads {
		t.Errorf("pids limit 24 became %d, want %d", r.Pids, 24+sbinit.SpareThreads)
	}
}
