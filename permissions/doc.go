// Package permissions turns a bound tool's required-permissions into grants
// (mounts, egress rules, environment variables) and explains them. It is
// pure: resolving symlinks on the host happens in the sandbox package.
package permissions
