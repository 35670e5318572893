package sandbox

import (
	"fmt"
	"strings"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// jobSteps turns the bound steps into the commands of a job: environment,
// working directory, output limits, scheduling, retry and fallback, the
// steps of use-tool sub-tools (subs, keyed by step path), and the
// resources.cleanup commands last.
func jobSteps(b *tool.Bound, env []string, toolCwd, callerCwd string, outputCap int64, subs map[string]*tool.Bound) ([]JobStep, error) {
	steps, err := boundJobSteps(b, env, toolCwd, callerCwd, outputCap, subs, "")
	if err != nil {
		return nil, err
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("tool %s has no command to run: %w", b.Def.Name, ErrPlan)
	}
	cleanups, err := cleanupSteps(b, env, toolCwd)
	if err != nil {
		return nil, err
	}
	return append(steps, cleanups...), nil
}

func boundJobSteps(b *tool.Bound, env []string, toolCwd, callerCwd string, outputCap int64, subs map[string]*tool.Bound, prefix string) ([]JobStep, error) {
	var steps []JobStep
	def := b.Def
	for i := range b.Steps {
		bs := &b.Steps[i]
		stepEnv := env
		if len(bs.Env) > 0 {
			m := map[string]string{}
			for _, kv := range env {
				k, v, _ := strings.Cut(kv, "=")
				m[k] = v
			}
			for k, v := range bs.Env {
				m[k] = v
			}
			stepEnv = sortedEnv(m)
		}
		cwd := toolCwd
		if bs.Cwd != "" {
			cwd = absUnder(callerCwd, bs.Cwd)
		}
		limit := int64(DefaultBufferLimit)
		if bs.Output != nil && bs.Output.BufferLimit > 0 {
			limit = bs.Output.BufferLimit
		}
		if outputCap > 0 && limit > outputCap {
			limit = outputCap
		}
		js := JobStep{
			Name:            bs.Name,
			Cmd:             isolation.Command{Name: prefix + bs.Name, Args: bs.Argv, Env: stepEnv, Cwd: cwd},
			Timeout:         bs.Timeout,
			BufferLimit:     limit,
			ContinueOnError: bs.ContinueOnError || def.IgnoreErrors,
			Bound:           bs,
			Parallel:        bs.Parallel,
			WaitFor:         bs.WaitFor,
			UseTool:         bs.UseTool,
		}
		if bs.Output != nil {
			js.Mode = bs.Output.Mode
		}
		if bs.RunCondition != "" {
			if err := bs.CheckCondition(); err != nil {
				return nil, fmt.Errorf("step %s: %w: %w", prefix+bs.Name, err, ErrPlan)
			}
			js.Condition = bs.EvalCondition
		}
		if bs.Retry != nil && bs.Retry.Attempts > 1 {
			js.Attempts, js.RetryDelay = bs.Retry.Attempts, bs.Retry.Delay
		}
		if bs.Fallback != nil {
			js.Fallback = bs.Fallback.Argv
		}
		switch {
		case bs.Input != "":
			js.Stdin = []byte(bs.Input)
		case def.Interactive:
			// No terminal reaches the sandbox: a prompt reads the default
			// response (or end of input) instead of waiting.
			resp := ""
			if def.InteractiveOptions != nil {
				resp = def.InteractiveOptions.DefaultResponse
			}
			js.Stdin = []byte(resp + "\n")
			js.Interactive = true
			if def.InteractiveOptions != nil {
				js.InputTimeout = def.InteractiveOptions.Timeout
			}
		}
		if bs.UseTool != "" {
			sub := subs[prefix+bs.Name]
			if sub == nil {
				return nil, fmt.Errorf("step %s: use-tool %s was not bound: %w", prefix+bs.Name, bs.UseTool, ErrPlan)
			}
			subCwd := toolCwd
			if sub.WorkingDirectory != "" {
				subCwd = absUnder(callerCwd, sub.WorkingDirectory)
			}
			subEnv := env
			if len(sub.Env) > 0 {
				m := map[string]string{}
				for _, kv := range env {
					k, v, _ := strings.Cut(kv, "=")
					m[k] = v
				}
				for k, v := range sub.Env {
					m[k] = v
				}
				subEnv = sortedEnv(m)
			}
			var err error
			if js.Sub, err = boundJobSteps(sub, subEnv, subCwd, callerCwd, outputCap, subs, prefix+bs.Name+"/"); err != nil {
				return nil, err
			}
			if len(js.Sub) == 0 {
				return nil, fmt.Errorf("step %s: use-tool %s has no command to run: %w", prefix+bs.Name, bs.UseTool, ErrPlan)
			}
		}
		steps = append(steps, js)
	}
	if _, err := stepDeps(steps); err != nil {
		return nil, err
	}
	return steps, nil
}

// cleanupSteps binds resources.cleanup final-command entries as shell
// commands with the run's parameters (escaped like any command). They run
// in the tool's working directory after every other step.
func cleanupSteps(b *tool.Bound, env []string, toolCwd string) ([]JobStep, error) {
	def := b.Def
	if def.Resources == nil || def.Resources.Cleanup == nil {
		return nil, nil
	}
	in := tool.Input{}
	for _, p := range b.Params {
		if p.Source == tool.SourceInput {
			in[p.Name] = p.Value
		}
	}
	var out []JobStep
	if temp := b.Builtin(tool.BuiltinTemp); def.Resources.Cleanup.DeleteTempFiles && temp != "" {
		// {TEMP} lies in the sandbox's private /tmp unless a grant maps it.
		out = append(out, JobStep{
			Name:        "delete-temp-files",
			Cmd:         isolation.Command{Name: "delete-temp-files", Args: []string{"rm", "-rf", "--", temp}, Env: env, Cwd: "/"},
			BufferLimit: 64 << 10,
			Cleanup:     true,
		})
	}
	for i, fc := range def.Resources.Cleanup.FinalCommands {
		d := *def
		d.Steps, d.Commands, d.Input = nil, nil, ""
		d.Exec = &tool.Exec{Kind: tool.ExecBash, Command: fc}
		d.Resources = nil
		cb, err := tool.Bind(&d, in, tool.BindEnv{ToolName: def.Name, Workspace: b.Builtin(tool.BuiltinWorkspace), Temp: b.Builtin(tool.BuiltinTemp)})
		if err != nil {
			return nil, fmt.Errorf("bind resources.cleanup final-command %d: %w", i+1, err)
		}
		name := "cleanup"
		if len(def.Resources.Cleanup.FinalCommands) > 1 {
			name = fmt.Sprintf("cleanup-%d", i+1)
		}
		out = append(out, JobStep{
			Name:        name,
			Cmd:         isolation.Command{Name: name, Args: cb.Steps[0].Argv, Env: env, Cwd: toolCwd},
			BufferLimit: 64 << 10,
			Cleanup:     true,
		})
	}
	return out, nil
}
