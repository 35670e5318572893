package tool

import (
	"regexp"
	"sync"
)

// lazyRegexp compiles expr on first use. Package-level patterns compiled
// at start-up would cost every start of the CLI (and of each test run),
// while a run uses few of them.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
