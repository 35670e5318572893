package sandbox

import (
	"fmt"
	"io"
	"sync"
)

// DefaultBufferLimit is the default cap on each of stdout and stderr.
const DefaultBufferLimit = 10 << 20

// TruncationMarker ends output that hit its cap.
const TruncationMarker = "\n[sandboxed: output truncated at %d bytes]\n"

// capture keeps at most limit bytes of what is written to it and counts the
// rest, so a tool printing without end costs a bounded amount of memory.
// Writes never fail: a tool must not block or die because we stopped
// keeping its output. It optionally tees everything to a live writer.
type capture struct {
	mu        sync.Mutex
	limit     int64
	buf       []byte
	total     int64
	live      io.Writer // may be nil
	liveBroke bool
}

func newCapture(limit int64, live io.Writer) *capture {
	if limit <= 0 {
		limit = DefaultBufferLimit
	}
	return &capture{limit: limit, live: live}
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	if room := c.limit - int64(len(c.buf)); room > 0 {
		n := int64(len(p))
		if n > room {
			n = room
		}
		c.buf = append(c.buf, p[:n]...)
	}
	if c.live != nil && !c.liveBroke {
		if _, err := c.live.Write(p); err != nil {
			c.liveBroke = true
		}
	}
	return len(p), nil
}

// Truncated reports whether output was dropped.
func (c *capture) Truncated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total > c.limit
}

// String returns what was kept, with a marker when output was dropped.
func (c *capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.total > c.limit {
		return string(c.buf) + fmt.Sprintf(TruncationMarker, c.limit)
	}
	return string(c.buf)
}

// Bytes returns what was kept, without a marker.
func (c *capture) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.buf...)
}
