package units

import (
	"strings"
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

// Every spelling of a unit, in any case, is the same binary multiple.
func TestSizeSpellingsAgree(t *testing.T) {
	for i, group := range [][]string{
		{"1K", "1KB", "1KiB", "1k", "1kb", "1kib", "1 KB", "1024", "1024B"},
		{"1M", "1MB", "1MiB", "1m", "1mb", "1mib", "1 MiB", "1024K", "1048576"},
		{"1G", "1GB", "1GiB", "1g", "1gb", "1gib", "1024MB"},
		{"1T", "1TB", "1TiB", "1024G"},
		{"1P", "1PB", "1PiB", "1024TiB"},
	} {
		want := int64(1) << (10 * (i + 1))
		for _, s := range group {
			got, err := ParseSize(s)
			if err != nil || got != want {
				t.Errorf("ParseSize(%q) = %d, %v; want %d", s, got, err, want)
			}
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"512MB", "1.5GiB", "0", "4096", "64k", " 2 TB ", "-1", "1e3", "0.1B", "9223372036854775807", "8191.9PiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d, negative", s, n)
		}
		back, err := ParseSize(FormatSize(n))
		if err != nil || back != n {
			t.Fatalf("ParseSize(%q) = %d; FormatSize gives %q, which parses to %d, %v", s, n, FormatSize(n), back, err)
		}
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"1000", "30s", "1h30m", "1.5h", "2w", "30d", "0", "-5", "250ms", "1us", "9223372036854ms", "1.2.3s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("ParseDuration(%q) = %v, negative", s, d)
		}
		back, err := ParseDuration(FormatDuration(d))
		if err != nil || back != d {
			t.Fatalf("ParseDuration(%q) = %v; FormatDuration gives %q, which parses to %v, %v", s, d, FormatDuration(d), back, err)
		}
	})
}

// A value written as more than zero never reads as zero: a policy cap of
// 0 means "no cap", so a cap such as "0.0001K" (0.1 bytes) or "0.1ns"
// that truncated to 0 turned the cap off instead of refusing the value.
func TestNonZeroNeverReadsAsZero(t *testing.T) {
	for _, in := range []string{"0.0001K", "0.0000000001GiB", "0.9B"} {
		if v, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, v)
		}
	}
	for _, in := range []string{"0.1ns", "0.0000001ms", "0.5ns"} {
		if v, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", in, v)
		}
	}
	for _, in := range []string{"0.0K", "0.0s", "0s", "0"} {
		if _, err := ParseSize(strings.TrimSuffix(in, "s")); err != nil {
			t.Errorf("ParseSize(%q): %v", in, err)
		}
		if _, err := ParseDuration(in); err != nil && in != "0.0K" {
			t.Errorf("ParseDuration(%q): %v", in, err)
		}
	}
}
