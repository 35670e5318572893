// Package images builds and lists the runner image of the container tier
// from Dockerfile.runner, FROM scratch on local files only.
package images
