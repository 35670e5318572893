// Package testenv decides, in one place, what a test does when the host
// lacks something it needs: root, the end-to-end opt-in, a Docker engine, a
// command, an address family.
//
// The rule is the project's: a developer's `go test ./...` passes anywhere,
// with no root and no Docker, because a test whose prerequisite is missing
// skips; under continuous integration (the CI variable set, see [CI]) the
// same test fails instead, so no test passes in CI by not running. Every
// prerequisite check in a test goes through [Need] or one of its wrappers
// ([NeedE2E], [NeedRoot], [NeedDocker], [NeedCommand]); a test never calls
// t.Skip itself.
//
// Two helpers are not prerequisites. [OptIn] gates measurements that
// assert nothing (benchmarks printed as ratios): they run only when asked
// for, in CI too, and skipping one hides no check. [Unprivileged] runs a
// piece of a test as an ordinary user even when the test runs as root, so
// a check of what a user is refused runs on root CI machines as well.
//
// The package is for tests only: nothing outside a _test.go file imports
// it.
package testenv
