// Package explain reviews a tool for `sandboxed permissions explain`: it
// plans the run as `sandboxed run` would (sandbox.Prepare, which changes
// nothing on the host), or, for a run that cannot be planned, asks the
// planner for the sandbox it would make (sandbox.ReviewPlan), and turns
// that plan and the policy's decision into the Explanation (Explain), the
// document `explain --json` prints (docs/explain.schema.json). It never
// re-derives what the planner decides (limits, mounts, environment,
// image): it reads them from the plan.
//
// It sits above sandbox so that it can read the plan and the policy's
// decision as they are; permissions keeps the permission grammar. It runs
// nothing.
package explain
