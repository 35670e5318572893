// Package images builds and lists the runner image of the container tier.
//
// The image is Dockerfile.runner (at the repository's top, embedded in the
// binary) built through the Docker Engine API on a base image. The base is
// either an image the operator names (--base) or one made here from local
// files and the host's configured Debian mirror: a bookworm minbase root
// filesystem made by debootstrap with the runner's packages, tarred, cached
// under the cache directory and imported with ImageImport. No registry is
// ever contacted and no build step uses the network.
//
// Every image it makes carries labels (LabelKind, LabelHash, LabelBase); the
// hash covers Dockerfile.runner, the package list and the base image id, so
// a build of an up-to-date image does nothing.
//
// This package talks to the Docker engine and runs debootstrap, apt-get and
// tar on the host; it never shells out to the docker CLI and it knows
// nothing of tools, policies or runs.
package images
