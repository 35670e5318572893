// Package cleanup is the one way a constructor that makes several
// resources undoes them when it fails part-way: each undo is added to a
// stack as its resource is made, a deferred Clean runs the stack (the last
// made undone first), and the constructor Releases the stack once it
// succeeds, taking over the undo functions if it wants them. It has the
// shape of gVisor's pkg/cleanup:
//
//	cu := cleanup.Make(func() { os.Remove(dir) })
//	defer cu.Clean()
//	... more resources, each followed by cu.Add(undo) ...
//	cu.Release()
//	return r, nil
//
// It must not run anything but the functions it is given, and holds no
// lock: a Cleanup belongs to one goroutine.
package cleanup

// Cleanup is a stack of undo functions. The zero value is an empty stack.
type Cleanup struct {
	fns []func()
}

// Make returns a stack holding f.
func Make(f func()) Cleanup {
	return Cleanup{fns: []func(){f}}
}

// Add pushes f: Clean runs it before every function added earlier.
func (c *Cleanup) Add(f func()) {
	c.fns = append(c.fns, f)
}

// Clean runs the functions, the last added first, and empties the stack,
// so a second Clean (or one after Release) runs nothing.
func (c *Cleanup) Clean() {
	fns := c.fns
	c.fns = nil
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}

// Release empties the stack, so that a deferred Clean runs nothing, and
// returns a function that runs what it held, as Clean would have: the
// caller that keeps the resources may undo them later with it.
func (c *Cleanup) Release() func() {
	held := Cleanup{fns: c.fns}
	c.fns = nil
	return held.Clean
}
