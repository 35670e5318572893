package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/sandboxed-dev/sandboxed/sandbox"
)

// A run's captured output is a resource: sandboxed://runs/RUN/STREAM,
// STREAM stdout or stderr, read from the run record, a piece at a time
// with ?offset=N&length=M (resources/read has no paging of its own).
const (
	outputScheme      = "sandboxed"
	outputURITemplate = "sandboxed://runs/{run}/{stream}{?offset,length}"
	// maxOutputPiece bounds one read, whatever length asks for.
	maxOutputPiece = 1 << 20
)

// isRunID reports whether s has the shape of sandbox.NewRunID's ids
// (20060102T150405-0123456789ab): nothing else names a run directory, so
// no path can be smuggled in as a run.
func isRunID(s string) bool {
	if len(s) != len("20060102T150405-0123456789ab") {
		return false
	}
	for i, c := range []byte(s) {
		var ok bool
		switch {
		case i == 8:
			ok = c == 'T'
		case i == 15:
			ok = c == '-'
		case i < 15:
			ok = c >= '0' && c <= '9'
		default:
			ok = c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
		}
		if !ok {
			return false
		}
	}
	return true
}

// outputStore reads the run records of one state directory for a client
// of uid: a record that uid does not own is not found.
type outputStore struct {
	stateDir string
	uid      int
	// piece is the default length of a read (the output budget).
	piece int
}

// outputURI is the URI of stream (stdout or stderr) of run runID.
func outputURI(runID, stream string) string {
	return fmt.Sprintf("%s://runs/%s/%s", outputScheme, runID, stream)
}

// template is the resource template clients page through output with.
func (o *outputStore) template() *mcp.ResourceTemplate {
	return &mcp.ResourceTemplate{
		URITemplate: outputURITemplate,
		Name:        "run-output",
		Title:       "Output of a sandboxed run",
		Description: fmt.Sprintf("The stdout or stderr of a call, as its run record keeps it (a call's result links to it). "+
			"offset and length (bytes; default length %d, at most %d) read a part; the result's _meta says the size and the next offset.", o.piece, maxOutputPiece),
		MIMEType: "text/plain",
	}
}

// links is the outputLinks of callResult over this store.
func (o *outputStore) links(runID, stream string) (string, int64, bool) {
	if o.stateDir == "" {
		return "", 0, false
	}
	fi, err := os.Lstat(sandbox.RunDir(o.stateDir, runID) + "/" + stream)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		return "", 0, false
	}
	return outputURI(runID, stream), fi.Size(), true
}

// outputRequest is a parsed output URI.
type outputRequest struct {
	run, stream    string
	offset, length int64
}

func (o *outputStore) parse(uri string) (outputRequest, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != outputScheme || u.Host != "runs" {
		return outputRequest{}, fmt.Errorf("%s is not a run's output (%s://runs/RUN/stdout or stderr)", uri, outputScheme)
	}
	run, stream, ok := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if !ok || !isRunID(run) || (stream != "stdout" && stream != "stderr") {
		return outputRequest{}, fmt.Errorf("%s is not a run's output (%s://runs/RUN/stdout or stderr)", uri, outputScheme)
	}
	r := outputRequest{run: run, stream: stream, length: int64(o.piece)}
	q := u.Query()
	for name, dst := range map[string]*int64{"offset": &r.offset, "length": &r.length} {
		v := q.Get(name)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return outputRequest{}, fmt.Errorf("%s: %s=%q is not a number of bytes", uri, name, v)
		}
		*dst = n
	}
	if r.length == 0 || r.length > maxOutputPiece {
		r.length = maxOutputPiece
	}
	return r, nil
}

// read serves resources/read of an output URI.
func (o *outputStore) read(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	r, err := o.parse(uri)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	piece, size, err := o.readPiece(r)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return nil, fmt.Errorf("read %s: %w", uri, err)
	}
	meta := mcp.Meta{"offset": r.offset, "length": len(piece), "size": size}
	if next := r.offset + int64(len(piece)); next < size {
		meta["next"] = fmt.Sprintf("%s?offset=%d&length=%d", outputURI(r.run, r.stream), next, r.length)
	}
	if len(piece) >= freeAfter {
		giveMemoryBack()
	}
	c := &mcp.ResourceContents{URI: uri, MIMEType: "text/plain", Meta: meta}
	if utf8.Valid(piece) {
		c.Text = string(piece)
	} else {
		c.MIMEType, c.Blob = "application/octet-stream", piece
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}

// readPiece reads r's part of the record, ending it at a rune boundary
// unless it ends the file, and returns it with the file's size. Neither
// the run directory nor the file may be a symbolic link, and the file
// must be the client's.
func (o *outputStore) readPiece(r outputRequest) ([]byte, int64, error) {
	dfd, err := unix.Open(sandbox.RunDir(o.stateDir, r.run), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0, notExist(err)
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat(dfd, r.stream, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, notExist(err)
	}
	f := os.NewFile(uintptr(fd), r.stream)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, 0, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != o.uid {
		return nil, 0, os.ErrNotExist // not a record this client may read
	}
	size := st.Size
	if r.offset >= size {
		return nil, size, nil
	}
	n := min(r.length, size-r.offset)
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, r.offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, err
	}
	buf = buf[:got]
	if r.offset+int64(got) < size && !utf8.Valid(buf) {
		// Not the end: a rune cut in two is left to the next piece.
		for i := 1; i < utf8.UTFMax && i < len(buf); i++ {
			if utf8.Valid(buf[:len(buf)-i]) {
				buf = buf[:len(buf)-i]
				break
			}
		}
	}
	return buf, size, nil
}

// notExist makes a missing record (or one that is a link) os.ErrNotExist.
func notExist(err error) error {
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return os.ErrNotExist
	}
	return err
}
