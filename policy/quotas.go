package policy

import (
	"fmt"
	"time"
)

// QuotaRule caps what the egress proxy lets a tool send to the hosts a
// pattern matches: spec 003's external-API tier, "rate limiting, cost
// caps". A request (or an opaque tunnel) over a cap is refused with HTTP
// 429 and recorded as QUOTA_EXCEEDED.
type QuotaRule struct {
	// Host is a host pattern (a name, *.domain or *).
	Host HostPattern `yaml:"host"`
	// Requests caps the requests the proxy sees (plain HTTP and HTTPS it
	// terminates) and the tunnels it cannot look into; 0 is no cap.
	Requests int64 `yaml:"requests"`
	// Bytes caps the bytes up and down; 0 is no cap.
	Bytes Size `yaml:"bytes"`
	// Window is the sliding window the caps hold over, across every run
	// of the user (counted in the state directory); 0 caps each run.
	Window Duration `yaml:"window"`
}

// Quota is a QuotaRule as a decision carries it.
type Quota struct {
	Host     string        `json:"host"`
	Requests int64         `json:"requests,omitempty"`
	Bytes    int64         `json:"bytes,omitempty"`
	Window   time.Duration `json:"window,omitempty"`
	// Rule names the policy rule: quotas[N].
	Rule string `json:"rule"`
}

func (p *Policy) checkQuotas() error {
	for i, q := range p.Quotas {
		if q.Requests < 0 || q.Bytes < 0 || q.Window < 0 {
			return fmt.Errorf("quotas[%d]: requests, bytes and window must be 0 or above", i)
		}
		if q.Requests == 0 && q.Bytes == 0 {
			return fmt.Errorf("quotas[%d] (%s): give requests, bytes or both", i, q.Host)
		}
	}
	return nil
}

// decideQuotas are the policy's quotas, for the proxy of every run.
func (p *Policy) decideQuotas() []Quota {
	var out []Quota
	for i, q := range p.Quotas {
		out = append(out, Quota{Host: string(q.Host), Requests: q.Requests, Bytes: int64(q.Bytes), Window: time.Duration(q.Window), Rule: fmt.Sprintf("quotas[%d]", i)})
	}
	return out
}
