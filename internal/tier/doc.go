// Package tier owns the isolation tiers a tool may ask for (CYCOD's
// security.isolation) and a backend implements. Tool definitions, the
// policy, the plan and the backends use these values; nothing else spells
// them.
//
// The package is pure data: it imports nothing and makes no syscalls, so
// tool (which imports nothing else of sandboxed) and isolation (which
// must not import tool) can share it.
package tier
