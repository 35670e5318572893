// Package netrule owns the network rules that validation, permissions,
// policy, composition, the plan, explain and the egress proxy must agree
// on: the grammar of network:external:HOST[:PORT] and of host patterns
// (ParseRule, ParseHost, ParseName, ParseNamedHost), their one canonical
// form (Rule.String, also the JSON of a plan's rules), what a rule matches
// (Rule.Allows, Rule.MatchTarget) and covers (Covers, Rule.Covers), and
// what kind of destination an address or a host is (ClassifyAddr,
// HostClass), with the kinds the proxy refuses whatever the grants say,
// and the HTTP rules that narrow a host's methods and paths (HTTPRule,
// CheckHTTPRule, RequestPath).
// It is a leaf: it imports only the standard library, makes no system
// call and resolves no name, so that every layer can call it and get the
// same answer.
package netrule
