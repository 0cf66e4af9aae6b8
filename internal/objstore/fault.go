package objstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sync"
	"time"
)

// Op names a Store operation, for fault rules, hooks and the call log.
type Op string

const (
	OpPut      Op = "put"
	OpGet      Op = "get"
	OpGetRange Op = "get-range"
	OpStat     Op = "stat"
	OpList     Op = "list"
	OpDelete   Op = "delete"
)

var (
	// ErrInjected is the default error a fault rule returns.
	ErrInjected = errors.New("objstore: injected fault")
	// ErrCrashed is returned by every call to a crashed Fault store until
	// Reset.
	ErrCrashed = errors.New("objstore: store crashed (fault injection)")
)

// FaultRule describes faults for the calls it matches. A rule matches a call
// when the call's op is in Ops (or Ops is empty) and Key matches its key (the
// prefix for List). Of the matching calls, the first Skip pass untouched;
// after that the rule fires on each call (with probability Prob when Prob >
// 0, drawn from the store's seeded generator), at most Times times when
// Times > 0.
//
// When a rule fires, Latency is slept first (through the store's sleeper).
// A rule with only a Latency delays the call and lets it through; any other
// rule fails it with Err (ErrInjected when nil, ErrCrashed for a Crash
// rule), wrapped with the op and key. Ambiguous makes the call reach the
// inner store before the error is returned: for Put, the object lands but
// the caller is told it failed. Crash also switches the store into the
// crashed state.
type FaultRule struct {
	Ops       []Op
	Key       *regexp.Regexp
	Skip      int
	Times     int
	Prob      float64
	Latency   time.Duration
	Err       error
	Ambiguous bool
	Crash     bool
}

func (r *FaultRule) matches(op Op, key string) bool {
	if len(r.Ops) > 0 {
		found := false
		for _, o := range r.Ops {
			if o == op {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return r.Key == nil || r.Key.MatchString(key)
}

func (r *FaultRule) latencyOnly() bool {
	return r.Latency > 0 && r.Err == nil && !r.Ambiguous && !r.Crash
}

type ruleState struct {
	rule  FaultRule
	seen  int // matching calls so far
	fired int
}

// Call is one entry of the Fault call log.
type Call struct {
	Seq      int // 1-based, in the order calls began
	Op       Op
	Key      string // the key, or the prefix for List
	Err      error  // what the caller got
	Injected bool   // Err (or a delay) came from a rule, the hook or a crash
	Landed   bool   // the call reached the inner store
}

// Sleeper waits d or until ctx is done; Fault uses it for injected latency
// so that simulations can substitute a fake clock.
type Sleeper func(ctx context.Context, d time.Duration) error

// RealSleep is the default Sleeper.
func RealSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Fault wraps a Store and injects faults for deterministic simulation and
// crash tests: scripted or seeded-random errors per op and key pattern,
// latency, ambiguous writes, a crash switch, and a per-call hook at which a
// test can pause or fail a call. Every call is logged.
//
// Order inside each call: crashed? → hook → rules (latency, then fault) →
// inner store → crashed meanwhile? A crash that happens while a call is in
// the inner store makes that call fail with ErrCrashed although it may have
// landed: exactly the ambiguity a real crash creates.
type Fault struct {
	inner Store

	mu      sync.Mutex
	rng     *rand.Rand
	rules   []*ruleState
	hook    func(op Op, key string) error
	sleep   Sleeper
	crashed bool
	calls   []Call
}

// NewFault wraps inner; seed drives every probabilistic rule.
func NewFault(inner Store, seed uint64) *Fault {
	return &Fault{inner: inner, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), sleep: RealSleep}
}

// Inner returns the wrapped store (for checking what really landed).
func (f *Fault) Inner() Store { return f.inner }

// AddRule appends a rule; rules are consulted in the order added.
func (f *Fault) AddRule(r FaultRule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, &ruleState{rule: r})
}

// ClearRules removes every rule.
func (f *Fault) ClearRules() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = nil
}

// SetHook installs fn, called at the start of every call (after the crash
// check) with the op and key; a non-nil error fails the call. A test can
// block inside fn to pause the caller at that point. nil removes the hook.
func (f *Fault) SetHook(fn func(op Op, key string) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = fn
}

// SetSleeper replaces the sleeper used for injected latency.
func (f *Fault) SetSleeper(s Sleeper) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sleep = s
}

// Crash makes every later call fail with ErrCrashed until Reset.
func (f *Fault) Crash() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crashed = true
}

// Crashed reports whether the store is in the crashed state.
func (f *Fault) Crashed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.crashed
}

