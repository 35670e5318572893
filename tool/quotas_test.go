package tool

import (
	"strings"
	"testing"
	"time"
)

func TestLoadQuotas(t *testing.T) {
	base := "name: q\ndescription: d\nbash: echo\nsandboxed:\n  quotas:\n"
	d, err := Parse([]byte(base+"    - host: api.example.com\n      requests: 10\n      bytes: 1MB\n      window: 1m\n"), "q.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := Quota{Host: "api.example.com", Requests: 10, Bytes: 1 << 20, Window: time.Minute}
	if got := d.Sandboxed.Quotas; len(got) != 1 || got[0] != want {
		t.Errorf("quotas %+v, want %+v", got, want)
	}
	for yml, msg := range map[string]string{
		"    - host: api.example.com\n":                     "quota caps nothing",
		"    - requests: 3\n":                               "quota has no host",
		"    - host: \"*\"\n      requests: 3\n":            "",
		"    - host: a.test\n      requests: 0\n":           "at least 1",
		"    - host: a.test\n      requests: 1\n      x: 1": "",
	} {
		_, err := Parse([]byte(base+yml), "q.yaml")
		if err == nil || msg != "" && !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want an error saying %q", yml, err, msg)
		}
	}
}
