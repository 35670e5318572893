package tool

import (
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// References.
//
// Only {IDENT} and {IDENT.output}, {IDENT.error}, {IDENT.exit-code} are
// references, where IDENT is [A-Za-z_][A-Za-z0-9_-]*. Everything else in
// braces is left alone: shell ${VAR} (a '{' right after '$'), jq's {a: .b},
// {} and { .x }, awk's {print $1}, brace expansion {a,b}.
//
// What a reference may name depends on where it is:
//   - a declared parameter, anywhere;
//   - a built-in, anywhere: TOOL_NAME, WORKSPACE, TEMP; and DESCRIPTION in
//     function-calling.schema-generation.description-template only;
//   - a step's results, {STEP.output|error|exit-code}, inside steps only
//     (commands, fallback, with, input, environment, working-directory,
//     run-condition), and only of a step that comes before, or that the
//     step waits for (wait-for, transitively); a fallback may use its own
//     step's results.
// Parameter defaults and permissions are resolved before any step runs,
// so they cannot use step results; default references between parameters
// must not form a cycle. wait-for must not form a cycle either.

// builtinRefNames are the references that need no parameter.
var builtinRefNames = []string{"TOOL_NAME", "WORKSPACE", "TEMP"}

// stepResultNames are the results of a step a reference may name.
var stepResultNames = []string{"output", "error", "exit-code"}

// refSpan is one reference found in a text: Text[Off:End] is "{Name}" or
// "{Name.Prop}".
type refSpan struct {
	Off, End int
	Name     string
	Prop     string // "" for a parameter or built-in; else what follows the dot
}

func refIdentStart(c byte) bool {
	return c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

func refIdentChar(c byte) bool {
	return refIdentStart(c) || c >= '0' && c <= '9' || c == '-'
}

// scanRefs returns every reference in s, in order (see the rules above).
// References whose Prop is not one of stepResultNames are returned too; the
// caller decides whether IDENT names a step.
func scanRefs(s string) []refSpan {
	var out []refSpan
	for i := 0; i < len(s); i++ {
		if s[i] != '{' || i > 0 && s[i-1] == '$' {
			continue
		}
		j := i + 1
		if j >= len(s) || !refIdentStart(s[j]) {
			continue
		}
		for j < len(s) && refIdentChar(s[j]) {
			j++
		}
		name := s[i+1 : j]
		if j < len(s) && s[j] == '}' {
			out = append(out, refSpan{Off: i, End: j + 1, Name: name})
			i = j
			continue
		}
		if j < len(s) && s[j] == '.' {
			k := j + 1
			for k < len(s) && refIdentChar(s[k]) {
				k++
			}
			if k > j+1 && k < len(s) && s[k] == '}' {
				out = append(out, refSpan{Off: i, End: k + 1, Name: name, Prop: s[j+1 : k]})
				i = k
			}
		}
	}
	return out
}

// validate runs the checks that need the whole definition: references,
// wait-for, default cycles, names listed elsewhere.
func (l *defLoader) validate() {
	params := map[string]bool{}
	var paramNames []string
	for _, p := range l.def.Parameters {
		params[p.Name] = true
		paramNames = append(paramNames, p.Name)
	}
	sort.Strings(paramNames)

	waits := l.checkWaitFor()
	defaultEdges := map[string][]defaultEdge{}
	for _, s := range l.sites {
		for _, r := range scanRefs(s.text) {
			l.checkRef(s, r, params, paramNames, waits, defaultEdges)
		}
		if s.ctx.cmd != nil {
			l.checkQuoting(s)
		}
	}
	l.checkDefaultCycles(defaultEdges)

	for _, n := range l.sensitive {
		if n.Kind == yaml.ScalarNode && !params[n.Value] {
			l.errf(n, nearestNameHint(n.Value, paramNames, "list names declared under parameters:"),
				"sensitive parameter %s is not a declared parameter", n.Value)
		}
	}
	l.checkExposedParams(params, paramNames)
	l.checkParamSchemaNames(params, paramNames)
	l.checkCredentialVars()
	if l.def.Type != "alias" {
		for cn, keys := range l.testParams {
			for _, k := range keys {
				if k.Kind == yaml.ScalarNode && !params[k.Value] {
					l.errf(k, nearestNameHint(k.Value, paramNames, "declare it under parameters:"),
						"test at line %d sets %s, which is not a declared parameter", cn.Line, k.Value)
				}
			}
		}
	}
}

func nearestNameHint(name string, known []string, fallback string) string {
	best, bestD := "", 1<<30
	limit := max(2, len(name)/3)
	for _, k := range known {
		if diff := len(k) - len(name); diff > limit || -diff > limit {
			continue // too far apart to be a typo; skips the quadratic distance
		}
		if d := levenshtein(strings.ToLower(name), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" && bestD <= limit {
		return "did you mean " + best + "?"
	}
	return fallback
}

type defaultEdge struct {
	to  string
	pos Pos
}

func (l *defLoader) stepLabel(i int) string {
	if i >= 0 && i < len(l.def.Steps) && l.def.Steps[i].Name != "" {
		return "step " + l.def.Steps[i].Name
	}
	return fmt.Sprintf("step %d", i+1)
}

func (l *defLoader) checkRef(s textSite, r refSpan, params map[string]bool, paramNames []string, waits *waitGraph, defaultEdges map[string][]defaultEdge) {
	if len(l.diags) >= maxDiags {
		l.truncated = true // reporting has stopped; skip the work of building messages
		return
	}
	p := l.textPos(s.node, r.Off)
	where := s.ctx.what
	if s.ctx.step >= 0 {
		where += " of " + l.stepLabel(s.ctx.step)
	}
	text := s.text[r.Off:r.End]
	if r.Prop == "" {
		switch {
		case params[r.Name]:
			if s.ctx.param != "" {
				defaultEdges[s.ctx.param] = append(defaultEdges[s.ctx.param], defaultEdge{to: r.Name, pos: p})
			}
		case inList(builtinRefNames, r.Name):
		case r.Name == "DESCRIPTION" && s.ctx.desc:
		case r.Name == "DESCRIPTION":
			l.errAt(p, "declare a DESCRIPTION parameter, or use {DESCRIPTION} only in function-calling.schema-generation.description-template",
				"%s refers to {DESCRIPTION}, which is available only in description-template", where)
		default:
			if _, isStep := l.stepIndex[r.Name]; isStep {
				l.errAt(p, fmt.Sprintf("use {%s.output}, {%s.error} or {%s.exit-code}", r.Name, r.Name, r.Name),
					"%s refers to %s, which names a step, not a parameter", where, text)
				return
			}
			l.errAt(p, nearestNameHint(r.Name, paramNames, "declare it under parameters:, or use a built-in: "+strings.Join(builtinRefNames, ", ")+
				"; if the braces are code (awk, jq), put a space inside them: { "+r.Name+" }"),
				"%s refers to %s, which is not a declared parameter", where, text)
		}
		return
	}
	idx, isStep := l.stepIndex[r.Name]
	if !inList(stepResultNames, r.Prop) {
		if isStep {
			l.errAt(p, fmt.Sprintf("use {%s.output}, {%s.error} or {%s.exit-code}", r.Name, r.Name, r.Name),
				"%s refers to %s: a step has no result %q", where, text, r.Prop)
		}
		return // not a reference: {a.b} is left as written
	}
	switch {
	case s.ctx.param != "":
		l.errAt(p, "defaults are resolved before any step runs; use the step result in the step's command instead",
			"%s refers to %s: a parameter default cannot use step results", where, text)
		return
	case s.ctx.perm:
		l.errAt(p, "permissions are granted before any step runs; name a parameter or a fixed value",
			"%s refers to %s: a permission cannot use step results", where, text)
		return
	case !isStep:
		var steps []string
		for name := range l.stepIndex {
			steps = append(steps, name)
		}
		sort.Strings(steps)
		fallback := "step results are {STEP.output}, {STEP.error} and {STEP.exit-code} of a step named under steps:"
		if len(steps) > 0 {
			fallback = "steps are " + strings.Join(steps, ", ")
		}
		l.errAt(p, nearestNameHint(r.Name, steps, fallback), "%s refers to %s, but there is no step %s", where, text, r.Name)
		return
	case !s.ctx.steps:
		l.errAt(p, "step results can be used only inside steps: in a step's command, fallback, with, input, environment or run-condition",
			"%s refers to %s outside the steps", where, text)
		return
	case idx == s.ctx.step && !s.ctx.self:
		l.errAt(p, "a step's results exist only after it ran; use them in a later step", "%s refers to its own result %s", where, text)
	case idx > s.ctx.step && !waits.reaches(s.ctx.step, idx):
		l.errAt(p, fmt.Sprintf("move step %s before %s, or add it to wait-for", r.Name, l.stepLabel(s.ctx.step)),
			"%s refers to %s, but step %s comes later", where, text, r.Name)
	}
}

// waitGraph is the wait-for relation between steps (by index).
type waitGraph struct {
	adj  [][]int
	memo map[int]map[int]bool
}

// reaches reports whether step i waits, directly or not, for step j.
func (g *waitGraph) reaches(i, j int) bool {
	if seen, ok := g.memo[i]; ok {
		return seen[j]
	}
	seen := map[int]bool{}
	stack := append([]int(nil), g.adj[i]...)
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[v] {
			continue
		}
		seen[v] = true
		stack = append(stack, g.adj[v]...)
	}
	g.memo[i] = seen
	return seen[j]
}

// checkWaitFor checks each wait-for entry names another existing step and
// that wait-for has no cycle, and returns the wait-for graph.
func (l *defLoader) checkWaitFor() *waitGraph {
	n := len(l.def.Steps)
	adj := make([][]int, n)
	edgeNode := map[[2]int]*yaml.Node{}
	var names []string
	for name := range l.stepIndex {
		names = append(names, name)
	}
	sort.Strings(names)
	for i := 0; i < n; i++ {
		for _, item := range l.waitFor[i] {
			if item.Kind != yaml.ScalarNode {
				continue
			}
			j, ok := l.stepIndex[item.Value]
			switch {
			case !ok:
				l.errf(item, nearestNameHint(item.Value, names, "steps are "+strings.Join(names, ", ")),
					"%s waits for %s, but there is no step %s", l.stepLabel(i), item.Value, item.Value)
			case j == i:
				l.errf(item, "remove it from wait-for", "%s waits for itself", l.stepLabel(i))
			default:
				if _, dup := edgeNode[[2]int{i, j}]; !dup {
					adj[i] = append(adj[i], j)
					edgeNode[[2]int{i, j}] = item
				}
			}
		}
	}
	for _, cyc := range findGraphCycles(n, adj) {
		var path []string
		for _, v := range cyc {
			path = append(path, l.def.Steps[v].Name)
		}
		path = append(path, l.def.Steps[cyc[0]].Name)
		last := edgeNode[[2]int{cyc[len(cyc)-1], cyc[0]}]
		l.errf(last, "steps in a cycle wait for each other forever; remove one of these wait-for entries",
			"wait-for cycle: %s", strings.Join(path, " → "))
	}
	return &waitGraph{adj: adj, memo: map[int]map[int]bool{}}
}

// checkDefaultCycles reports defaults that refer to each other in a cycle
// ({A} defaults to "{B}", B to "./x/{A}"), which could never be resolved.
func (l *defLoader) checkDefaultCycles(edges map[string][]defaultEdge) {
	idx := map[string]int{}
	for i, p := range l.def.Parameters {
		idx[p.Name] = i
	}
	n := len(l.def.Parameters)
	adj := make([][]int, n)
	edgePos := map[[2]int]Pos{}
	for from, es := range edges {
		i, ok := idx[from]
		if !ok {
			continue
		}
		for _, e := range es {
			j := idx[e.to]
			if _, dup := edgePos[[2]int{i, j}]; !dup {
				adj[i] = append(adj[i], j)
				edgePos[[2]int{i, j}] = e.pos
			}
		}
	}
	for i := range adj {
		sort.Ints(adj[i])
	}
	for _, cyc := range findGraphCycles(n, adj) {
		var path []string
		for _, v := range cyc {
			path = append(path, l.def.Parameters[v].Name)
		}
		path = append(path, l.def.Parameters[cyc[0]].Name)
		pos := edgePos[[2]int{cyc[len(cyc)-1], cyc[0]}]
		l.errAt(pos, "break the cycle: give one of these parameters a default without references",
			"parameter defaults refer to each other in a cycle: %s", strings.Join(path, " → "))
	}
}

// findGraphCycles returns one cycle per back edge found by a depth-first search
// in node order, each as the nodes on it starting from the earliest
// (lowest-numbered) one, de-duplicated.
func findGraphCycles(n int, adj [][]int) [][]int {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, n)
	var stack []int
	var out [][]int
	seen := map[string]bool{}
	var visit func(v int)
	visit = func(v int) {
		color[v] = grey
		stack = append(stack, v)
		for _, w := range adj[v] {
			switch color[w] {
			case white:
				visit(w)
			case grey:
				// Back edge v -> w: the cycle is stack from w to v.
				start := 0
				for k := len(stack) - 1; k >= 0; k-- {
					if stack[k] == w {
						start = k
						break
					}
				}
				cyc := append([]int(nil), stack[start:]...)
				// Rotate so the cycle starts at its smallest node.
				m := 0
				for k := range cyc {
					if cyc[k] < cyc[m] {
						m = k
					}
				}
				cyc = append(cyc[m:], cyc[:m]...)
				key := fmt.Sprint(cyc)
				if !seen[key] {
					seen[key] = true
					out = append(out, cyc)
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[v] = black
	}
	for v := 0; v < n; v++ {
		if color[v] == white {
			visit(v)
		}
	}
	return out
}

// checkExposedParams checks sandboxed.exposed-as.parameters: each key is
// a declared parameter, and no two parameters are exposed under one name
// (a parameter not listed is exposed under its own name), so an argument
// binds to one parameter whichever of its names it is given under.
func (l *defLoader) checkExposedParams(params map[string]bool, paramNames []string) {
	n := l.exposedParams
	if n == nil || n.Kind != yaml.MappingNode {
		return
	}
	seen := map[string]string{} // exposed name -> parameter
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode {
			continue
		}
		if !params[k.Value] {
			if l.def.Type != "alias" {
				l.errf(k, nearestNameHint(k.Value, paramNames, "list names declared under parameters:"),
					"exposed-as names %s, which is not a declared parameter", k.Value)
			}
			continue
		}
		if params[v.Value] && v.Value != k.Value {
			l.errf(v, "give each parameter a name of its own", "parameter %s is exposed as %q, the name of parameter %s", k.Value, v.Value, v.Value)
			continue
		}
		if other, taken := seen[v.Value]; taken {
			l.errf(v, "give each parameter a name of its own", "parameters %s and %s are both exposed as %q", other, k.Value, v.Value)
			continue
		}
		seen[v.Value] = k.Value
	}
}

// checkQuoting refuses, where it stands, a reference to an escaped value
// that no value could be substituted for safely: in backticks or ${...}
// of a shell script, in a Python f-string or raw string, or anywhere in a
// script of an interpreter whose quoting sandboxed does not do. Binding
// would refuse every run of it with a value; validating says so first.
func (l *defLoader) checkQuoting(s textSite) {
	ex := s.ctx.cmd()
	if ex == nil {
		return
	}
	spec, err := specFor(l.def.Name, ex)
	if err != nil || spec.syntax == SyntaxArgv {
		return // cmd: and the like are said by CheckRunnable; run: words are always safe
	}
	escaped := map[string]bool{}
	for i := range l.def.Parameters {
		escaped[l.def.Parameters[i].Name] = l.def.Parameters[i].Escapes()
	}
	known := func(n string) bool {
		if e, ok := escaped[n]; ok {
			return e
		}
		if strings.Contains(n, ".") {
			return s.ctx.steps
		}
		return inList(builtinRefNames, n)
	}
	where := s.ctx.what
	if s.ctx.step >= 0 {
		where += " of " + l.stepLabel(s.ctx.step)
	}
	off := 0
	for _, p := range ParseTemplate(s.text, spec.syntax, known).pieces {
		at := off
		off += len(p.lit)
		if p.ref == "" {
			continue
		}
		param := p.ref
		if strings.Contains(param, ".") || inList(builtinRefNames, param) {
			param = ""
		}
		fix := "pass the value in environment.variables (NAME: \"{" + p.ref + "}\") and read it from the environment"
		if param != "" {
			fix += ", or set security.escape-shell: false on " + param + " and give it a validation pattern"
		}
		switch {
		case spec.interp != "":
			l.errAt(l.textPos(s.node, at), fix+"; sandboxed quotes values for bash, sh, pwsh and python",
				"%s: {%s} stands in a %s script, whose quoting sandboxed does not do, so no value can be substituted safely", where, p.ref, spec.interp)
		case p.ctx == ctxUnsupported:
			l.errAt(l.textPos(s.node, at), fix,
				"%s: {%s} is %s, where no value can be quoted safely", where, p.ref, p.why)
		}
	}
}

// checkParamSchemaNames checks that sandboxed.parameter-schemas names
// declared parameters only.
func (l *defLoader) checkParamSchemaNames(params map[string]bool, paramNames []string) {
	n := l.paramSchemaNode
	if n == nil || l.def.Type == "alias" {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; !params[k.Value] {
			l.errf(k, nearestNameHint(k.Value, paramNames, "list names declared under parameters:"),
				"parameter-schemas names %s, which is not a declared parameter", k.Value)
		}
	}
}

// checkCredentialVars refuses a credential whose variable the definition
// also sets or grants: the sandbox would hold the real value (env:NAME)
// or the stand-in would be lost (environment variables).
func (l *defLoader) checkCredentialVars() {
	d := l.def
	if d.Sandboxed == nil {
		return
	}
	for i, c := range d.Sandboxed.Credentials {
		if i >= len(l.credNodes) {
			break
		}
		name := c.VarName()
		for _, perm := range d.Security.RequiredPermissions {
			for _, v := range []string{name, c.Env} {
				if v != "" && perm == "env:"+v {
					l.errf(l.credNodes[i], "remove env:"+v+" from required-permissions: the credential gives the sandbox a stand-in, and the proxy the real value",
						"credential %s is also granted as env:%s, which would put the real value in the sandbox", name, v)
					break
				}
			}
		}
		sets := false
		for _, st := range d.Steps {
			_, inStep := st.Environment[name]
			sets = sets || inStep
		}
		if _, ok := d.Environment.varsOrNil()[name]; ok {
			sets = true
		}
		if sets {
			l.errf(l.credNodes[i], "remove "+name+" from environment variables: the sandbox gets the credential's stand-in under that name",
				"credential %s is also set as an environment variable", name)
		}
	}
}

func (e *Environment) varsOrNil() map[string]string {
	if e == nil {
		return nil
	}
	return e.Variables
}
