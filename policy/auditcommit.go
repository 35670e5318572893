package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// auditCommitter group-commits the lines this process appends to one audit
// log. A caller queues its line and waits; a committer goroutine, started
// when the queue fills from empty and gone when it drains, takes every line
// queued so far, writes them with one write under the log's flock, fsyncs
// once and only then answers each of their callers with the result. Lines
// that arrive during a commit wait for the next one, so N concurrent appends
// cost about one fsync rather than N, and no caller is answered before the
// fsync covering its line has returned.
//
//	caller ──line──▶ pending ──(batch)──▶ flock, write, fsync, unlock ──err──▶ every caller of the batch
type auditCommitter struct {
	path string
	// sync makes the written lines durable: (*os.File).Sync; tests replace it.
	sync func(*os.File) error

	mu      sync.Mutex
	pending []auditAppend
	running bool // a committer goroutine owns the queue
	syncs   int  // fsyncs of the log made, for tests and the benchmark
}

type auditAppend struct {
	line []byte
	done chan<- error
}

// committers holds one auditCommitter per audit log path of this process.
var committers = struct {
	mu     sync.Mutex
	byPath map[string]*auditCommitter
}{byPath: map[string]*auditCommitter{}}

// committerFor returns the process's committer for the log at path (made
// absolute, so two spellings of one path share it).
func committerFor(path string) *auditCommitter {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	committers.mu.Lock()
	defer committers.mu.Unlock()
	c := committers.byPath[path]
	if c == nil {
		c = newAuditCommitter(path)
		committers.byPath[path] = c
	}
	return c
}

func newAuditCommitter(path string) *auditCommitter {
	return &auditCommitter{path: path, sync: (*os.File).Sync}
}

// append queues line (one whole JSON line, newline included) and returns
// the result of the commit that wrote and fsync'd it.
func (c *auditCommitter) append(line []byte) error {
	done := make(chan error, 1)
	c.mu.Lock()
	c.pending = append(c.pending, auditAppend{line: line, done: done})
	if !c.running {
		c.running = true
		go c.commitLoop()
	}
	c.mu.Unlock()
	return <-done
}

// commitLoop commits batches until the queue is empty.
func (c *auditCommitter) commitLoop() {
	for {
		c.mu.Lock()
		batch := c.pending
		c.pending = nil
		if len(batch) == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		err := c.commit(batch)
		for _, a := range batch {
			a.done <- err
		}
	}
}

// commit writes the lines of batch with one write under the log's flock and
// fsyncs the log (and its directory, when the log was created). Any error
// fails the whole batch: none of its lines is known to be on disk.
func (c *auditCommitter) commit(batch []auditAppend) error {
	var buf []byte
	for _, a := range batch {
		buf = append(buf, a.line...)
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
		return fmt.Errorf("create audit directory: %w", err)
	}
	f, created, err := openLocked(c.path, os.O_RDWR|os.O_APPEND)
	if err != nil {
		return err
	}
	defer closeLocked(f)
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat audit log %s: %w", c.path, err)
	}
	if fi.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, fi.Size()-1); err != nil {
			return fmt.Errorf("read audit log %s: %w", c.path, err)
		}
		if last[0] != '\n' { // a crashed writer's torn line: end it
			buf = append([]byte{'\n'}, buf...)
		}
	}
	if _, err := f.Write(buf); err != nil {
		return fmt.Errorf("append to audit log %s: %w", c.path, err)
	}
	c.mu.Lock()
	c.syncs++
	c.mu.Unlock()
	if err := c.sync(f); err != nil {
		return fmt.Errorf("sync audit log %s: %w", c.path, err)
	}
	if created {
		if err := syncDir(filepath.Dir(c.path)); err != nil {
			return err
		}
	}
	return nil
}
