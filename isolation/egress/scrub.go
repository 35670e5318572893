package egress

import (
	"bytes"
	"io"
	"net/http"
	"sort"
	"strings"
)

// scrubber puts the stand-ins back where a response to a request that
// carried real values holds them (a server that echoes a token): the real
// value of a credential never reaches the sandbox. It reads response
// header values and bodies as they are sent; a body the server compressed
// (Content-Encoding) is passed as it is, which the controller's redaction
// of results, records and audit lines still covers.
type scrubber struct {
	old, new [][]byte
}

func newScrubber(creds []Credential) *scrubber {
	if len(creds) == 0 {
		return nil
	}
	creds = append([]Credential(nil), creds...)
	// Longer values first: one that begins with another wins.
	sort.SliceStable(creds, func(i, j int) bool { return len(creds[i].Value) > len(creds[j].Value) })
	s := &scrubber{}
	for _, c := range creds {
		s.old = append(s.old, []byte(c.Value))
		s.new = append(s.new, []byte(c.StandIn))
	}
	return s
}

// text puts the stand-ins back in s.
func (s *scrubber) text(t string) string {
	if s == nil {
		return t
	}
	for j, o := range s.old {
		t = strings.ReplaceAll(t, string(o), string(s.new[j]))
	}
	return t
}

// response scrubs the header and wraps the body of resp. A body whose
// length changes is sent chunked (HTTP/1.1) or ended by closing the
// connection (HTTP/1.0).
func (s *scrubber) response(resp *http.Response, req *http.Request) {
	if s == nil {
		return
	}
	for name, vs := range resp.Header {
		for i, v := range vs {
			vs[i] = s.text(v)
		}
		resp.Header[name] = vs
	}
	if resp.Body == nil || resp.Body == http.NoBody || resp.ContentLength == 0 || req.Method == http.MethodHead {
		return
	}
	resp.Body = &scrubReader{ReadCloser: resp.Body, s: s}
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	if req.ProtoAtLeast(1, 1) {
		resp.TransferEncoding = []string{"chunked"}
	} else {
		resp.TransferEncoding = nil
		resp.Close = true
	}
}

// scrubReader replaces the real values in a stream with their stand-ins,
// holding back only as many bytes as a value could still begin in.
type scrubReader struct {
	io.ReadCloser
	s    *scrubber
	in   []byte // read, not yet scanned
	out  []byte // scanned, not yet returned
	err  error
	tmp  [16 << 10]byte
	done bool
}

func (r *scrubReader) Read(p []byte) (int, error) {
	for len(r.out) == 0 {
		if r.done {
			return 0, r.err
		}
		n, err := r.ReadCloser.Read(r.tmp[:])
		r.in = append(r.in, r.tmp[:n]...)
		if err != nil {
			r.err, r.done = err, true
		}
		r.scan()
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
}

// scan moves what can be decided of in to out: every value found is
// replaced; bytes a value could still start at wait for more input
// unless the stream ended.
func (r *scrubReader) scan() {
	i := 0
	for i < len(r.in) {
		matched, undecided := false, false
		for j, o := range r.s.old {
			rest := r.in[i:]
			if bytes.HasPrefix(rest, o) {
				r.out = append(r.out, r.s.new[j]...)
				i += len(o)
				matched = true
				break
			}
			if !r.done && len(rest) < len(o) && bytes.HasPrefix(o, rest) {
				undecided = true // wait: this value (longer than the rest) may yet match
				break
			}
		}
		if matched {
			continue
		}
		if undecided {
			break
		}
		r.out = append(r.out, r.in[i])
		i++
	}
	r.in = append(r.in[:0], r.in[i:]...)
}
