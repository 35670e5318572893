package dockerapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/system"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// ContainerCreate creates a container named containerName.
func (c *Client) ContainerCreate(ctx context.Context, config *container.Config, hostConfig *container.HostConfig, networkingConfig *network.NetworkingConfig, platform *ocispec.Platform, containerName string) (container.CreateResponse, error) {
	var out container.CreateResponse
	q := url.Values{}
	if containerName != "" {
		q.Set("name", containerName)
	}
	if platform != nil {
		q.Set("platform", path.Join(platform.OS, platform.Architecture, platform.Variant))
	}
	if hostConfig != nil {
		hc := *hostConfig
		hc.CapAdd = normalizeCaps(hc.CapAdd)
		hc.CapDrop = normalizeCaps(hc.CapDrop)
		hostConfig = &hc
	}
	body := container.CreateRequest{Config: config, HostConfig: hostConfig, NetworkingConfig: networkingConfig}
	err := c.call(ctx, http.MethodPost, "/containers/create", q, body, &out)
	return out, err
}

// normalizeCaps spells capabilities as the engine wants them: CAP_ and
// upper case, ALL as is.
func normalizeCaps(caps []string) []string {
	var out []string
	for _, c := range caps {
		c = strings.ToUpper(strings.TrimSpace(c))
		if c != "ALL" && !strings.HasPrefix(c, "CAP_") {
			c = "CAP_" + c
		}
		out = append(out, c)
	}
	return out
}

// ContainerStart starts a created container.
func (c *Client) ContainerStart(ctx context.Context, containerID string, _ container.StartOptions) error {
	return c.call(ctx, http.MethodPost, "/containers/"+url.PathEscape(containerID)+"/start", nil, nil, nil)
}

// ContainerKill sends signal to a container's init.
func (c *Client) ContainerKill(ctx context.Context, containerID, signal string) error {
	q := url.Values{}
	if signal != "" {
		q.Set("signal", signal)
	}
	return c.call(ctx, http.MethodPost, "/containers/"+url.PathEscape(containerID)+"/kill", q, nil, nil)
}

// ContainerRemove removes a container.
func (c *Client) ContainerRemove(ctx context.Context, containerID string, options container.RemoveOptions) error {
	q := url.Values{}
	if options.RemoveVolumes {
		q.Set("v", "1")
	}
	if options.RemoveLinks {
		q.Set("link", "1")
	}
	if options.Force {
		q.Set("force", "1")
	}
	return c.call(ctx, http.MethodDelete, "/containers/"+url.PathEscape(containerID), q, nil, nil)
}

// ContainerInspect returns a container's state and configuration.
func (c *Client) ContainerInspect(ctx context.Context, containerID string) (container.InspectResponse, error) {
	var out container.InspectResponse
	err := c.call(ctx, http.MethodGet, "/containers/"+url.PathEscape(containerID)+"/json", nil, nil, &out)
	return out, err
}

// ContainerList lists containers.
func (c *Client) ContainerList(ctx context.Context, options container.ListOptions) ([]container.Summary, error) {
	q, err := listQuery(options.All, options.Filters)
	if err != nil {
		return nil, err
	}
	var out []container.Summary
	err = c.call(ctx, http.MethodGet, "/containers/json", q, nil, &out)
	return out, err
}

// ImageInspect returns an image's configuration.
func (c *Client) ImageInspect(ctx context.Context, ref string) (image.InspectResponse, error) {
	var out image.InspectResponse
	if ref == "" {
		return out, &Error{Status: http.StatusNotFound, Message: "no such image: (empty name)", kind: statusKind(http.StatusNotFound)}
	}
	err := c.call(ctx, http.MethodGet, "/images/"+ref+"/json", nil, nil, &out)
	return out, err
}

// ImageList lists images.
func (c *Client) ImageList(ctx context.Context, options image.ListOptions) ([]image.Summary, error) {
	q, err := listQuery(options.All, options.Filters)
	if err != nil {
		return nil, err
	}
	var out []image.Summary
	err = c.call(ctx, http.MethodGet, "/images/json", q, nil, &out)
	return out, err
}

