package policy

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/sandboxed-dev/sandboxed/tool"
)

// CommandRules are the commands a tool may run when its command comes
// from its caller (a parameter substituted with escape-shell: false, as a
// `bash {COMMAND}` tool does): spec 003's execute tier, "command
// whitelisting". They are matched on the parsed command — every simple
// command of it, in pipelines, lists, subshells and command
// substitutions, and the script of `bash -c '…'` — never on its text.
// A policy with no rules judges no command.
type CommandRules struct {
	// Allow: when any is given, every simple command must match one.
	Allow []CommandRule `yaml:"allow"`
	// Deny: a simple command that matches one is refused. Deny wins.
	Deny []CommandRule `yaml:"deny"`
}

// CommandRule is one command prefix, with examples checked when the
// policy loads (as Codex's prefix_rule files).
type CommandRule struct {
	// Prefix is the leading words of a simple command, written as a shell
	// command ("git status", "rm -rf"). The first word matches the
	// program's base name unless it holds a '/'.
	Prefix string `yaml:"prefix"`
	// Match are commands the rule must match; NotMatch commands it must not.
	Match    []string `yaml:"match"`
	NotMatch []string `yaml:"not-match"`
}

// ItemCommand is an Item about a command that holds the caller's text.
const ItemCommand ItemKind = "command"

// wrappers run a command the rules cannot see (their arguments, a file,
// stdin): they are refused unless an allow rule names them.
var wrappers = map[string]bool{
	"eval": true, "exec": true, "source": true, ".": true, "env": true, "command": true, "builtin": true,
	"xargs": true, "nohup": true, "nice": true, "timeout": true, "stdbuf": true, "setsid": true, "time": true,
	"sudo": true, "doas": true, "su": true, "busybox": true, "watch": true, "parallel": true, "flock": true,
	"chroot": true, "unshare": true, "nsenter": true, "strace": true, "ltrace": true, "script": true,
}

// builtins are shell builtins that run no program and reach nothing
// outside the shell: an allow list need not name them (deny rules still
// apply).
var builtins = map[string]bool{
	"cd": true, "echo": true, "printf": true, "true": true, "false": true, "test": true, "[": true,
	"pwd": true, ":": true, "exit": true, "return": true, "shift": true, "read": true, "wait": true,
}

// shells are unwrapped when called with -c and a literal script.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true, "busybox-sh": true}

// maxUnwrap bounds the nesting of `bash -c` scripts the rules look into.
const maxUnwrap = 8

// cmdWord is one word of a simple command: its value when it is a literal
// (quotes removed), else lit is false.
type cmdWord struct {
	val string
	lit bool
}

// simpleCommand is one simple command found in a script.
type simpleCommand struct {
	words []cmdWord
	text  string // as written, for messages
	// unwrapped: a shell whose -c script was parsed in its place; the
	// rules judge that script's commands, and deny rules this one too.
	unwrapped bool
	// opaque: a shell with -c whose script is not a literal.
	opaque bool
}

func (c simpleCommand) name() string {
	if len(c.words) == 0 || !c.words[0].lit {
		return ""
	}
	return path.Base(c.words[0].val)
}

// parseCommands returns every simple command of script, looking into the
// scripts of `sh -c` and its kin. A script the parser cannot read is an
// error: what cannot be read cannot be judged.
func parseCommands(script string, lang syntax.LangVariant) ([]simpleCommand, error) {
	return parseCommandsDepth(script, lang, 0)
}

func parseCommandsDepth(script string, lang syntax.LangVariant, depth int) ([]simpleCommand, error) {
	if depth > maxUnwrap {
		return nil, fmt.Errorf("shell scripts nested more than %d deep", maxUnwrap)
	}
	f, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(script), "")
	if err != nil {
		return nil, err
	}
	var out []simpleCommand
	var werr error
	syntax.Walk(f, func(n syntax.Node) bool {
		ce, ok := n.(*syntax.CallExpr)
		if !ok || len(ce.Args) == 0 || werr != nil {
			return werr == nil
		}
		sc := simpleCommand{text: nodeText(script, ce)}
		for _, w := range ce.Args {
			v, lit := literal(w)
			sc.words = append(sc.words, cmdWord{v, lit})
		}
		var inner []simpleCommand
		if shells[sc.name()] {
			if src, ok := shellScript(sc); ok {
				cs, err := parseCommandsDepth(src, syntax.LangBash, depth+1)
				if err != nil {
					werr = fmt.Errorf("the script of %q: %w", sc.text, err)
					return false
				}
				sc.unwrapped, inner = true, cs
			} else {
				// A shell that reads a script from a variable, a file or
				// stdin (curl … | sh) runs what the rules cannot see.
				sc.opaque = true
			}
		}
		out = append(append(out, sc), inner...)
		return true
	})
	return out, werr
}

