package images

import "errors"

var (
	// ErrNotFound: the image (or the base image) is not on the engine.
	ErrNotFound = errors.New("image not found")
	// ErrEngine: the Docker engine could not be reached.
	ErrEngine = errors.New("docker engine unreachable")
	// ErrBuild: making the base or building the image failed.
	ErrBuild = errors.New("image build failed")
)
