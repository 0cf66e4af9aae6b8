package panics

import (
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Error is a panic caught by Catch.
type Error struct {
	Site  string // the unit of work that panicked (Catch's site)
	Value any    // what was passed to panic
	Stack []byte // the panicking goroutine's stack
}

func (e *Error) Error() string { return fmt.Sprintf("%s panicked: %v", e.Site, e.Value) }

// Unwrap returns the panic value when it is an error (a runtime error,
// say), so errors.Is and errors.As see through the panic.
func (e *Error) Unwrap() error {
	if err, ok := e.Value.(error); ok {
		return err
	}
	return nil
}

// Catch runs fn, one unit of a background goroutine's work, and returns
// its error, or an *Error if it panicked (I6, I9). Locks fn releases under
// a defer are released on the way out.
func Catch(site string, fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &Error{Site: site, Value: p, Stack: debug.Stack()}
		}
	}()
	if armed.Load() > 0 {
		inject(site)
	}
	return fn()
}

// armed counts the armed sites, so that Catch is free when none is.
var (
	armed  atomic.Int32
	sitesM sync.Mutex
	sites  = map[string]int{}
)

// Arm makes the next times calls of Catch at site panic (a test seam). It
// returns a function that disarms the site.
func Arm(site string, times int) (disarm func()) {
	sitesM.Lock()
	defer sitesM.Unlock()
	if _, ok := sites[site]; !ok {
		armed.Add(1)
	}
	sites[site] = times
	return func() {
		sitesM.Lock()
		defer sitesM.Unlock()
		if _, ok := sites[site]; ok {
			delete(sites, site)
			armed.Add(-1)
		}
	}
}

func inject(site string) {
	sitesM.Lock()
	n, ok := sites[site]
	if ok && n > 0 {
		sites[site] = n - 1
	}
	sitesM.Unlock()
	if ok && n > 0 {
		panic("injected panic at " + site)
	}
}

// Remaining reports how many injected panics at site are still to come
// (tests wait for an injection to have happened).
func Remaining(site string) int {
	sitesM.Lock()
	defer sitesM.Unlock()
	return sites[site]
}
