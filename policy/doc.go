// Package policy holds the operator's policy, the decisions it makes on a
// tool's grants and security fields, approvals, and the audit log.
package policy
