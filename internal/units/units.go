package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Sizes.
//
// A size is a number (integer or decimal) followed by an optional unit,
// case-insensitive, with optional space between: B, K/KB/KiB, M/MB/MiB,
// G/GB/GiB, T/TB/TiB, P/PB/PiB. Every spelling is a binary multiple:
// 1K = 1KB = 1KiB = 1024 bytes, 1MB = 1MiB = 1048576 bytes. This is how
// Docker (--memory 512m, 512mb) and the CYCOD reference ("max-memory:
// 512MB" meaning a memory limit) read them, and it never grants less than
// a decimal reading would. A bare number is bytes.

// SizeGrammar says how to write a size, for hints in error messages.
const SizeGrammar = "bytes, or a number with B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB or P/PB/PiB, " +
	"such as 512MB or 1.5GiB (every spelling is binary: 1MB = 1MiB = 1048576 bytes)"

var sizeUnits = map[string]int64{
	"":  1,
	"b": 1,
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
	"p": 1 << 50, "pb": 1 << 50, "pib": 1 << 50,
}

// ParseSize parses a size such as "512MB", "10MB", "1GiB", "1.5GB", "512m"
// or "4096" into bytes. Units are binary multiples whatever the spelling
// (see SizeGrammar). Negative sizes, fractional bytes and sizes beyond
// int64 are errors. The error says what is wrong with s; the caller adds
// where s was written and SizeGrammar as the fix.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	if num == "" {
		return 0, fmt.Errorf("parse size %q: expected a number first", s)
	}
	mult, ok := sizeUnits[unit]
	if !ok {
		return 0, fmt.Errorf("parse size %q: unknown unit %q", s, strings.TrimSpace(t[i:]))
	}
	if !strings.Contains(num, ".") {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n > math.MaxInt64/mult {
			return 0, fmt.Errorf("parse size %q: out of range (at most 8191PiB)", s)
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("parse size %q: %q is not a number", s, num)
	}
	v := f * float64(mult)
	if v >= math.MaxInt64 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("parse size %q: out of range (at most 8191PiB)", s)
	}
	if v != math.Trunc(v) && mult == 1 {
		return 0, fmt.Errorf("parse size %q: a byte count must be whole; write it without a fraction or with a unit (0.5K)", s)
	}
	if v > 0 && int64(v) == 0 {
		// Zero is "no cap" in the policy: a value written as more than
		// zero must not turn into it.
		return 0, fmt.Errorf("parse size %q: less than one byte", s)
	}
	return int64(v), nil
}

// FormatSize renders bytes in the largest binary unit that divides it
// exactly ("512MiB", "1536KiB", "100B"). ParseSize(FormatSize(n)) == n for
// every n >= 0. It is the one byte formatter of sandboxed: definitions
// written back, plans, explanations, policy decisions and messages all
// show sizes through it.
func FormatSize(n int64) string {
	units := []struct {
		suffix string
		mult   int64
	}{{"PiB", 1 << 50}, {"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}
	if n > 0 {
		for _, u := range units {
			if n%u.mult == 0 {
				return strconv.FormatInt(n/u.mult, 10) + u.suffix
			}
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// Durations.
//
// In YAML an integer duration is milliseconds (timeout, resources.timeout,
// retry.delay, interactive-options.timeout, as the CYCOD reference says;
// the policy's limits too). A string is either an integer (milliseconds
// too) or a sequence of number+unit pairs with units ns, us, ms, s, m, h,
// d (24h) and w (7d): "30s", "5m", "1h30m", "1.5h", "30d".

// DurationGrammar says how to write a duration, for hints in error
// messages.
const DurationGrammar = "milliseconds (10000), or number+unit pairs with ms, s, m, h, d or w, such as 30s, 5m, 1h30m or 30d"

var durationUnits = map[string]time.Duration{
	"ms": time.Millisecond,
	"s":  time.Second,
	"m":  time.Minute,
	"h":  time.Hour,
	"d":  24 * time.Hour,
	"w":  7 * 24 * time.Hour,
	"us": time.Microsecond,
	"ns": time.Nanosecond,
}

// ParseDuration parses "1000" (milliseconds), "30s", "5m", "1h", "30d",
// "2w", "1h30m" or "1.5h". Negative durations and overflow are errors.
// The error says what is wrong with s; the caller adds where s was
// written and DurationGrammar as the fix.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("parse duration %q: empty", s)
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("parse duration %q: must not be negative", s)
		}
		if n > math.MaxInt64/int64(time.Millisecond) {
			return 0, fmt.Errorf("parse duration %q: out of range (at most about 292 years)", s)
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	var total time.Duration
	rest := t
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		if i == 0 {
			return 0, fmt.Errorf("parse duration %q: expected a number at %q", s, rest)
		}
		num := rest[:i]
		rest = rest[i:]
		j := 0
		for j < len(rest) && rest[j] >= 'a' && rest[j] <= 'z' {
			j++
		}
		unit := rest[:j]
		rest = rest[j:]
		mult, ok := durationUnits[unit]
		if !ok {
			return 0, fmt.Errorf("parse duration %q: unknown unit %q", s, unit)
		}
		var part time.Duration
		if !strings.Contains(num, ".") {
			n, err := strconv.ParseInt(num, 10, 64)
			if err != nil || n > math.MaxInt64/int64(mult) {
				return 0, fmt.Errorf("parse duration %q: out of range (at most about 292 years)", s)
			}
			part = time.Duration(n) * mult
		} else {
			f, err := strconv.ParseFloat(num, 64)
			if err != nil {
				return 0, fmt.Errorf("parse duration %q: %q is not a number", s, num)
			}
			v := f * float64(mult)
			if v >= math.MaxInt64 {
				return 0, fmt.Errorf("parse duration %q: out of range (at most about 292 years)", s)
			}
			part = time.Duration(v)
			if v > 0 && part == 0 {
				// Zero is "no cap" in the policy: a value written as
				// more than zero must not turn into it.
				return 0, fmt.Errorf("parse duration %q: %s%s is less than a nanosecond", s, num, unit)
			}
		}
		if total > math.MaxInt64-part {
			return 0, fmt.Errorf("parse duration %q: out of range (at most about 292 years)", s)
		}
		total += part
	}
	return total, nil
}

// FormatDuration renders d for YAML: whole days as "Nd", whole
// milliseconds as an integer string, anything finer as "Nns".
// ParseDuration(FormatDuration(d)) == d for every d >= 0.
func FormatDuration(d time.Duration) string {
	day := 24 * time.Hour
	switch {
	case d > 0 && d%day == 0:
		return strconv.FormatInt(int64(d/day), 10) + "d"
	case d%time.Millisecond == 0:
		return strconv.FormatInt(d.Milliseconds(), 10)
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}
