// Package netrule owns the network rules that validation, policy,
// explain and the egress proxy must agree on: what kind of destination an
// address or a host is (ClassifyAddr, HostClass), and which kinds the
// proxy refuses whatever the grants say. It is a leaf: it imports only the
// standard library, makes no system call and resolves no name, so that
// every layer can call it and get the same answer.
package netrule
