package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"
)

// completionCommand prints a completion script for a shell. The bash and
// zsh scripts ask the binary itself for the words that may come next
// (urfave/cli's --generate-bash-completion, which answers before any
// command runs); the fish script is generated from the command tree.
var completionCommand = &cli.Command{
	Name:      "completion",
	Usage:     "print a shell completion script: bash, zsh or fish",
	ArgsUsage: "bash|zsh|fish",
	Description: `Prints a script that completes sandboxed's commands and flags in the shell
named. To load it:

   bash:  source <(sandboxed completion bash)          (in ~/.bashrc)
   zsh:   source <(sandboxed completion zsh)           (in ~/.zshrc, after compinit)
   fish:  sandboxed completion fish > ~/.config/fish/completions/sandboxed.fish`,
	Action: func(c *cli.Context) error {
		if c.NArg() != 1 {
			return usageError(fmt.Errorf("completion: name one shell: bash, zsh or fish (see 'sandboxed completion --help')"))
		}
		return writeCompletion(c.App, c.Args().First(), c.App.Writer)
	},
}

// writeCompletion writes the completion script of app for shell to w.
func writeCompletion(app *cli.App, shell string, w io.Writer) error {
	switch shell {
	case "bash":
		_, err := io.WriteString(w, bashCompletion)
		return err
	case "zsh":
		_, err := io.WriteString(w, zshCompletion)
		return err
	case "fish":
		s, err := app.ToFishCompletion()
		if err != nil {
			return fmt.Errorf("completion fish: %w", err)
		}
		_, err = io.WriteString(w, s)
		return err
	}
	return usageError(fmt.Errorf("completion: unknown shell %q: bash, zsh or fish", shell))
}

// bashCompletion asks sandboxed for the candidates of the word being
// completed; with none (a tool's path, a NAME=VALUE) bash completes file
// names.
const bashCompletion = `# bash completion for sandboxed: source <(sandboxed completion bash)
_sandboxed_complete() {
  local cur opts
  COMPREPLY=()
  cur="${COMP_WORDS[COMP_CWORD]}"
  if [[ "$cur" == -* ]]; then
    opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" --generate-bash-completion 2>/dev/null)
  fi
  local IFS=$'\n'
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  return 0
}
complete -o bashdefault -o default -F _sandboxed_complete sandboxed
`

// zshCompletion does the same for zsh, as a compdef function; with
// _CLI_ZSH_AUTOCOMPLETE_HACK=1 urfave/cli prints each command as
// name:usage, which _describe shows.
const zshCompletion = `#compdef sandboxed
# zsh completion for sandboxed: source <(sandboxed completion zsh), after compinit
_sandboxed() {
  local -a opts
  local cur
  cur=${words[-1]}
  if [[ "$cur" == -* ]]; then
    opts=("${(@f)$(_CLI_ZSH_AUTOCOMPLETE_HACK=1 ${words[@]:0:#words[@]-1} "$cur" --generate-bash-completion 2>/dev/null)}")
  else
    opts=("${(@f)$(_CLI_ZSH_AUTOCOMPLETE_HACK=1 ${words[@]:0:#words[@]-1} --generate-bash-completion 2>/dev/null)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
if [[ "${funcstack[1]}" == "_sandboxed" ]]; then
  _sandboxed "$@"
else
  compdef _sandboxed sandboxed
fi
`
