// Package execgate admits the commands of one sandbox until the sandbox
// is killed or closed, counts those running, and lets Kill wait for them
// to end. The container and Kubernetes backends share it.
//
// It holds no resource and does no I/O: signalling the commands, and
// what Kill does after the wait, stay the backend's.
package execgate
