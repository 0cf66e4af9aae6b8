// Package panics turns a panic on a goroutine that no actor boundary
// covers into an error (I6: one bad job never takes the server down; I9:
// no input ends the process).
//
// Go ends the whole process when any goroutine panics and nothing on that
// goroutine's stack recovers. Actors recover at their boundary
// (stream.Actor.Run), connections at theirs (pgwire); every other goroutine
// started by non-test code runs its units of work through Catch, which
// returns the panic as an *Error carrying the stack, and the goroutine's
// owner turns that into what a failure of that unit means there: an actor
// failure and a recovery (the exchange pumps), a logged split failure with
// a retry (source readers), a logged delivery failure with a retry (sink
// workers), a failed checkpoint that the next tick retries.
//
// Test seam: Arm makes the next Catch at a named site panic inside the
// protected call, so a test injects a panic into any class of goroutine
// without knowing its internals. An unarmed site costs one atomic load.
//
// This package imports nothing of Runnel's; every layer may use it.
package panics
