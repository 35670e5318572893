// Package tool owns the tool definition model (the CYCOD custom tools YAML
// format plus our `sandboxed:` section): scopes, loading with located
// errors, validation, binding arguments (types, validation rules, defaults,
// transforms, format, shell escaping), substitution, schema export and
// discovery of self-describing executables.
//
// It is pure: it makes no syscalls beyond reading definition files and
// writing them atomically for add/import, it never runs a tool, and it
// imports no other package of this module.
package tool