// Reset leaves the crashed state (the "restart"); rules, hook and log stay.
func (f *Fault) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crashed = false
}

// Calls returns a copy of the call log.
func (f *Fault) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// ClearCalls empties the call log.
func (f *Fault) ClearCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

// plan is what the rules decided for one call.
type plan struct {
	latency   time.Duration
	err       error
	ambiguous bool
	crash     bool
	injected  bool
	crashed   bool // the store was already crashed: fail at once
}

// begin logs the call and decides its fate; it returns the log index.
func (f *Fault) begin(op Op, key string) (int, plan, func(op Op, key string) error, Sleeper) {
	f.mu.Lock()
	defer f.mu.Unlock()
	idx := len(f.calls)
	f.calls = append(f.calls, Call{Seq: idx + 1, Op: op, Key: key})
	if f.crashed {
		return idx, plan{err: ErrCrashed, injected: true, crashed: true}, nil, nil
	}
	var p plan
	for _, rs := range f.rules {
		r := &rs.rule
		if !r.matches(op, key) {
			continue
		}
		rs.seen++
		if rs.seen <= r.Skip || (r.Times > 0 && rs.fired >= r.Times) {
			continue
		}
		if r.Prob > 0 && f.rng.Float64() >= r.Prob {
			continue
		}
		rs.fired++
		p.injected = true
		p.latency += r.Latency
		if r.latencyOnly() {
			continue
		}
		p.err = r.Err
		if p.err == nil {
			p.err = ErrInjected
			if r.Crash {
				p.err = ErrCrashed
			}
		}
		p.ambiguous, p.crash = r.Ambiguous, r.Crash
		break // the first failing rule decides
	}
	return idx, p, f.hook, f.sleep
}

func (f *Fault) finish(idx int, err error, injected, landed bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &f.calls[idx]
	c.Err, c.Injected, c.Landed = err, injected, landed
	return err
}

// do runs one call through the fault machinery; inner performs the real
// operation.
func (f *Fault) do(ctx context.Context, op Op, key string, inner func() error) error {
	idx, p, hook, sleep := f.begin(op, key)
	wrap := func(err error) error { return fmt.Errorf("objstore: %s %s: %w", op, key, err) }
	if p.crashed {
		return f.finish(idx, wrap(ErrCrashed), true, false)
	}
	if hook != nil {
		if err := hook(op, key); err != nil {
			return f.finish(idx, wrap(err), true, false)
		}
	}
	if p.latency > 0 {
		if sleep == nil {
			sleep = RealSleep
		}
		if err := sleep(ctx, p.latency); err != nil {
			return f.finish(idx, wrap(err), true, false)
		}
	}
	if p.err != nil && !p.ambiguous {
		if p.crash {
			f.Crash()
		}
		return f.finish(idx, wrap(p.err), true, false)
	}
	err := inner()
	if p.err != nil { // ambiguous: it happened, the caller hears it failed
		if p.crash {
			f.Crash()
		}
		return f.finish(idx, wrap(p.err), true, true)
	}
	if f.Crashed() {
		return f.finish(idx, wrap(ErrCrashed), true, true)
	}
	return f.finish(idx, err, p.injected, true)
}

// Put implements Store.
func (f *Fault) Put(ctx context.Context, key string, data []byte) error {
	return f.do(ctx, OpPut, key, func() error { return f.inner.Put(ctx, key, data) })
}

// Get implements Store.
func (f *Fault) Get(ctx context.Context, key string) ([]byte, error) {
	var out []byte
	err := f.do(ctx, OpGet, key, func() (err error) { out, err = f.inner.Get(ctx, key); return err })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GetRange implements Store.
func (f *Fault) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	var out []byte
	err := f.do(ctx, OpGetRange, key, func() (err error) { out, err = f.inner.GetRange(ctx, key, offset, length); return err })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Stat implements Store.
func (f *Fault) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	var out ObjectInfo
	err := f.do(ctx, OpStat, key, func() (err error) { out, err = f.inner.Stat(ctx, key); return err })
	if err != nil {
		return ObjectInfo{}, err
	}
	return out, nil
}

// List implements Store; rules and hooks see the prefix as the key.
func (f *Fault) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	var out []ObjectInfo
	err := f.do(ctx, OpList, prefix, func() (err error) { out, err = f.inner.List(ctx, prefix); return err })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Delete implements Store.
func (f *Fault) Delete(ctx context.Context, key string) error {
	return f.do(ctx, OpDelete, key, func() error { return f.inner.Delete(ctx, key) })
}
