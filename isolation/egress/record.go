package egress

import (
	"sort"
	"time"
)

// Protocol names how a connection reached the proxy.
type Protocol string

const (
	ProtoConnect   Protocol = "connect"   // HTTP CONNECT tunnel
	ProtoHTTP      Protocol = "http"      // plain HTTP forwarding
	ProtoSOCKS5    Protocol = "socks5"    // SOCKS5 CONNECT
	ProtoLocalhost Protocol = "localhost" // network:localhost forwarding
)

// Record is one connection attempt through the proxy. Plain HTTP requests
// to the same host and port over one client connection share a record,
// as they share one upstream connection.
type Record struct {
	Protocol Protocol `json:"protocol,omitempty"`
	// Host is the requested host as the client named it (normalised: lower
	// case, IP literals canonical); "127.0.0.1" for localhost forwarding.
	Host string `json:"host"`
	Port int    `json:"port"`
	// Addr is the address the proxy connected to, when it did.
	Addr    string  `json:"addr,omitempty"`
	Verdict Verdict `json:"verdict"`
	// Reason says which grant admitted the attempt or why it was refused.
	Reason string `json:"reason"`
	// Error is set when an admitted attempt failed (name not found,
	// connection refused, timeout).
	Error string `json:"error,omitempty"`
	// BytesUp and BytesDown count bytes written to and read from the
	// upstream connection (for plain HTTP, request and response heads
	// included).
	// Credentials name the credentials whose real values the proxy put
	// into requests of this connection.
	Credentials []string  `json:"credentials,omitempty"`
	BytesUp     int64     `json:"bytes_up"`
	BytesDown   int64     `json:"bytes_down"`
	Start       time.Time `json:"start"`
	DurationMS  int64     `json:"duration_ms"`
}

// addRecord stores a finished record, up to the configured limit.
func (p *Proxy) addRecord(r Record) {
	r.DurationMS = time.Since(r.Start).Milliseconds()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.records) >= p.cfg.MaxRecords {
		p.dropped++
		return
	}
	p.records = append(p.records, r)
}

// Records returns the finished connection attempts, oldest first. After
// Close it holds every attempt (up to Config.MaxRecords; see Dropped).
func (p *Proxy) Records() []Record {
	p.mu.Lock()
	out := append([]Record(nil), p.records...)
	p.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// Dropped is the number of attempts not kept because Config.MaxRecords
// was reached.
func (p *Proxy) Dropped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}
