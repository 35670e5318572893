package sbinit

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/sandboxed-dev/sandboxed/internal/reown"
)

// ReownFlag, after InitArg, starts the init binary as the helper that
// hands write grants over and back where sandboxed has no root (a reduced
// run without root: the grant's user and the sandbox's uid are both
// mapped only in a user namespace). The host starts it in a new user
// namespace, writes the maps, and then sends one reown.Job on its stdin
// and closes it; the helper, holding every capability of that namespace,
// runs it and writes a reown.JobResult on its stdout. An empty stdin is
// no job: the helper then only held its namespace for the host (whose
// descriptor of it outlives the helper).
//
//	host                                  helper (new user namespace)
//	start helper  ─────────────────────▶  blocks reading stdin
//	write the maps (newuidmap/gid)
//	Job on stdin, close  ──────────────▶  reown.Reown each path
//	                      ◀─────────────  JobResult on stdout, exit 0
const ReownFlag = "--reown"

// runReown is the helper: it never returns an error status for a failed
// path (the result says), only for a malformed job.
func runReown() int {
	b, err := io.ReadAll(io.LimitReader(os.Stdin, maxFrame))
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandboxed reown: read job:", err)
		return 1
	}
	if len(b) == 0 {
		return 0
	}
	var job reown.Job
	if err := json.Unmarshal(b, &job); err != nil {
		fmt.Fprintln(os.Stderr, "sandboxed reown: malformed job:", err)
		return 1
	}
	var res reown.JobResult
	for _, p := range job.Paths {
		r, err := reown.Reown(p, job.From, job.To)
		res.Reowned = append(res.Reowned, r)
		if err != nil && res.Error == "" {
			res.Error = err.Error()
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(&res); err != nil {
		return 1
	}
	return 0
}