// ImageImport makes an image from a root filesystem tarball; the caller
// reads the engine's progress messages from the returned stream and closes
// it.
func (c *Client) ImageImport(ctx context.Context, source image.ImportSource, ref string, options image.ImportOptions) (io.ReadCloser, error) {
	q := url.Values{}
	if source.SourceName != "" {
		q.Set("fromSrc", source.SourceName)
	}
	if ref != "" {
		q.Set("repo", ref)
	}
	if options.Tag != "" {
		q.Set("tag", options.Tag)
	}
	if options.Message != "" {
		q.Set("message", options.Message)
	}
	if options.Platform != "" {
		q.Set("platform", strings.ToLower(options.Platform))
	}
	for _, ch := range options.Changes {
		q.Add("changes", ch)
	}
	resp, err := c.do(ctx, http.MethodPost, "/images/create", q, readerOf(source.Source), nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// ImageBuild builds an image from a tar build context; the caller reads
// the engine's progress messages from the response's body and closes it.
// Only the options sandboxed uses are sent: tags, Dockerfile, build
// arguments, labels, rm and forcerm, network mode and the builder version.
func (c *Client) ImageBuild(ctx context.Context, buildContext io.Reader, options build.ImageBuildOptions) (build.ImageBuildResponse, error) {
	q := url.Values{}
	q["t"] = options.Tags
	if options.Dockerfile != "" {
		q.Set("dockerfile", options.Dockerfile)
	}
	if !options.Remove {
		q.Set("rm", "0")
	}
	if options.ForceRemove {
		q.Set("forcerm", "1")
	}
	if options.NoCache {
		q.Set("nocache", "1")
	}
	if options.NetworkMode != "" && options.NetworkMode != "default" {
		q.Set("networkmode", options.NetworkMode)
	}
	if options.Version != "" {
		q.Set("version", string(options.Version))
	}
	for name, m := range map[string]any{"buildargs": options.BuildArgs, "labels": options.Labels} {
		js, err := json.Marshal(m)
		if err != nil {
			return build.ImageBuildResponse{}, err
		}
		q.Set(name, string(js))
	}
	resp, err := c.do(ctx, http.MethodPost, "/build", q, readerOf(buildContext), http.Header{"Content-Type": {"application/x-tar"}})
	if err != nil {
		return build.ImageBuildResponse{}, err
	}
	return build.ImageBuildResponse{Body: resp.Body, OSType: resp.Header.Get("Ostype")}, nil
}

// readerOf keeps a nil reader nil (do would otherwise encode it as JSON).
func readerOf(r io.Reader) any {
	if r == nil {
		return nil
	}
	return r
}

// ImageRemove removes an image.
func (c *Client) ImageRemove(ctx context.Context, ref string, options image.RemoveOptions) ([]image.DeleteResponse, error) {
	q := url.Values{}
	if options.Force {
		q.Set("force", "1")
	}
	if !options.PruneChildren {
		q.Set("noprune", "1")
	}
	var out []image.DeleteResponse
	err := c.call(ctx, http.MethodDelete, "/images/"+ref, q, nil, &out)
	return out, err
}

// Info returns the engine's system information.
func (c *Client) Info(ctx context.Context) (system.Info, error) {
	var out system.Info
	err := c.call(ctx, http.MethodGet, "/info", nil, nil, &out)
	return out, err
}

// ServerVersion returns the engine's version information.
func (c *Client) ServerVersion(ctx context.Context) (types.Version, error) {
	var out types.Version
	err := c.call(ctx, http.MethodGet, "/version", nil, nil, &out)
	return out, err
}

// Ping asks the engine whether it is up, and for its API version.
func (c *Client) Ping(ctx context.Context) (types.Ping, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/_ping", nil)
	if err != nil {
		return types.Ping{}, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return types.Ping{}, c.connErr(ctx, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode >= 400 {
		return types.Ping{}, &Error{Status: resp.StatusCode, Message: http.StatusText(resp.StatusCode), kind: statusKind(resp.StatusCode)}
	}
	return types.Ping{APIVersion: resp.Header.Get("Api-Version"), OSType: resp.Header.Get("Ostype")}, nil
}

// ContainerUpdate changes a container's resources (limits) and restart
// policy.
func (c *Client) ContainerUpdate(ctx context.Context, containerID string, updateConfig container.UpdateConfig) (container.UpdateResponse, error) {
	var out container.UpdateResponse
	err := c.call(ctx, http.MethodPost, "/containers/"+url.PathEscape(containerID)+"/update", nil, updateConfig, &out)
	return out, err
}

// listQuery is the query of a list call: every object or only running
// ones, and the filters as the engine reads them.
func listQuery(all bool, f filters.Args) (url.Values, error) {
	q := url.Values{}
	if all {
		q.Set("all", "1")
	}
	if f.Len() > 0 {
		js, err := filters.ToJSON(f)
		if err != nil {
			return nil, err
		}
		q.Set("filters", js)
	}
	return q, nil
}
