package e2e

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// junit is the part of a JUnit report CI systems read.
type junit struct {
	XMLName xml.Name `xml:"testsuites"`
	Suites  []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Cases    []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func readJUnit(t *testing.T, path string) junit {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var j junit
	if err := xml.Unmarshal(data, &j); err != nil {
		t.Fatalf("JUnit report does not parse: %v\n%s", err, data)
	}
	if len(j.Suites) != 1 {
		t.Fatalf("JUnit report has %d suites:\n%s", len(j.Suites), data)
	}
	return j
}

func TestToolTestExamples(t *testing.T) {
	forTiers(t, func(t *testing.T, tier string) {
		files, _ := filepath.Glob(filepath.Join("..", "examples", "tools", "*.yaml"))
		ran := 0
		for _, f := range files {
			data, _ := os.ReadFile(f)
			if !strings.Contains(string(data), "\ntests:") {
				continue
			}
			ran++
			abs, _ := filepath.Abs(f)
			dir := workdir(t, nil)
			report := filepath.Join(dir, "report.xml")
			c := sandboxed(t, dir, "tool", "test", abs, "--isolation", tier, "--junit", report)
			if c.code != 0 || !strings.Contains(c.stdout, "0 failed") || strings.Contains(c.stdout, "FAIL") {
				t.Errorf("tool test %s: exit %d\n%s%s", filepath.Base(f), c.code, c.stdout, c.stderr)
				continue
			}
			j := readJUnit(t, report)
			if j.Suites[0].Failures != 0 || j.Suites[0].Tests == 0 {
				t.Errorf("%s: JUnit %+v", filepath.Base(f), j.Suites[0])
			}
		}
		if ran < 4 {
			t.Errorf("only %d examples have tests", ran)
		}
	})
}

func TestToolTestFailingCase(t *testing.T) {
	begin(t)
	dir := workdir(t, nil)
	tool := writeFile(t, filepath.Join(dir, "greet.yaml"), `name: greet
description: writes a greeting file and prints it
bash: mkdir -p out && echo "Hello, {NAME}" > out/greeting.txt && cat out/greeting.txt
parameters:
  NAME:
    type: string
    description: who
    default: world
security:
  required-permissions: ["filesystem:write:./out"]
tags: [write]
tests:
  environment:
    SUITE_VAR: from-suite
  setup:
    - "echo seeded > seed.txt"
  cleanup:
    - "rm -f seed.txt"
  cases:
    - name: greets
      parameters:
        NAME: Ada
      expected:
        exit-code: 0
        output-contains: "Hello, Ada"
        file-exists: seed.txt
        file-contains:
          - path: out/greeting.txt
            text: "Hello, Ada"
    - name: wrong-expectations
      parameters:
        NAME: Bob
      expected:
        output-contains: "Hello, Zed"
        file-exists: out/missing.txt
      cleanup:
        - "rm -rf out"
`)
	report := filepath.Join(dir, "report.xml")
	c := sandboxed(t, dir, "tool", "test", tool, "--junit", report)
	if c.code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", c.code, c.stdout, c.stderr)
	}
	for _, want := range []string{
		"PASS  greets", "FAIL  wrong-expectations",
		`output-contains "Hello, Zed": not in the output`,
		`file-exists "out/missing.txt": it does not exist`,
		`output: "Hello, Bob"`, "1 passed, 1 failed",
	} {
		if !strings.Contains(c.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, c.stdout)
		}
	}
	j := readJUnit(t, report)
	s := j.Suites[0]
	if s.Name != "greet" || s.Tests != 2 || s.Failures != 1 || s.Cases[0].Failure != nil || s.Cases[1].Failure == nil ||
		!strings.Contains(s.Cases[1].Failure.Text, "Hello, Zed") {
		t.Errorf("JUnit %+v", s)
	}

	// One case by name; --json carries the cleanup that ran after the failure.
	c = sandboxed(t, dir, "tool", "test", tool, "--test", "wrong-expectations", "--json")
	if c.code != 1 {
		t.Fatalf("exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	var res struct {
		Cases []struct {
			Name    string `json:"name"`
			Passed  bool   `json:"passed"`
			Cleanup *struct {
				Status string `json:"status"`
				Steps  []struct {
					Name   string `json:"name"`
					Status string `json:"status"`
				} `json:"steps"`
			} `json:"cleanup"`
		} `json:"cases"`
	}
	if err := json.Unmarshal([]byte(c.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Cases) != 1 || res.Cases[0].Passed || res.Cases[0].Cleanup == nil || res.Cases[0].Cleanup.Status != "ok" ||
		len(res.Cases[0].Cleanup.Steps) != 2 {
		t.Errorf("result %s", c.stdout)
	}
	// Nothing of the tests is left in the caller's directory.
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("a test wrote into the caller's directory instead of its scratch directory")
	}
	if c := sandboxed(t, dir, "tool", "test", tool, "--test", "nope"); c.code != 2 {
		t.Errorf("unknown test: exit %d", c.code)
	}
}
