// Package learn is `sandboxed permissions learn`: it runs a tool once in a
// learning sandbox and drafts the least required-permissions that cover
// what the run did.
//
// The learning sandbox is an ordinary process-tier run (sandbox.Prepare
// and Controller.RunPrepared, recorded like any other) of a copy of the
// definition whose permissions are replaced by the learning view — the
// paths the tool's parameters name and the working directory, read-only —
// and any public host through the recording proxy, with the plan observed
// (isolation.Plan.Observe): the process tier then reports every path the
// run opened, wrote and executed (a seccomp user-notification filter) and
// lays a throwaway writable layer over the read-only grants, so nothing
// on the host changes. MakeDraft, which is pure and table-tested, turns
// those accesses and the proxy's records into permissions; Report.Write
// adds them to the definition's file in place (tool.AddPermissionsFile).
//
// It never decides policy: the operator's policy decides on the learning
// run like on any other, and the learning approval (ApproveLearn) only
// answers what the learning view itself asks for.
package learn