// shellScript returns the script of `sh -c SCRIPT …` when SCRIPT is a
// literal; ok is false for every other call of a shell.
func shellScript(sc simpleCommand) (script string, ok bool) {
	for i := 1; i < len(sc.words); i++ {
		w := sc.words[i]
		if !w.lit || !strings.HasPrefix(w.val, "-") || strings.HasPrefix(w.val, "--") {
			return "", false
		}
		if strings.Contains(w.val, "c") {
			if i+1 < len(sc.words) && sc.words[i+1].lit {
				return sc.words[i+1].val, true
			}
			return "", false
		}
	}
	return "", false
}

func nodeText(src string, n syntax.Node) string {
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	if s < 0 || e > len(src) || s > e {
		return ""
	}
	return src[s:e]
}

// literal returns a word's value when nothing in it expands: no
// parameter, command or arithmetic expansion, no glob or brace characters
// outside quotes, no $'…'.
func literal(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, "*?[{~") {
				return "", false
			}
			b.WriteString(unescape(p.Value, ""))
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(unescape(l.Value, "\"\\$`\n"))
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// unescape removes the backslashes of an unquoted literal (only escapes
// lists the characters a backslash escapes, as inside double quotes).
func unescape(s, only string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (only == "" || strings.IndexByte(only, s[i+1]) >= 0) {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// compiledCommandRule is a CommandRule's prefix as words.
type compiledCommandRule struct {
	list   string // commands.allow or commands.deny
	index  int
	prefix []string
}

func (r compiledCommandRule) name() string {
	return fmt.Sprintf("%s[%d] %s", r.list, r.index, strings.Join(r.prefix, " "))
}

// matches reports whether the rule's prefix leads the simple command. A
// deny rule counts a word that expands as matching (it may become the
// word the rule names); an allow rule needs every word literal.
func (r compiledCommandRule) matches(c simpleCommand, deny bool) bool {
	if len(c.words) < len(r.prefix) {
		return false
	}
	for i, p := range r.prefix {
		w := c.words[i]
		if !w.lit {
			if deny {
				continue
			}
			return false
		}
		v := w.val
		if i == 0 && !strings.Contains(p, "/") {
			v = path.Base(v)
		}
		if v != p {
			return false
		}
	}
	return true
}

// compileCommandRule reads a prefix as one simple command of literal words.
func compileCommandRule(list string, i int, r CommandRule) (compiledCommandRule, error) {
	cs, err := parseCommands(r.Prefix, syntax.LangBash)
	if err != nil {
		return compiledCommandRule{}, fmt.Errorf("%s[%d].prefix %q: %v", list, i, r.Prefix, err)
	}
	if len(cs) != 1 || strings.TrimSpace(cs[0].text) != strings.TrimSpace(r.Prefix) {
		return compiledCommandRule{}, fmt.Errorf("%s[%d].prefix %q: write one simple command (words, no pipes, lists or redirections)", list, i, r.Prefix)
	}
	out := compiledCommandRule{list: list, index: i}
	for _, w := range cs[0].words {
		if !w.lit {
			return compiledCommandRule{}, fmt.Errorf("%s[%d].prefix %q: write literal words (no $, globs or braces)", list, i, r.Prefix)
		}
		out.prefix = append(out.prefix, w.val)
	}
	return out, nil
}

// compiledCommands are a policy's command rules, compiled.
type compiledCommands struct {
	allow, deny []compiledCommandRule
}

func (p *Policy) compileCommands() (compiledCommands, error) {
	var c compiledCommands
	for _, l := range []struct {
		name  string
		rules []CommandRule
		out   *[]compiledCommandRule
	}{{"commands.allow", p.Commands.Allow, &c.allow}, {"commands.deny", p.Commands.Deny, &c.deny}} {
		for i, r := range l.rules {
			cr, err := compileCommandRule(l.name, i, r)
			if err != nil {
				return c, err
			}
			*l.out = append(*l.out, cr)
		}
	}
	return c, nil
}

// checkExamples checks each rule's match and not-match examples: the rule
// alone must match some simple command of each match example and none of
// each not-match example.
func (c compiledCommands) checkExamples(p *Policy) error {
	for _, l := range []struct {
		rules []CommandRule
		comp  []compiledCommandRule
		deny  bool
	}{{p.Commands.Allow, c.allow, false}, {p.Commands.Deny, c.deny, true}} {
		for i, r := range l.rules {
			cr := l.comp[i]
			for _, ex := range r.Match {
				hit, err := cr.matchesScript(ex, l.deny)
				if err != nil {
					return fmt.Errorf("%s.match %q: %v", cr.name(), ex, err)
				}
				if !hit {
					return fmt.Errorf("%s: the example %q does not match it; fix the prefix or the example", cr.name(), ex)
				}
			}
			for _, ex := range r.NotMatch {
				hit, err := cr.matchesScript(ex, l.deny)
				if err != nil {
					return fmt.Errorf("%s.not-match %q: %v", cr.name(), ex, err)
				}
				if hit {
					return fmt.Errorf("%s: the example %q matches it, but is listed under not-match; fix the prefix or the example", cr.name(), ex)
				}
			}
		}
	}
	return nil
}

func (r compiledCommandRule) matchesScript(script string, deny bool) (bool, error) {
	cs, err := parseCommands(script, syntax.LangBash)
	if err != nil {
		return false, err
	}
	for _, sc := range cs {
		if r.matches(sc, deny) {
			return true, nil
		}
	}
	return false, nil
}

// HasCommandRules reports whether the policy judges the commands of tools
// whose command comes from their caller.
func (p *Policy) HasCommandRules() bool {
	return len(p.Commands.Allow)+len(p.Commands.Deny) > 0
}

// CallerCommand is one command of a run that holds text from the caller
// (a parameter substituted unescaped), for the command rules.
type CallerCommand struct {
	// Step names the step ("" for a single-command tool).
	Step string
	// Text is the command as the shell will read it.
	Text string
	// Shell is sh, bash, or another language (refused: not judged).
	Shell string
	// Params are the unescaped parameters it holds.
	Params []string
}

// decideCommands judges each caller command against the command rules:
// one Item per command, denied with the rule that refuses it.
func (p *Policy) decideCommands(cmds []CallerCommand) []Item {
	if !p.HasCommandRules() || len(cmds) == 0 {
		return nil
	}
	rules, err := p.compileCommands()
	var items []Item
	for _, cmd := range cmds {
		subject := "command"
		if cmd.Step != "" {
			subject = "command of step " + cmd.Step
		}
		it := Item{Subject: subject, Kind: ItemCommand, Risk: RiskHigh,
			Description: fmt.Sprintf("runs %q, which holds the caller's text (%s)", cmd.Text, strings.Join(cmd.Params, ", "))}
		deny := func(rule, reason, fix string) {
			it.Verdict, it.Rule, it.Reason, it.PolicyFix = Deny, rule, reason, fix
		}
		switch {
		case err != nil:
			deny("commands", "the command rules do not compile: "+err.Error(), "fix the policy's commands")
		case cmd.Shell != "sh" && cmd.Shell != "bash" && len(rules.allow) > 0:
			deny("default: command rules judge sh and bash only", "a "+cmd.Shell+" command cannot be parsed by the command rules, and commands.allow admits only what they match", "run the tool's caller command in bash")
		case cmd.Shell != "sh" && cmd.Shell != "bash":
			it.Verdict, it.Rule = Allow, "default: command rules judge sh and bash only"
			it.Reason = "a " + cmd.Shell + " command is not judged by the deny rules (commands.allow would refuse it)"
		default:
			it = rules.judge(it, cmd)
		}
		items = append(items, it)
	}
	return items
}

// judge decides one command: deny rules first, then what cannot be
// judged, then the allow rules (when there are any).
func (c compiledCommands) judge(it Item, cmd CallerCommand) Item {
	lang := syntax.LangBash
	if cmd.Shell == "sh" {
		lang = syntax.LangPOSIX
	}
	cs, err := parseCommands(cmd.Text, lang)
	if err != nil {
		it.Verdict, it.Rule = Deny, "default: a command the rules cannot parse is refused"
		it.Reason = "the command does not parse: " + err.Error()
		return it
	}
	var used []string
	for _, sc := range cs {
		if sc.name() == "" {
			it.Verdict, it.Rule = Deny, "default: a command word that expands is refused"
			it.Reason = fmt.Sprintf("in %q the program is not a literal word: what runs is known only when it runs", sc.text)
			it.PolicyFix = "none: name the program literally"
			return it
		}
		for _, r := range c.deny {
			if r.matches(sc, true) {
				it.Verdict, it.Rule = Deny, r.name()
				it.Reason = fmt.Sprintf("%q is denied", sc.text)
				it.PolicyFix = "remove the rule from commands.deny (not recommended)"
				return it
			}
		}
		if sc.unwrapped {
			continue // its script's commands are judged
		}
		name := sc.name()
		var allowedBy *compiledCommandRule
		for i := range c.allow {
			if c.allow[i].matches(sc, false) {
				allowedBy = &c.allow[i]
				break
			}
		}
		switch {
		case (wrappers[name] || findExec(sc) || sc.opaque) && (allowedBy == nil || allowedBy.prefix[0] != name && path.Base(allowedBy.prefix[0]) != name):
			it.Verdict, it.Rule = Deny, "default: a command that runs other commands is refused unless allowed by name"
			it.Reason = fmt.Sprintf("%q runs a command the rules cannot see", sc.text)
			it.PolicyFix = "commands.allow: [{prefix: " + name + "}] (it then runs whatever it is given)"
			return it
		case allowedBy == nil && len(c.allow) > 0 && !builtins[name]:
			it.Verdict, it.Rule = Deny, "default: commands no commands.allow rule matches are refused"
			it.Reason = fmt.Sprintf("%q matches no commands.allow rule", sc.text)
			it.PolicyFix = "commands.allow: [{prefix: " + name + "}]"
			return it
		}
		if allowedBy != nil && !containsString(used, allowedBy.name()) {
			used = append(used, allowedBy.name())
		}
	}
	it.Verdict = Allow
	if len(used) > 0 {
		it.Rule, it.Reason = strings.Join(used, ", "), "every command it runs matches an allow rule"
	} else {
		it.Rule, it.Reason = "commands.deny", "no command it runs matches a deny rule"
	}
	return it
}

// findExec reports a find that runs commands of its own (-exec, -ok).
func findExec(sc simpleCommand) bool {
	if sc.name() != "find" {
		return false
	}
	for _, w := range sc.words[1:] {
		switch w.val {
		case "-exec", "-execdir", "-ok", "-okdir":
			return true
		}
		if !w.lit {
			return true
		}
	}
	return false
}

// DefaultCommandDeny are the built-in commands.deny: the programs that
// ask for another user's rights. None works in a sandbox (no_new_privs, no
// setuid); a caller that asks for one is refused with the rule rather than
// left to fail inside.
func DefaultCommandDeny() []CommandRule {
	return []CommandRule{
		{Prefix: "sudo", Match: []string{"sudo rm -rf /", "bash -c 'sudo id'"}, NotMatch: []string{"echo sudo"}},
		{Prefix: "su", Match: []string{"su -c id root"}, NotMatch: []string{"sum file"}},
		{Prefix: "doas", Match: []string{"doas id"}, NotMatch: []string{}},
	}
}

// callerParams are the parameters of def that escape-shell: false lets
// into its commands as written.
func callerParams(def *tool.Definition) []string {
	var out []string
	for _, p := range def.Parameters {
		if !p.Escapes() {
			out = append(out, p.Name)
		}
	}
	return out
}

// commandNotes say which command rules judge the run's caller commands,
// for explain and the run's notes: the verdict of each, or, before the
// tool is bound, that they will.
func (p *Policy) commandNotes(req Request, items []Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, fmt.Sprintf("command rules: %s is %s by %s: %s", it.Subject, verdictWord(it.Verdict), it.Rule, it.Reason))
	}
	if len(items) > 0 || len(req.CallerParams) == 0 {
		return out
	}
	if !p.HasCommandRules() {
		return append(out, fmt.Sprintf("command rules: none in the policy, so the commands %s put together are not judged (commands.allow, commands.deny)", strings.Join(req.CallerParams, ", ")))
	}
	var rules []string
	for i, r := range p.Commands.Deny {
		rules = append(rules, fmt.Sprintf("commands.deny[%d] %s", i, r.Prefix))
	}
	for i, r := range p.Commands.Allow {
		rules = append(rules, fmt.Sprintf("commands.allow[%d] %s", i, r.Prefix))
	}
	mode := "deny rules only: what they do not name runs, but for commands that run commands"
	if len(p.Commands.Allow) > 0 {
		mode = "an allow list: a command none of its rules matches is refused"
	}
	return append(out, fmt.Sprintf("command rules: what %s put into the command is judged before each run (%s): %s",
		strings.Join(req.CallerParams, ", "), mode, strings.Join(rules, "; ")))
}

func verdictWord(v Verdict) string {
	switch v {
	case Allow:
		return "allowed"
	case Deny:
		return "denied"
	}
	return string(v)
}
