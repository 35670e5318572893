package tool

import (
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	good := []struct {
		in   string
		want int64
	}{
		{"512MB", 512 << 20},
		{"10MB", 10 << 20},
		{"1GiB", 1 << 30},
		{"1.5GB", 3 << 29},
		{"512m", 512 << 20},
		{"1MB", 1048576},
		{"1MiB", 1048576},
		{"4096", 4096},
		{"100B", 100},
		{"64k", 64 << 10},
		{"2 TB", 2 << 40},
		{"0.5K", 512},
		{"0", 0},
	}
	for _, c := range good {
		got, err := ParseSize(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "MB", "-1MB", "12XB", "1.5B", "1..5MB", "99999999999PB", "1e3", "ten"} {
		if v, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, v)
		}
	}
}

func TestFormatSizeRoundTrip(t *testing.T) {
	for _, n := range []int64{0, 1, 1023, 1024, 1536, 512 << 20, 3 << 29, 1 << 40, 5 << 50, 1<<62 + 1} {
		s := FormatSize(n)
		back, err := ParseSize(s)
		if err != nil || back != n {
			t.Errorf("FormatSize(%d) = %q, parses back to %d, %v", n, s, back, err)
		}
	}
	if s := FormatSize(512 << 20); s != "512MiB" {
		t.Errorf("FormatSize(512MiB) = %q", s)
	}
}

func TestParseDuration(t *testing.T) {
	good := []struct {
		in   string
		want time.Duration
	}{
		{"1000", time.Second},
		{"30s", 30 * time.Second},
		{"5m", 5 * time.Minute},
		{"1h", time.Hour},
		{"30d", 30 * 24 * time.Hour},
		{"1h30m", 90 * time.Minute},
		{"1.5h", 90 * time.Minute},
		{"250ms", 250 * time.Millisecond},
		{"2w", 14 * 24 * time.Hour},
		{"0", 0},
	}
	for _, c := range good {
		got, err := ParseDuration(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "-5", "5x", "s", "10 minutes", "1h-5m", "99999999999999999d", "1.2.3s"} {
		if v, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", in, v)
		}
	}
}

func TestFormatDurationRoundTrip(t *testing.T) {
	for _, d := range []time.Duration{0, time.Millisecond, 1500 * time.Microsecond, time.Second, 36 * time.Hour, 30 * 24 * time.Hour, 1<<62 + 7} {
		s := FormatDuration(d)
		back, err := ParseDuration(s)
		if err != nil || back != d {
			t.Errorf("FormatDuration(%v) = %q, parses back to %v, %v", d, s, back, err)
		}
	}
}

// YAML integers are milliseconds for every duration key.
func TestYAMLDurationsAreMilliseconds(t *testing.T) {
	def := parseOK(t, `description: d
steps:
  - name: a
    bash: echo
    timeout: 1500
    error-handling:
      retry:
        attempts: 2
        delay: 250
timeout: 10000
resources:
  timeout: "2m"
interactive-options:
  timeout: 30000
  default-response: y
`)
	if def.Timeout != 10*time.Second || def.Resources.Timeout != 2*time.Minute ||
		def.InteractiveOptions.Timeout != 30*time.Second || def.Steps[0].Timeout != 1500*time.Millisecond ||
		def.Steps[0].ErrorHandling.Retry.Delay != 250*time.Millisecond {
		t.Errorf("durations: %v %v %v %v %v", def.Timeout, def.Resources.Timeout, def.InteractiveOptions.Timeout,
			def.Steps[0].Timeout, def.Steps[0].ErrorHandling.Retry.Delay)
	}
}
