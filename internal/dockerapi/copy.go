package dockerapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/volume"
)

// The calls an engine that cannot see the caller's paths needs (the
// container tier from inside a CI container): volumes it owns, files
// copied into them, and the container's standard streams.

// VolumeCreate creates a volume.
func (c *Client) VolumeCreate(ctx context.Context, options volume.CreateOptions) (volume.Volume, error) {
	var out volume.Volume
	err := c.call(ctx, http.MethodPost, "/volumes/create", nil, options, &out)
	return out, err
}

// VolumeRemove removes a volume; force removes it even when the engine
// thinks it in use.
func (c *Client) VolumeRemove(ctx context.Context, volumeID string, force bool) error {
	q := url.Values{}
	if force {
		q.Set("force", "1")
	}
	return c.call(ctx, http.MethodDelete, "/volumes/"+url.PathEscape(volumeID), q, nil, nil)
}

// VolumeList lists volumes.
func (c *Client) VolumeList(ctx context.Context, options volume.ListOptions) (volume.ListResponse, error) {
	q, err := listQuery(false, options.Filters)
	if err != nil {
		return volume.ListResponse{}, err
	}
	var out volume.ListResponse
	err = c.call(ctx, http.MethodGet, "/volumes", q, nil, &out)
	return out, err
}

// CopyToContainer extracts the tar stream content into the directory
// dstPath of a container (created or running), as the engine's root.
func (c *Client) CopyToContainer(ctx context.Context, containerID, dstPath string, content io.Reader, options container.CopyToContainerOptions) error {
	q := url.Values{"path": {dstPath}}
	if !options.AllowOverwriteDirWithFile {
		q.Set("noOverwriteDirNonDir", "true")
	}
	if options.CopyUIDGID {
		q.Set("copyUIDGID", "true")
	}
	resp, err := c.do(ctx, http.MethodPut, "/containers/"+url.PathEscape(containerID)+"/archive", q, content, http.Header{"Content-Type": {"application/x-tar"}})
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// ContainerAttach attaches to a container's standard streams. The answer's
// Conn carries the container's standard input raw and, for a container
// without a terminal, its output multiplexed (github.com/docker/docker/pkg/stdcopy).
// The caller closes it.
func (c *Client) ContainerAttach(ctx context.Context, containerID string, options container.AttachOptions) (types.HijackedResponse, error) {
	q := url.Values{}
	for k, on := range map[string]bool{"stream": options.Stream, "stdin": options.Stdin, "stdout": options.Stdout, "stderr": options.Stderr, "logs": options.Logs} {
		if on {
			q.Set(k, "1")
		}
	}
	if options.DetachKeys != "" {
		q.Set("detachKeys", options.DetachKeys)
	}
	resp, err := c.do(ctx, http.MethodPost, "/containers/"+url.PathEscape(containerID)+"/attach", q, nil,
		http.Header{"Connection": {"Upgrade"}, "Upgrade": {"tcp"}})
	if err != nil {
		return types.HijackedResponse{}, err
	}
	rwc, ok := resp.Body.(io.ReadWriteCloser)
	if resp.StatusCode != http.StatusSwitchingProtocols || !ok {
		resp.Body.Close()
		return types.HijackedResponse{}, fmt.Errorf("attach to container %s: the engine answered %s, not a stream", containerID, resp.Status)
	}
	return types.NewHijackedResponse(&upgraded{rwc}, resp.Header.Get("Content-Type")), nil
}

// upgraded is the connection of an upgraded HTTP exchange, as a net.Conn:
// net/http hands it out as the response body, which has no addresses or
// deadlines (closing it ends a blocked read or write).
type upgraded struct{ io.ReadWriteCloser }

type engineAddr struct{}

func (engineAddr) Network() string { return "engine" }
func (engineAddr) String() string  { return "engine" }

func (*upgraded) LocalAddr() net.Addr              { return engineAddr{} }
func (*upgraded) RemoteAddr() net.Addr             { return engineAddr{} }
func (*upgraded) SetDeadline(time.Time) error      { return errors.ErrUnsupported }
func (*upgraded) SetReadDeadline(time.Time) error  { return errors.ErrUnsupported }
func (*upgraded) SetWriteDeadline(time.Time) error { return errors.ErrUnsupported }
