package doccheck

import (
	"reflect"
	"testing"
)

func TestSlug(t *testing.T) {
	for title, want := range map[string]string{
		"The Kubernetes backend (`--backend kubernetes`)":        "the-kubernetes-backend---backend-kubernetes",
		"cgroup v2 and systemd: the test VM and the Vagrantfile": "cgroup-v2-and-systemd-the-test-vm-and-the-vagrantfile",
		"`sandboxed mcp`": "sandboxed-mcp",
		"Schemas beyond one type: `sandboxed.parameter-schemas`": "schemas-beyond-one-type-sandboxedparameter-schemas",
		"The container tier under gVisor (`runtime: runsc`)":     "the-container-tier-under-gvisor-runtime-runsc",
	} {
		if got := Slug(title); got != want {
			t.Errorf("Slug(%q) = %q, want %q", title, got, want)
		}
	}
	a := Anchors(Page{Path: "x.md", Text: "# A\n## B\n```\n# not a heading\n```\n## B\n"})
	if !a["a"] || !a["b"] || !a["b-1"] || a["not-a-heading"] {
		t.Errorf("anchors %v", a)
	}
}

func TestBlocksAndInvocations(t *testing.T) {
	p := Page{Path: "p.md", Text: "text `sandboxed run --json T` here\n\n```sh run\n" +
		"sandboxed run --json 'a b.yaml' X=1   # a comment\n" +
		"echo '{}' | sudo sandboxed tool validate x && ./bin/sandboxed version\n" +
		"make build\n```\n\n```yaml\nsandboxed: {}\n```\n\n```\nsandboxed doctor [--format table|json]\n```\n"}
	bs := Blocks(p)
	if len(bs) != 3 || !bs[0].Runnable || bs[0].Lang != "sh" || bs[0].Line != 4 || bs[1].Lang != "yaml" || bs[2].Lang != "" {
		t.Fatalf("blocks %+v", bs)
	}
	invs, err := Invocations(bs[0])
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, inv := range invs {
		got = append(got, append([]string{inv.Where, inv.Prog}, inv.Args...))
	}
	want := [][]string{
		{"p.md:4", "sandboxed", "run", "--json", "a b.yaml", "X=1"},
		{"p.md:5", "sandboxed", "tool", "validate", "x"},
		{"p.md:5", "./bin/sandboxed", "version"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("invocations\n got %q\nwant %q", got, want)
	}
	cmds, err := Commands(bs[0])
	if err != nil || len(cmds) != 3 || cmds[2].Text != "make build" {
		t.Errorf("commands %+v, %v", cmds, err)
	}
	syn := Synopses(p)
	if len(syn) != 2 || syn[0].Text != "doctor [--format table|json]" || syn[1].Text != "run --json T" || syn[1].Where != "p.md:1" {
		t.Errorf("synopses %+v", syn)
	}
	if _, err := Invocations(Block{Page: "p.md", Line: 1, Lang: "sh", Text: "sandboxed run 'unclosed\n"}); err == nil {
		t.Error("a block that is not shell parsed")
	}
}
