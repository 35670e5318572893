package sbinit

import (
	"reflect"
	"testing"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

func TestNewEgressRelay(t *testing.T) {
	for _, tc := range []struct {
		name string
		eg   *isolation.Egress
		want *EgressRelay
	}{
		{"no network", nil, nil},
		{"proxy only", &isolation.Egress{ProxySocket: "/run/x/egress.sock", ProxyPort: 3128},
			&EgressRelay{Port: 3128, Socket: isolation.SandboxSocket}},
		{"localhost ports", &isolation.Egress{ProxySocket: "/run/x/egress.sock", ProxyPort: 3128, LocalhostPorts: []int{5432}},
			&EgressRelay{Port: 3128, Socket: isolation.SandboxSocket, LocalhostPorts: []int{5432}}},
	} {
		if got := NewEgressRelay(tc.eg); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: NewEgressRelay = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
