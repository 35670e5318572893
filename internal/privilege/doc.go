// Package privilege owns the execution privileges a tool may ask for
// (CYCOD's security.execution-privilege) and a plan runs with. Tool
// definitions, the policy, the plan and both backends use these values;
// nothing else spells them.
//
// The package is pure data: it imports nothing and makes no syscalls, so
// tool (which imports nothing else of sandboxed) and isolation (which
// must not import tool) can share it.
package privilege
