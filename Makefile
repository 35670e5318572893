# sandboxed — build, test, benchmark.
GO        ?= go
BIN       ?= bin/sandboxed
# BIN is the one binary users install: every command, tier and backend
# (cmd/sandboxed); it works copied alone.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
export CGO_ENABLED := 0

.PHONY: build cross test unit e2e vm-test vm-image vagrant-validate cluster-up cluster-down bench lint fuzz clean

# The sandbox init is built first and embedded in the CLI (package
# isolation/initbin): each sandbox then starts a 3 MB init, not the whole CLI.
# Without the tag embedinit (a plain go build or go install) the CLI runs
# itself as the init: the same sandboxes, a few ms slower to start.
INITBIN   := isolation/initbin/sandboxed-init

build:
	$(GO) build -trimpath -ldflags '-s -w' -o $(INITBIN) ./cmd/sandboxed-init
	sha256sum $(INITBIN) | cut -c1-64 > $(INITBIN).sha256
	$(GO) build -tags embedinit,urfave_cli_no_docs -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/sandboxed

# The other platforms sandboxed is built for: macOS (arm64 and amd64; the
# container tier through the user's Docker engine, every other tier
# refuses) and arm64 Linux. CI builds each (.ci/run); nothing is kept.
CROSS     ?= darwin/arm64 darwin/amd64 linux/arm64

cross:
	@for t in $(CROSS); do \
		echo "GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build ./cmd/sandboxed"; \
		GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build -trimpath -o /dev/null ./cmd/sandboxed || exit 1; \
	done
	@# The macOS stubs and their tests (each tier refuses there, with why)
	@# compile and vet too; e2e is Linux's alone.
	GOOS=darwin GOARCH=arm64 $(GO) vet $$(GOOS=darwin $(GO) list ./... | grep -v /e2e)

# The README's test command. Unit tests everywhere; the e2e suite also runs
# when SANDBOXED_E2E=1 (root, a real kernel, a Docker engine).
# With SANDBOXED_E2E=1 packages run one at a time: the e2e suite checks
# that nothing of any run is left on the host, and the backends' own root
# tests make sandboxes too. SKIP is a -skip pattern for every package:
# .ci/run leaves out on its host the tests that need systemd as the init,
# which run in the VM (vm-test).
test: build
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 75m $(if $(filter 1,$(SANDBOXED_E2E)),-p 1) $(if $(SKIP),-skip '$(SKIP)') ./...

unit:
	$(GO) test -count=1 ./...

e2e: build
	SANDBOXED_E2E=1 $(GO) test -count=1 -timeout 60m -v ./e2e/

# The tests that need cgroup v2 and systemd (real v2 cgroups, the process
# backend, the e2e suite on the process tier) in a Debian 12 VM under QEMU.
# Root, qemu-system-x86 and debootstrap; the image is cached in
# /var/cache/sandboxed-vm (see .ci/vm/run.sh for its settings).
vm-test:
	bash .ci/vm/run.sh

vm-image:
	bash .ci/vm/build-image.sh

# Checks the Vagrantfile (Debian's vagrant and vagrant-libvirt packages);
# no box is needed.
vagrant-validate:
	VAGRANT_DEFAULT_PROVIDER=libvirt vagrant validate

# The test cluster: a real single-node Kubernetes cluster on this machine
# for the Kubernetes backend's tests (root; docs/development.md, "The test cluster").
# Its admin kubeconfig is written to .cluster/kubeconfig. The Kubernetes
# binaries are built once per release into /var/cache/sandboxed-k8s.
cluster-up:
	bash .ci/cluster/cluster.sh up $(CURDIR)

cluster-down:
	bash .ci/cluster/cluster.sh down $(CURDIR)

bench: build
	$(GO) run ./internal/bench -bin $(BIN) $(if $(BENCH_USER),-user $(BENCH_USER))

lint:
	$(GO) vet ./...
	@if command -v staticcheck >/dev/null 2>&1; then staticcheck ./...; else \
		echo "staticcheck not installed: go install honnef.co/go/tools/cmd/staticcheck@latest"; fi

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzLoad -fuzztime 60s ./tool
	$(GO) test -run '^$$' -fuzz FuzzSubstitute -fuzztime 60s ./tool
	$(GO) test -run '^$$' -fuzz FuzzParsePreamble -fuzztime 60s ./isolation/egress/relay

clean:
	rm -rf bin $(INITBIN) $(INITBIN).sha256
