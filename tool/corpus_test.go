package tool

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// The conformance corpus (testdata/corpus, copied from the CYCOD drafts;
// see testdata/corpus/SOURCES.md and COMPAT.md).

// brokenWant pins where each broken file fails: every one is invalid YAML.
var brokenWant = map[string]string{
	"custom-tools-spec-draft-1--L1905--b49974b53b.yaml":                         "12:90: invalid YAML: mapping values are not allowed",
	"custom-tools-spec-draft-1--L750--cdc6328f94.yaml":                          "11:90: invalid YAML: mapping values are not allowed",
	"custom-tools-spec-draft-1-consolidated-fixed--L1605--408d02a541.yaml":      "2:3: invalid YAML: did not find expected key",
	"custom-tools-spec-draft-1-consolidated-fixed--L1784--fc1f4b05e0.yaml":      "13:90: invalid YAML: mapping values are not allowed",
	"custom-tools-spec-draft-1-revised-testing-framework--L95--243b3b910f.yaml": "21:3: invalid YAML: did not find expected key",
	"documentation-best-practices-section--L81--ae614e45db.yaml":                "23:67: invalid YAML: mapping values are not allowed",
	"github-pr-review-comment-tool-examples--L63--c025696086.yaml":              "68:5: invalid YAML: found unknown escape character",
}

// completeWant pins each complete file's outcome: "" loads; otherwise the
// LINE:COL and message of a diagnostic the file must report (the reason
// we would defend), and the number of diagnostics.
var completeWant = map[string]struct {
	diag  string
	count int
}{
	"analyze-data--ff5bab8527.yaml":          {}, // python: is a compatibility alias
	"clone-my-repo--1e2f8606c9.yaml":         {},
	"clone-my-repo--626d6cf9fe.yaml":         {},
	"complex-workflow--ca3f636834.yaml":      {},
	"deploy-service--aa27dfa934.yaml":        {"13:7: unknown key custom in parameter SERVICE_NAME validation", 3},
	"find-files--9ea40dbcdd.yaml":            {},
	"find-files--a59363bf4e.yaml":            {"59:7: unknown key output-contains-any in expected", 1},
	"find-files--e57d2663be.yaml":            {"4:17: commands.default command refers to {DIRECTORY}, which is not a declared parameter", 8},
	"find-files--fe8fa31a15.yaml":            {},
	"gh-pr-line-comment--55539e73a5.yaml":    {"63:21: working-directory refers to {REPO_DIR}, which is not a declared parameter", 1},
	"gh-pr-multi-comment--fc22349cee.yaml":   {"94:1: unknown key detailed-help in the tool definition", 2},
	"gh-pr-summary-comment--ef9fe424c4.yaml": {"34:1: unknown key error-handling in the tool definition", 2},
	"github-repo-clone--862259324d.yaml":     {},
	"github-repo-clone--cb79b83805.yaml":     {},
	"github-workflow--fa62bdceda.yaml":       {},
	"interactive-setup--2dae79f090.yaml":     {},
	"jira-create-issue--92726eeb2c.yaml":     {"43:7: unknown key sensitive in parameter API_TOKEN security", 1},
	"parallel-build--c8a35e9d03.yaml":        {},
	"search-code--01a71d50fb.yaml":           {"5:1: unknown key arguments in the tool definition", 1},
	"search-code--b405a94c38.yaml":           {},
	"search-code--fde3b18416.yaml":           {},
	"search-js--8f6668702d.yaml":             {},
	"setup-project--2a07a47314.yaml":         {"8:15: with.OWNER of step clone-repo refers to {OWNER}, which is not a declared parameter", 2},
	"tool-name--1d7f765ef3.yaml":             {"9:1: an alias cannot have cmd", -1},
	"tool-name--952b1ca1d1.yaml":             {"185:1: duplicate key function-calling in the tool definition", -1},
	"tool-name--9b8831506d.yaml":             {"22:1: unknown key uses in the tool definition", -1},
	"tool-name--b063831d43.yaml":             {"31:23: step step1 waits for step3, but there is no step step3", -1},
	"translate-text--9ad191e498.yaml":        {},
	"weather-lookup--3f86a73e8e.yaml":        {},
	"weather-lookup--725f5a5a72.yaml":        {},
	"weather-lookup--c6c60dd1e3.yaml":        {},
	"weather-lookup--f7222ad4f4.yaml":        {},
	"weather-lookup--fd066185db.yaml":        {},
}

