package egress

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"
)

// chunked reads b in pieces of the given sizes.
type chunked struct {
	b     []byte
	sizes []byte
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(c.sizes) > 0 {
		n = int(c.sizes[0]%7) + 1
		c.sizes = c.sizes[1:]
	}
	n = min(n, len(c.b), len(p))
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}

func scrubAll(t *testing.T, s *scrubber, body, sizes []byte) []byte {
	t.Helper()
	r := &scrubReader{ReadCloser: io.NopCloser(&chunked{b: body, sizes: sizes}), s: s}
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestScrubReader(t *testing.T) {
	s := newScrubber([]Credential{{Value: "SECRET", StandIn: "stand-in"}, {Value: "SECRET2", StandIn: "other"}})
	for _, body := range []string{"", "no value", "SECRET", "xSECRETx", "SECSECRET", "SECRE", "aSECRET2b", "SECRETSECRET"} {
		got := scrubAll(t, s, []byte(body), nil)
		if bytes.Contains(got, []byte("SECRET")) && body != "SECRE" {
			t.Errorf("%q -> %q", body, got)
		}
	}
	if got := scrubAll(t, s, []byte("aSECRET2b"), nil); string(got) != "aotherb" {
		t.Errorf("the longer value must win: %q", got)
	}
	if got := scrubAll(t, s, []byte("aSECREb"), nil); string(got) != "aSECREb" {
		t.Errorf("a partial value changed: %q", got)
	}
	r := &scrubReader{ReadCloser: io.NopCloser(iotest.OneByteReader(bytes.NewReader([]byte("..SECRET..")))), s: s}
	if err := iotest.TestReader(r, []byte("..stand-in..")); err != nil {
		t.Error(err)
	}
}

// FuzzScrubReader: however the body is cut into reads, the result is the
// body with every value replaced, as if replaced at once.
func FuzzScrubReader(f *testing.F) {
	f.Add([]byte("xxSECRETyySECRETzz"), []byte{1, 2, 3})
	f.Add([]byte("SECRESECRET"), []byte{5})
	f.Fuzz(func(t *testing.T, body, sizes []byte) {
		s := newScrubber([]Credential{{Value: "SECRET", StandIn: "stand-in-1"}})
		got := scrubAll(t, s, body, sizes)
		want := bytes.ReplaceAll(body, []byte("SECRET"), []byte("stand-in-1"))
		if !bytes.Equal(got, want) {
			t.Fatalf("body %q: got %q, want %q", body, got, want)
		}
	})
}
