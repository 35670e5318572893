package hostsetup

import (
	"bufio"
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// SubIDCount is how many subordinate ids setup gives a user: enough to map
// every id a tool may run as (65534, nobody, included), as useradd gives.
const SubIDCount = 65536

// maxID is one past the largest id the kernel can map (uid_t is 32 bits,
// and (uid_t)-1 is never a valid id).
const maxID = 1<<32 - 1

// SubIDRange is one line of /etc/subuid or /etc/subgid: Owner (a user name
// or a numeric uid) may map Count ids from Start.
type SubIDRange struct {
	Owner string `json:"owner"`
	Start uint64 `json:"start"`
	Count uint64 `json:"count"`
}

// End is one past the last id of r.
func (r SubIDRange) End() uint64 { return r.Start + r.Count }

// Line is r as it is written in /etc/subuid.
func (r SubIDRange) Line() string {
	return fmt.Sprintf("%s:%d:%d", r.Owner, r.Start, r.Count)
}

// String says which ids r holds, for people.
func (r SubIDRange) String() string {
	return fmt.Sprintf("%d-%d (%d ids)", r.Start, r.End()-1, r.Count)
}

// ParseSubIDs reads the contents of /etc/subuid or /etc/subgid. Blank
// lines and lines starting with # are skipped. Any other line that is not
// OWNER:START:COUNT with a non-empty owner and a count of at least one
// that stays below 2^32-1 is an error naming the line: a range that cannot
// be read cannot be avoided, so setup changes nothing rather than guess.
func ParseSubIDs(data []byte) ([]SubIDRange, error) {
	var out []SubIDRange
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) != 3 || f[0] == "" || strings.ContainsAny(f[0], " \t") {
			return nil, fmt.Errorf("line %d %q: want OWNER:START:COUNT: %w", n, line, ErrMalformed)
		}
		start, err1 := strconv.ParseUint(f[1], 10, 32)
		count, err2 := strconv.ParseUint(f[2], 10, 32)
		if err1 != nil || err2 != nil || count == 0 || start+count > maxID {
			return nil, fmt.Errorf("line %d %q: START and COUNT must be ids, COUNT at least 1, below 2^32-1: %w", n, line, ErrMalformed)
		}
		out = append(out, SubIDRange{Owner: f[0], Start: start, Count: count})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read: %v: %w", err, ErrMalformed)
	}
	return out, nil
}

// OwnedBy returns the ranges of the user named name with uid, which a line
// may name either way.
func OwnedBy(ranges []SubIDRange, name string, uid int) []SubIDRange {
	var out []SubIDRange
	id := strconv.Itoa(uid)
	for _, r := range ranges {
		if r.Owner == name || r.Owner == id {
			out = append(out, r)
		}
	}
	return out
}

// FreeRange returns the lowest range of count ids starting at min or
// above, ending at max or below, that overlaps none of ranges (whoever
// owns them), as useradd chooses one.
func FreeRange(ranges []SubIDRange, min, max, count uint64) (start uint64, err error) {
	if count == 0 || min > max || max >= maxID {
		return 0, fmt.Errorf("choose %d ids in %d-%d: %w", count, min, max, ErrNoRange)
	}
	sorted := append([]SubIDRange(nil), ranges...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Start < sorted[j].Start })
	cand := min
	for _, r := range sorted {
		if r.End() <= cand {
			continue // wholly below the candidate
		}
		if cand+count <= r.Start {
			break // the gap before r holds it
		}
		cand = r.End()
	}
	if cand+count-1 > max {
		return 0, fmt.Errorf("choose %d ids in %d-%d: every range is taken: %w", count, min, max, ErrNoRange)
	}
	return cand, nil
}

// appendLine returns data with line added as a line of its own.
func appendLine(data []byte, line string) []byte {
	out := append([]byte(nil), data...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return append(out, line+"\n"...)
}

// removeLine returns data without the lines that are exactly line (blanks
// around it ignored), and whether there was one.
func removeLine(data []byte, line string) ([]byte, bool) {
	var out []byte
	found := false
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if l != "" && strings.TrimSpace(l) == line {
			found = true
			continue
		}
		out = append(out, l...)
	}
	return out, found
}
