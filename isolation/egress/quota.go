package egress

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sandboxed-dev/sandboxed/isolation"

	"github.com/sandboxed-dev/sandboxed/internal/netrule"
)

// QuotaExceeded is the verdict of a request or tunnel refused because a
// quota of its host is used up (spec 003's QUOTA_EXCEEDED).
const QuotaExceeded Verdict = "quota_exceeded"

// maxQuotaEvents bounds the events one quota file keeps; older ones are
// merged into one.
const maxQuotaEvents = 100000

// Quota is the plan's cap on what the hosts a pattern matches may be sent
// (isolation.Quota, where its fields are documented): the plan carries it
// and the proxy enforces it. The type lives in package isolation because
// the init links that package and must not link the proxy.
//
// The proxy counts what it sees: each request of plain HTTP and of hosts
// whose TLS it terminates (credentials, HTTP rules), and each connection
// of an opaque tunnel (CONNECT or SOCKS5 to any other host). Bytes are
// counted when a connection ends: a byte cap refuses the next request or
// tunnel once it is reached, and does not cut a transfer in flight.
type Quota = isolation.Quota

// quotaKey names a quota's state file: runs share it when their rules
// are the same.
func quotaKey(q Quota) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d\x00%d\x00%d", q.Rule, q.Host, q.Requests, q.Bytes, q.Window)))
	return hex.EncodeToString(h[:12])
}

// quotaEvent is one counted request or connection, or bytes.
type quotaEvent struct {
	T int64 `json:"t"` // unix nanoseconds
	N int64 `json:"n"` // requests or tunnels
	B int64 `json:"b"` // bytes
}

// quotas is the proxy's state of its quotas: this run's counts, and the
// directory of the shared ones.
type quotas struct {
	list []Quota
	dir  string
	mu   sync.Mutex
	run  []quotaEvent // one total per quota, for Window 0
}

func checkQuotas(cfg *Config) error {
	for i, q := range cfg.Quotas {
		n, err := netrule.ParseHost(q.Host)
		if err != nil {
			return fmt.Errorf("quota %s: %w", q.Rule, err)
		}
		cfg.Quotas[i].Host = n
		if q.Requests < 0 || q.Bytes < 0 || q.Window < 0 || q.Requests == 0 && q.Bytes == 0 {
			return fmt.Errorf("quota %s: want a cap of requests or bytes above 0, and a window of 0 or more: %w", q.Rule, ErrBadRule)
		}
		if q.Window > 0 && cfg.QuotaDir == "" {
			return fmt.Errorf("quota %s: a window across runs needs a quota directory: %w", q.Rule, ErrBadRule)
		}
	}
	return nil
}

// take counts one request or tunnel to t against every quota of t, and
// returns the refusal of the first one used up (nothing is counted then).
func (p *Proxy) takeQuota(t target) *refusal {
	qs := &p.quotas
	for i, q := range qs.list {
		if !hostMatch(q.Host, t) {
			continue
		}
		ok, used, err := qs.try(i, 1, 0, time.Now())
		if err != nil {
			// Fail closed: a count that cannot be kept is a cap reached.
			return &refusal{QuotaExceeded, fmt.Sprintf("quota %s: its count could not be kept (%v); refused", q.Rule, err)}
		}
		if !ok {
			return &refusal{QuotaExceeded, quotaReason(q, used)}
		}
	}
	return nil
}

// addQuotaBytes counts the bytes of a finished connection to host.
func (p *Proxy) addQuotaBytes(host string, n int64) {
	qs := &p.quotas
	if n <= 0 || len(qs.list) == 0 {
		return
	}
	t, err := netrule.ParseTarget(host)
	if err != nil {
		return
	}
	for i, q := range qs.list {
		if q.Bytes > 0 && hostMatch(q.Host, t) {
			_, _, _ = qs.try(i, 0, n, time.Now())
		}
	}
}

