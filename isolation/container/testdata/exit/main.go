// Command exit is a static binary that fails at once: a stand-in for an
// init that cannot start, in the real-engine tests.
package main

import "os"

func main() { os.Exit(3) }
