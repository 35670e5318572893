package sandbox

// dag is the bookkeeping of a run's step graph, apart from running the
// steps (schedule): which step may start, which is skipped because a step
// it waits for failed, and what the steps came to. It starts nothing and
// waits for nothing, so its rules are table-tested (steps_dag_test.go).
type dag struct {
	names     []string
	deps      [][]int // per step, the steps it waits for (stepDeps)
	continues []bool  // per step, continue-on-error
	state     []stepState
	blockedBy []string       // per blocked step, the failed step that blocked it
	per       [][]StepResult // per step, its result then its sub-steps'
}

func newDAG(steps []JobStep, deps [][]int) *dag {
	g := &dag{deps: deps, state: make([]stepState, len(steps)), blockedBy: make([]string, len(steps)), per: make([][]StepResult, len(steps))}
	for _, st := range steps {
		g.names = append(g.names, st.Name)
		g.continues = append(g.continues, st.ContinueOnError)
	}
	return g
}

// next returns a pending step whose dependencies are all settled, and the
// failed step that blocks it ("" when none does); ok is false when no
// step is ready.
func (g *dag) next() (i int, blocker string, ok bool) {
	for i := range g.state {
		if g.state[i] != statePending {
			continue
		}
		ready, blocker := true, ""
		for _, j := range g.deps[i] {
			switch g.state[j] {
			case statePending, stateRunning:
				ready = false
			case stateBlocked:
				if blocker == "" {
					blocker = g.names[j]
					if g.blockedBy[j] != "" {
						blocker = g.blockedBy[j]
					}
				}
			}
		}
		if ready {
			return i, blocker, true
		}
	}
	return -1, "", false
}

// block settles step i without running it, as failed for its dependents:
// by is what blocked it, r its result.
func (g *dag) block(i int, by string, r StepResult) {
	g.state[i], g.blockedBy[i], g.per[i] = stateBlocked, by, []StepResult{r}
}

// settle settles step i without running it (skipped by its condition,
// or a condition error with continue-on-error): its dependents still run.
func (g *dag) settle(i int, r StepResult) {
	g.state[i], g.per[i] = stateDone, []StepResult{r}
}

// start marks step i running.
func (g *dag) start(i int) { g.state[i] = stateRunning }

// finish records what running step i came to: a failure without
// continue-on-error blocks its dependents.
func (g *dag) finish(i int, srs []StepResult) {
	g.per[i] = srs
	if srs[0].Status != StatusOK && !g.continues[i] {
		g.state[i] = stateBlocked
	} else {
		g.state[i] = stateDone
	}
}

// results are the steps' results in definition order (sub-steps after
// their step) and the first step, in that order, that failed without
// continue-on-error (nil when none did).
func (g *dag) results() ([]StepResult, *StepResult) {
	var all []StepResult
	var hardFail *StepResult
	for i := range g.per {
		all = append(all, g.per[i]...)
		sr := g.per[i][0]
		if sr.Skipped {
			continue
		}
		if sr.Status != StatusOK && !g.continues[i] && hardFail == nil {
			r := sr
			hardFail = &r
		}
	}
	return all, hardFail
}