func quotaReason(q Quota, used quotaEvent) string {
	per := "in this run"
	if q.Window > 0 {
		per = "in the last " + q.Window.String() + " (all runs)"
	}
	if q.Requests > 0 && used.N >= q.Requests {
		return fmt.Sprintf("quota %s: %d requests to %s %s, the cap; refused", q.Rule, used.N, q.Host, per)
	}
	return fmt.Sprintf("quota %s: %d bytes to and from %s %s, the cap is %d; refused", q.Rule, used.B, q.Host, per, q.Bytes)
}

// try counts n requests and b bytes for quota i when a request (n > 0)
// still fits, or always for bytes alone (b > 0, n == 0); it returns
// whether it counted and what was used before.
func (qs *quotas) try(i int, n, b int64, now time.Time) (bool, quotaEvent, error) {
	q := qs.list[i]
	fits := func(used quotaEvent) bool {
		if n == 0 {
			return true
		}
		return (q.Requests == 0 || used.N+n <= q.Requests) && (q.Bytes == 0 || used.B < q.Bytes)
	}
	if q.Window == 0 {
		qs.mu.Lock()
		defer qs.mu.Unlock()
		used := qs.run[i]
		if !fits(used) {
			return false, used, nil
		}
		qs.run[i].N += n
		qs.run[i].B += b
		return true, used, nil
	}
	// Across runs: one file per quota, changed under an exclusive lock
	// of its own lock file, so concurrent runs count each event once.
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if err := os.MkdirAll(qs.dir, 0o700); err != nil {
		return false, quotaEvent{}, err
	}
	base := filepath.Join(qs.dir, quotaKey(q))
	unlock, err := lockFile(base + ".lock")
	if err != nil {
		return false, quotaEvent{}, err
	}
	defer unlock()
	var evs []quotaEvent
	if data, err := os.ReadFile(base + ".json"); err == nil {
		if err := json.Unmarshal(data, &evs); err != nil {
			evs = nil // a torn file starts over; it is rewritten whole below
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, quotaEvent{}, err
	}
	from := now.Add(-q.Window).UnixNano()
	kept := evs[:0]
	var used quotaEvent
	for _, e := range evs {
		if e.T >= from {
			kept = append(kept, e)
			used.N += e.N
			used.B += e.B
		}
	}
	if !fits(used) {
		return false, used, nil
	}
	kept = append(kept, quotaEvent{T: now.UnixNano(), N: n, B: b})
	if len(kept) > maxQuotaEvents {
		// Merge the oldest into one, at the time of the last merged: the
		// window frees them no earlier than it would have.
		m := kept[len(kept)-maxQuotaEvents]
		for _, e := range kept[:len(kept)-maxQuotaEvents] {
			m.N += e.N
			m.B += e.B
		}
		kept = append([]quotaEvent{m}, kept[len(kept)-maxQuotaEvents+1:]...)
	}
	data, err := json.Marshal(kept)
	if err != nil {
		return false, used, err
	}
	tmp := base + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return false, used, err
	}
	if err := os.Rename(tmp, base+".json"); err != nil {
		return false, used, err
	}
	return true, used, nil
}

// refuseQuota answers a request refused for a quota with 429 and records
// it.
func (p *Proxy) refuseQuota(w io.Writer, proto Protocol, t target, port int, what string, ref *refusal) {
	p.addRecord(Record{Protocol: proto, Host: t.String(), Port: port, Verdict: ref.verdict, Start: time.Now(), Reason: ref.reason})
	writeHTTPError(w, http.StatusTooManyRequests, "sandboxed egress proxy: refused "+what+"\nreason: "+ref.reason)
}

// QuotaCounts says how a quota of host is counted by a proxy that
// terminates TLS for the hosts inspected matches: "requests" (plain HTTP
// and terminated HTTPS), or "requests over http, connections over
// tunnels" for a host whose TLS passes through.
func QuotaCounts(host string, inspected []string) string {
	for _, h := range inspected {
		if h == host {
			return "requests (plain HTTP, and HTTPS whose TLS the proxy terminates)"
		}
	}
	return "requests over plain HTTP; each HTTPS or other tunnel counts as one connection (its TLS passes through)"
}
