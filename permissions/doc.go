// Package permissions turns a bound tool's required-permissions into grants
// (mounts, egress rules, loopback forwards, environment variables) and says
// in plain words what each grant lets the tool do.
//
// It owns the meaning of the permission grammar (tool.ParsePermission owns
// its syntax): `~` expansion, making paths absolute against the working
// directory, cleaning, the port default of network grants, and the
// canonical form of every grant. A network:external grant whose host was
// substituted as a URL (https://jira.example.com/path) is read as that
// URL's host and port.
//
// It is pure: it makes no syscalls. Resolving symlinks on the host, and
// creating a missing directory for a write grant, happen in the sandbox
// package, which fills Mount.Resolved before the policy decides.
package permissions
