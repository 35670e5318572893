package sandbox

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
	"github.com/sandboxed-dev/sandboxed/permissions"
)

// The plan carries the grants' rules as they are: an IPv6 grant with a
// port stays that address and port (joined as text without brackets, it
// had read back as another address on 80 and 443), and the JSON shows the
// permission strings.
func TestPlanEgressKeepsTypedRules(t *testing.T) {
	grants, err := permissions.Resolve([]string{"network:external:[2001:db8::1]:8443", "network:external:API.example.com.", "network:external:*.example.org:22"}, "/", "/root")
	if err != nil {
		t.Fatal(err)
	}
	e, err := planEgress(grants, []string{"169.254.169.254", "Metadata.Google.Internal."}, "/run/x")
	if err != nil {
		t.Fatal(err)
	}
	want := []netrule.Rule{{Host: "2001:db8::1", Port: 8443}, {Host: "api.example.com"}, {Host: "*.example.org", Port: 22}}
	if !slices.Equal(e.Allow, want) {
		t.Errorf("allow %+v, want %+v", e.Allow, want)
	}
	if !slices.Equal(e.Deny, []netrule.Rule{{Host: "169.254.169.254"}, {Host: "metadata.google.internal"}}) {
		t.Errorf("deny %+v", e.Deny)
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Allow []string `json:"allow"`
	}
	if err := json.Unmarshal(b, &back); err != nil || !slices.Equal(back.Allow, []string{
		"network:external:[2001:db8::1]:8443", "network:external:api.example.com", "network:external:*.example.org:22"}) {
		t.Errorf("plan JSON allow %v, %v", back.Allow, err)
	}
	if _, err := planEgress(grants, []string{"ex*ample.com"}, "/run/x"); err == nil {
		t.Error("a deny host the proxy cannot read was planned")
	}
}
