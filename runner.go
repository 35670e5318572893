// Package sandboxed holds the files of the repository's top level that the
// binary carries inside it. It has no logic.
package sandboxed

import _ "embed"

// DockerfileRunner is Dockerfile.runner, the definition of the container
// tier's runner image. Package images builds it; its content is part of the
// image's content hash, so changing it makes `sandboxed images build`
// rebuild.
//
//go:embed Dockerfile.runner
var DockerfileRunner []byte
