package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// `run --dump-plan` prints the run's host directory and the egress
// proxy's rules: the plan is whole before it is printed.
func TestDumpPlanShowsHostDirAndEgress(t *testing.T) {
	home, pol := isolate(t)
	rt := filepath.Join(home, "rt")
	t.Setenv("SANDBOXED_RUNTIME_DIR", rt)
	def := writeTool(t, home, "fetch.yaml", "name: fetch\ndescription: fetches\nbash: curl -s http://api.example.com/\ntags: [read]\n"+
		"security:\n  required-permissions: [\"network:external:api.example.com:443\"]\n")
	t.Chdir(home)
	out, errOut, code := runApp(t, "run", "--dump-plan", "--approve", "all", "--policy", pol, filepath.Base(def))
	if code != 0 {
		t.Fatalf("run --dump-plan: exit %d: %s", code, errOut)
	}
	var doc struct {
		Plan struct {
			RunID   string `json:"run_id"`
			HostDir string `json:"host_dir"`
			Egress  *struct {
				ProxySocket string   `json:"proxy_socket"`
				ProxyPort   int      `json:"proxy_port"`
				Allow       []string `json:"allow"`
				Deny        []string `json:"deny"`
			} `json:"egress"`
		} `json:"plan"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("dump-plan output: %v\n%s", err, out)
	}
	p := doc.Plan
	if p.RunID == "" || p.HostDir != filepath.Join(rt, p.RunID) {
		t.Errorf("host_dir %q, want %q", p.HostDir, filepath.Join(rt, p.RunID))
	}
	if e := p.Egress; e == nil || e.ProxySocket != filepath.Join(p.HostDir, "egress.sock") || e.ProxyPort == 0 ||
		len(e.Allow) != 1 || e.Allow[0] != "network:external:api.example.com:443" || len(e.Deny) == 0 {
		t.Errorf("egress %+v", e)
	}
}