var diagLineRE = regexp.MustCompile(`^[^:]+:\d+:\d+: `)

// checkLocated asserts err is a *LoadError whose every diagnostic has a
// position >= 1:1 and renders as FILE:LINE:COL: message.
func checkLocated(t *testing.T, file string, err error) *LoadError {
	t.Helper()
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("%s: error is %T (%v), want *LoadError", file, err, err)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("%s: error does not wrap ErrInvalid", file)
	}
	if len(le.Diags) == 0 {
		t.Fatalf("%s: LoadError without diagnostics", file)
	}
	for _, d := range le.Diags {
		if d.Pos.Line < 1 || d.Pos.Col < 1 {
			t.Errorf("%s: diagnostic without position: %+v", file, d)
		}
	}
	for _, line := range strings.Split(le.Error(), "\n") {
		if !diagLineRE.MatchString(line) {
			t.Errorf("%s: error line %q is not FILE:LINE:COL: message", file, line)
		}
	}
	return le
}

func TestCorpusBroken(t *testing.T) {
	files, _ := filepath.Glob("testdata/corpus/broken/*.yaml")
	if len(files) != len(brokenWant) {
		t.Fatalf("found %d broken files, want %d", len(files), len(brokenWant))
	}
	for _, f := range files {
		_, err := Load(f, ScopePath)
		if err == nil {
			t.Errorf("%s: loaded, want an error", f)
			continue
		}
		le := checkLocated(t, f, err)
		want, ok := brokenWant[filepath.Base(f)]
		if !ok {
			t.Errorf("%s: not pinned", f)
			continue
		}
		if !strings.Contains(le.Error(), f+":"+want) {
			t.Errorf("%s:\n got %v\nwant %s:%s", f, err, f, want)
		}
	}
}

func TestCorpusComplete(t *testing.T) {
	files, _ := filepath.Glob("testdata/corpus/complete/*.yaml")
	if len(files) != len(completeWant) {
		t.Fatalf("found %d complete files, want %d", len(files), len(completeWant))
	}
	for _, f := range files {
		want, ok := completeWant[filepath.Base(f)]
		if !ok {
			t.Errorf("%s: not pinned", f)
			continue
		}
		def, err := Load(f, ScopePath)
		if want.diag == "" {
			if err != nil {
				t.Errorf("%s: want it to load, got\n%v", f, err)
				continue
			}
			checkRoundTrip(t, f, def)
			continue
		}
		if err == nil {
			t.Errorf("%s: loaded, want %s", f, want.diag)
			continue
		}
		le := checkLocated(t, f, err)
		if !strings.Contains(le.Error(), f+":"+want.diag) {
			t.Errorf("%s:\n got %v\nwant %s:%s", f, err, f, want.diag)
		}
		if want.count > 0 && len(le.Diags) != want.count {
			t.Errorf("%s: %d diagnostics, want %d:\n%v", f, len(le.Diags), want.count, err)
		}
	}
}

// normalized strips what is not part of the YAML (source, positions).
func normalized(d *Definition) *Definition {
	c := *d
	c.Source = Source{}
	c.Pos = DefPositions{}
	if d.Tests != nil {
		ts := *d.Tests
		ts.Cases = append([]TestCase(nil), d.Tests.Cases...)
		for i := range ts.Cases {
			ts.Cases[i].Pos = Pos{}
		}
		c.Tests = &ts
	}
	return &c
}

// checkRoundTrip asserts Marshal (yaml and json) parses back to def.
func checkRoundTrip(t *testing.T, name string, def *Definition) {
	t.Helper()
	for _, format := range []string{"yaml", "json"} {
		out, err := Marshal(def, format)
		if err != nil {
			t.Errorf("%s: marshal %s: %v", name, format, err)
			continue
		}
		back, err := Parse(out, def.Name+"."+format)
		if err != nil {
			t.Errorf("%s: %s output does not parse:\n%v\n%s", name, format, err, out)
			continue
		}
		if a, b := normalized(def), normalized(back); !reflect.DeepEqual(a, b) {
			t.Errorf("%s: %s round trip differs:\n before %+v\n after  %+v\n%s", name, format, a, b, out)
		}
	}
}

func TestCorpusIndependentOfShared(t *testing.T) {
	// The corpus is copied into testdata so that tests never read ../shared.
	if _, err := os.Stat("testdata/corpus/SOURCES.md"); err != nil {
		t.Fatal(err)
	}
}
