package sandbox

import (
	"errors"
	"fmt"
	"os"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// ErrMissingCredential is a run refused because a credential it needs is
// not set on the host (spec 003: missing authentication names its setup).
var ErrMissingCredential = errors.New("missing credential")

// missingCredential checks, before anything of the run starts, that the
// credentials read from the host environment or a file are there: a run
// without one would only fail at its first request. It returns the
// refusal's message and hint, or nil. Credentials read by a command are
// checked when the run starts (running it is the check).
func missingCredential(eg *isolation.Egress, def *tool.Definition, env []string) (msg, hint string, err error) {
	if eg == nil {
		return "", "", nil
	}
	setup := map[string]string{}
	if ext := sandboxedExt(def); ext != nil {
		for _, c := range ext.Credentials {
			setup[c.VarName()] = c.Setup
		}
	}
	for _, c := range eg.Credentials {
		var what, fix string
		switch s := c.Source; {
		case s.File != "":
			if _, err := os.Stat(s.File); err != nil {
				what = fmt.Sprintf("reads the file %s: %v", s.File, errors.Unwrap(err))
				fix = "put the credential in " + s.File
			}
		case s.Env != "":
			if v, ok := lookupIn(env, s.Env); !ok || v == "" {
				what = "reads the host variable " + s.Env + ", which is not set"
				fix = "set " + s.Env + " in sandboxed's environment"
			}
		}
		if what == "" {
			continue
		}
		hint = fix
		if u := setup[c.Name]; u != "" {
			hint += "; get the credential: " + u
		}
		return fmt.Sprintf("missing authentication: credential %s %s", c.Name, what), hint,
			fmt.Errorf("credential %s: %w", c.Name, ErrMissingCredential)
	}
	return "", "", nil
}
