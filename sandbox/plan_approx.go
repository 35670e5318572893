package sandbox

import (
	"fmt"
	"strings"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// approximationNotes say, for explain and the run's result, which fields
// of the plan's spec its tier honours only in part and how
// (Plan.Approximations), the fields of one mechanism together.
func approximationNotes(p *isolation.Plan) []string {
	var out []string
	var hows []string
	fields := map[string][]string{}
	for _, a := range p.Approximations {
		if _, ok := fields[a.How]; !ok {
			hows = append(hows, a.How)
		}
		fields[a.How] = append(fields[a.How], a.Field)
	}
	where := string(p.Tier) + " tier"
	if p.Backend == isolation.BackendKubernetes {
		where = "Kubernetes pod"
	}
	for _, how := range hows {
		out = append(out, fmt.Sprintf("approximated in the %s: %s: %s", where, strings.Join(fields[how], ", "), how))
	}
	return out
}
