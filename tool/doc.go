// Package tool owns the tool definition model (the CYCOD custom tools YAML
// format plus our `sandboxed:` section): scopes, loading with located
// errors, validation, binding arguments (types, validation rules, defaults,
// transforms, format, shell escaping), substitution, schema export and
// discovery of self-describing executables.
//
// Each field has one home: the model (model.go) carries its YAML key and
// form in struct tags, Marshal writes by those tags (yamlform.go), the
// strict loader reads with located errors, and `tool add`'s flags build a
// model here (add.go), not in the CLI.
//
// It is pure: it makes no syscalls beyond reading definition files,
// writing them atomically for add/import and keeping the name index in
// the cache (nameindex.go); it never runs a tool; and of this module it
// imports only leaf helpers under internal/ (privilege, tier, units,
// xdg), which import nothing of the rest.
package tool
