// Package sandbox is the host controller: it builds a Plan from a bound
// tool and the policy's decisions, runs it on an isolation backend, enforces
// timeouts and output caps, collects the Result, writes run records, and
// always cleans up.
//
// Planning reads the host (GatherFacts, ResolveMounts, the policy's masks)
// and changes nothing; buildPlan makes the Plan from those facts with no
// system call. The Plan is complete when it is printed: the run starts by
// making what it names (the host directory, write grants' directories,
// the egress proxy from its egress section) and never adds to it. A run
// that needs the user's approval comes back from Prepare as data
// (PrepareError.Approvals); this package never asks anyone.
package sandbox
