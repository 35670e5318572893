// Package relay is the in-sandbox half of the egress bridge (see package
// egress for the whole picture): loopback listeners inside the sandbox
// whose connections are copied to the run's proxy socket, and the wire
// format both halves share. The init of every sandbox links it, so it
// keeps to the standard library's net package: no HTTP, no TLS, no
// decisions. The proxy decides; the relay only copies bytes.
package relay
