// Package explain reviews a tool for `sandboxed permissions explain`: it
// plans the run as `sandboxed run` would (sandbox.Prepare, which changes
// nothing on the host), or, for a run that cannot be planned, asks the
// planner for the sandbox it would make (sandbox.ReviewPlan), and turns
// that plan and the policy's decision into the input of
// permissions.Explain. It never re-derives what the planner decides
// (limits, mounts, environment, image): it reads them from the plan.
//
// It sits above sandbox because permissions, which renders the
// explanation, may not import sandbox. It runs nothing.
package explain
