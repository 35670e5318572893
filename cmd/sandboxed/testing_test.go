package main

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxed-dev/sandboxed/sandbox"
)

func TestJUnitReport(t *testing.T) {
	res := &sandbox.SuiteResult{Tool: "t", Passed: 1, Failed: 1, DurationMS: 1500, Cases: []sandbox.CaseResult{
		{Name: "good", Passed: true, DurationMS: 10, Run: &sandbox.Result{Stdout: "ok\n"}},
		{Name: "bad", Failures: []string{`output-contains "x": not in the output`, "exit-code: want 0, got 1"},
			Run: &sandbox.Result{Stdout: "weird \x00\x1b bytes <&>\n"}},
	}}
	path := filepath.Join(t.TempDir(), "r.xml")
	if err := writeJUnitFile(path, res); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	var back junitSuites
	if err := xml.Unmarshal(data, &back); err != nil {
		t.Fatalf("report does not parse: %v\n%s", err, data)
	}
	s := back.Suites[0]
	if s.Name != "t" || s.Tests != 2 || s.Failures != 1 || len(s.Cases) != 2 {
		t.Fatalf("suite %+v", s)
	}
	if s.Cases[0].Failure != nil || s.Cases[1].Failure == nil || !strings.Contains(s.Cases[1].Failure.Text, "exit-code") {
		t.Errorf("cases %+v", s.Cases)
	}
	var out bytes.Buffer
	writeTestReport(&out, res, false)
	for _, want := range []string{"PASS  good", "FAIL  bad", "      exit-code: want 0, got 1", "output: ", "1 passed, 1 failed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
