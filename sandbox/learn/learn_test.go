package learn

import (
	"reflect"
	"testing"

	"github.com/sandboxed-dev/sandboxed/tool"
)

func TestLearningView(t *testing.T) {
	host := fakeHost{"/data/", "/data/in/", "/data/in/x", "/tmp/", "/tmp/t/", "/tmp/t/in/", "/work/", "/work/p/", "/usr/"}
	cases := []struct {
		name   string
		params []Param
		cwd    string
		want   []string
	}{
		{"parameters and the working directory", []Param{{"IN", "/data/in"}}, "/work/p", []string{"/data/in", "/work/p"}},
		{"a missing path shows its nearest existing directory", []Param{{"OUT", "/data/out/new"}}, "", []string{"/data"}},
		{"what another entry holds is left out", []Param{{"IN", "/data/in"}, {"F", "/data/in/x"}}, "/data", []string{"/data"}},
		{"the host's /tmp is shown below /tmp, never /tmp itself", []Param{{"IN", "/tmp/t/in"}, {"N", "/tmp/none"}}, "", []string{"/tmp/t/in"}},
		{"system directories and / are not", []Param{{"B", "/usr/share"}, {"R", "/nowhere/at/all"}}, "/", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := learningView(tc.params, tc.cwd, host); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParamPath(t *testing.T) {
	cwd := t.TempDir()
	p := func(text string) tool.BoundParam {
		return tool.BoundParam{Name: "P", Text: text, Source: tool.SourceInput}
	}
	cases := []struct {
		param tool.BoundParam
		want  string
		ok    bool
	}{
		{p("/data/in/"), "/data/in", true},
		{p("~/notes"), "/home/u/notes", true},
		{p("."), cwd, true},
		{p("no-such-file"), "", false},
		{p("https://example.com/x"), "", false},
		{p("/"), "", false},
		{tool.BoundParam{Name: "P", Text: "/x"}, "", false}, // not given
	}
	for _, tc := range cases {
		got, ok := paramPath(tc.param, cwd, "/home/u")
		if got != tc.want || ok != tc.ok {
			t.Errorf("%q: got %q %v, want %q %v", tc.param.Text, got, ok, tc.want, tc.ok)
		}
	}
}

func TestLearningOnly(t *testing.T) {
	approvals := []string{"filesystem:read:/data", anyHost}
	if !learningOnly([]string{"tier:external_api", anyHost}, approvals) {
		t.Error("the learning view's grants and the tier are the learning run's")
	}
	if learningOnly([]string{"elevated"}, approvals) || learningOnly([]string{"env-inherit", "tier:write"}, approvals) {
		t.Error("elevated and env-inherit need their own approval")
	}
}
