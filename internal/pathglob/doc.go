// Package pathglob owns the one path-glob grammar of sandboxed: the
// policy's path rules and source paths are decided with it, and the plan
// expands the policy's masks with it, so a mask that denied a path in the
// decision hides the same path in the sandbox.
//
// The grammar is small on purpose. A star ('*') is any run of characters
// within one path element (not '/'); a question mark ('?') is one
// character other than '/'; a double star ("**") as a whole element
// ("**/x", "a/**/x", "a/**") is zero or more elements, and elsewhere
// ("a**b") any run of characters, '/' included.
//
// Every other character stands for itself. In particular '[', ']', '{',
// '}' and '\' are literal: a directory named "[draft]" is matched by the
// pattern "[draft]". Character classes are not supported because real
// trees hold such names, and a deny rule that silently read "[draft]" as
// a class of five letters would leave the directory it names unprotected.
//
// The package is pure: it matches strings, makes no syscalls and imports
// nothing of sandboxed.
package pathglob
