package sandbox

import (
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/permissions"
)

// GrantCovers is covers, for the external tests: whether a tool's grant c
// includes everything a step's grant s allows.
func GrantCovers(c, s permissions.Grant) bool { return covers(c, s) }

// PlanEgress is planEgress, for the external tests.
func PlanEgress(grants []permissions.Grant, deny []string) (*isolation.Egress, error) {
	return planEgress(grants, deny, "/run/sandboxed/RUN")
}
