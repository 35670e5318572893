package hostsetup

import (
	"errors"
	"strings"
	"testing"
)

func TestParseSubIDs(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []SubIDRange
		bad  bool
	}{
		{name: "empty", in: ""},
		{name: "one", in: "ada:100000:65536\n", want: []SubIDRange{{"ada", 100000, 65536}}},
		{name: "no final newline", in: "ada:100000:65536", want: []SubIDRange{{"ada", 100000, 65536}}},
		{name: "numeric owner, comment, blanks", in: "# made by hand\n\n1000:200000:10\n  \nbob:300000:65536\n",
			want: []SubIDRange{{"1000", 200000, 10}, {"bob", 300000, 65536}}},
		{name: "spaces around", in: "  ada:1:2  \n", want: []SubIDRange{{"ada", 1, 2}}},
		{name: "two fields", in: "ada:100000\n", bad: true},
		{name: "four fields", in: "ada:1:2:3\n", bad: true},
		{name: "no owner", in: ":1:2\n", bad: true},
		{name: "space in owner", in: "a da:1:2\n", bad: true},
		{name: "zero count", in: "ada:1:0\n", bad: true},
		{name: "negative", in: "ada:-1:2\n", bad: true},
		{name: "not a number", in: "ada:x:2\n", bad: true},
		{name: "past 2^32-1", in: "ada:4294967290:10\n", bad: true},
		{name: "start too big", in: "ada:4294967296:1\n", bad: true},
		{name: "bad after good", in: "ada:1:2\nbob\n", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSubIDs([]byte(tc.in))
			if tc.bad {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("ParseSubIDs(%q) = %v, %v; want ErrMalformed", tc.in, got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestParseSubIDsNamesTheLine(t *testing.T) {
	_, err := ParseSubIDs([]byte("ada:1:2\n\nbob:x:1\n"))
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("err = %v, want it to name line 3", err)
	}
}

func FuzzParseSubIDs(f *testing.F) {
	for _, s := range []string{"", "ada:100000:65536\n", "# c\n1000:1:1", "a:4294967294:1", "::\n", "a:1:2:3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseSubIDs([]byte(in))
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		// What parses is valid and reads back the same from its lines.
		var lines []string
		for _, r := range got {
			if r.Owner == "" || r.Count == 0 || r.End() > maxID {
				t.Fatalf("parsed an invalid range %+v from %q", r, in)
			}
			lines = append(lines, r.Line())
		}
		again, err := ParseSubIDs([]byte(strings.Join(lines, "\n")))
		if err != nil || len(again) != len(got) {
			t.Fatalf("lines %q of %q read back as %v, %v", lines, in, again, err)
		}
		for i := range got {
			if again[i] != got[i] {
				t.Fatalf("range %+v read back as %+v", got[i], again[i])
			}
		}
		// A free range chosen among them overlaps none.
		if start, err := FreeRange(got, 100000, 600100000, SubIDCount); err == nil {
			for _, r := range got {
				if start < r.End() && r.Start < start+SubIDCount {
					t.Fatalf("FreeRange chose %d, which overlaps %+v", start, r)
				}
			}
		}
	})
}

func TestFreeRange(t *testing.T) {
	r := func(start, count uint64) SubIDRange { return SubIDRange{Owner: "x", Start: start, Count: count} }
	for _, tc := range []struct {
		name     string
		ranges   []SubIDRange
		min, max uint64
		want     uint64
		none     bool
	}{
		{name: "empty file", min: 100000, max: 600100000, want: 100000},
		{name: "after one", ranges: []SubIDRange{r(100000, 65536)}, min: 100000, max: 600100000, want: 165536},
		{name: "unsorted", ranges: []SubIDRange{r(165536, 65536), r(100000, 65536)}, min: 100000, max: 600100000, want: 231072},
		{name: "gap big enough", ranges: []SubIDRange{r(100000, 65536), r(300000, 65536)}, min: 100000, max: 600100000, want: 165536},
		{name: "gap too small", ranges: []SubIDRange{r(100000, 65536), r(200000, 65536)}, min: 100000, max: 600100000, want: 265536},
		{name: "below min ignored", ranges: []SubIDRange{r(1000, 5000)}, min: 100000, max: 600100000, want: 100000},
		{name: "straddles min", ranges: []SubIDRange{r(90000, 20000)}, min: 100000, max: 600100000, want: 110000},
		{name: "overlapping entries", ranges: []SubIDRange{r(100000, 65536), r(120000, 100000)}, min: 100000, max: 600100000, want: 220000},
		{name: "nested entry", ranges: []SubIDRange{r(100000, 200000), r(120000, 10)}, min: 100000, max: 600100000, want: 300000},
		{name: "login.defs bounds", min: 200000, max: 265535, want: 200000},
		{name: "just fits at the end", ranges: []SubIDRange{r(100000, 65536)}, min: 100000, max: 231071, want: 165536},
		{name: "one short at the end", ranges: []SubIDRange{r(100000, 65536)}, min: 100000, max: 231070, none: true},
		{name: "full", ranges: []SubIDRange{r(100000, 600000000)}, min: 100000, max: 600100000, none: true},
		{name: "min above max", min: 10, max: 5, none: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FreeRange(tc.ranges, tc.min, tc.max, SubIDCount)
			if tc.none {
				if !errors.Is(err, ErrNoRange) {
					t.Fatalf("FreeRange = %d, %v; want ErrNoRange", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("FreeRange = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestOwnedBy(t *testing.T) {
	ranges := []SubIDRange{{"ada", 1, 1}, {"1000", 2, 1}, {"bob", 3, 1}, {"10000", 4, 1}}
	got := OwnedBy(ranges, "ada", 1000)
	if len(got) != 2 || got[0].Start != 1 || got[1].Start != 2 {
		t.Fatalf("OwnedBy = %v", got)
	}
}

func TestLines(t *testing.T) {
	for _, tc := range []struct{ in, line, appended, removed string }{
		{"", "a:1:2", "a:1:2\n", ""},
		{"b:3:4", "a:1:2", "b:3:4\na:1:2\n", "b:3:4"},
		{"b:3:4\na:1:2\nc:5:6\n", "a:1:2", "b:3:4\na:1:2\nc:5:6\na:1:2\n", "b:3:4\nc:5:6\n"},
		{"a:1:20\n", "a:1:2", "a:1:20\na:1:2\n", "a:1:20\n"},
	} {
		if got := string(appendLine([]byte(tc.in), tc.line)); got != tc.appended {
			t.Errorf("appendLine(%q) = %q, want %q", tc.in, got, tc.appended)
		}
		got, _ := removeLine([]byte(tc.in), tc.line)
		if string(got) != tc.removed {
			t.Errorf("removeLine(%q) = %q, want %q", tc.in, got, tc.removed)
		}
	}
}

func TestParseLoginDefs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		kind string
		want SubIDBounds
	}{
		{"", "UID", defaultSubIDBounds},
		{"SUB_UID_MIN\t\t   200000\nSUB_UID_MAX 300000\nSUB_GID_MIN 5\n", "UID", SubIDBounds{200000, 300000}},
		{"SUB_UID_MIN 200000\nSUB_GID_MIN 5\n", "GID", SubIDBounds{5, 600100000}},
		{"#SUB_UID_MIN 7\nSUB_UID_MIN x\n", "UID", defaultSubIDBounds},
	} {
		if got := parseLoginDefs([]byte(tc.in), tc.kind); got != tc.want {
			t.Errorf("parseLoginDefs(%q, %s) = %+v, want %+v", tc.in, tc.kind, got, tc.want)
		}
	}
}
