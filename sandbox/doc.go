// Package sandbox is the host controller: it builds a Plan from a bound
// tool and the policy's decisions, runs it on an isolation backend, enforces
// timeouts and output caps, collects the Result, writes run records, and
// always cleans up.
package sandbox
