package storage

import (
	"sync"
	"time"
)

// Retention is a table's time to live (a time-series table's
// WITH (ttl = '7d')): a row whose time is older than now − TTL is expired.
//
// The row's time is part of its key (TimeOf decodes it from the key's
// rest), so every version of a key expires at the same instant and, the
// clock moving forward, stays expired: expiry is a property of the key
// alone. That is what makes both halves safe without any version
// reasoning:
//   - reads (Get, Iter, Snapshot reads) skip an expired key at once,
//     whatever its newest version;
//   - compaction drops every version of an expired key at any level — an
//     older version left below in a deeper level is of the same key, hence
//     expired too, and never resurfaces. The SST that held it leaves the
//     version through the compaction's delta and goes to the deletion
//     queue and GC like any other input (I1): nothing is deleted directly.
//
// A Retention with TTL 0 expires nothing; its TimeOf still records each
// SST's per-table time range (SSTMeta.Times).
type Retention struct {
	TTL time.Duration
	// TimeOf returns the row time (Unix microseconds) encoded in a key's
	// rest; ok=false (no time, a NULL, a key it cannot decode) keeps the
	// row.
	TimeOf func(rest []byte) (micros int64, ok bool)
	// Window is the width of the table's time windows in the window level
	// (window.go); 0: DefaultTimeWindow.
	Window time.Duration
}

// retentions holds the tables' retentions, set by the layer that knows
// the key layout (it is not in the version: a compaction that runs before
// it is set keeps everything, which is safe).
type retentions struct {
	mu sync.RWMutex
	m  map[TableID]Retention
}

// SetRetention sets (r non-nil) or clears table's retention.
func (e *Engine) SetRetention(table TableID, r *Retention) {
	e.ret.mu.Lock()
	defer e.ret.mu.Unlock()
	if r == nil || r.TTL < 0 || r.TimeOf == nil {
		delete(e.ret.m, table)
		return
	}
	if e.ret.m == nil {
		e.ret.m = map[TableID]Retention{}
	}
	e.ret.m[table] = *r
}

// expiry returns the function that tells whether a key (its rest) of
// table is expired as of now, or nil when the table has no retention.
// The cutoff is fixed when it is called: one read sees one cutoff.
func (e *Engine) expiry(table TableID) func(rest []byte) bool {
	e.ret.mu.RLock()
	r, ok := e.ret.m[table]
	e.ret.mu.RUnlock()
	if !ok || r.TTL <= 0 {
		return nil
	}
	cutoff := e.opts.Clock().Add(-r.TTL).UnixMicro()
	return func(rest []byte) bool {
		t, ok := r.TimeOf(rest)
		return ok && t < cutoff
	}
}

// expiries returns expiry for every table with a retention (compaction).
func (e *Engine) expiries() map[TableID]func(rest []byte) bool {
	e.ret.mu.RLock()
	ids := make([]TableID, 0, len(e.ret.m))
	for t := range e.ret.m {
		ids = append(ids, t)
	}
	e.ret.mu.RUnlock()
	out := make(map[TableID]func(rest []byte) bool, len(ids))
	for _, t := range ids {
		if f := e.expiry(t); f != nil {
			out[t] = f
		}
	}
	return out
}

// timeOfs returns the time decoders of the tables that have one (nil when
// none), for the SST builder's per-table time ranges.
func (e *Engine) timeOfs() map[TableID]func(rest []byte) (int64, bool) {
	e.ret.mu.RLock()
	defer e.ret.mu.RUnlock()
	if len(e.ret.m) == 0 {
		return nil
	}
	out := make(map[TableID]func(rest []byte) (int64, bool), len(e.ret.m))
	for t, r := range e.ret.m {
		out[t] = r.TimeOf
	}
	return out
}

// expiredWhole reports whether every table of f is unregistered or past
// its TTL over all of f's rows (f's time range for it is known and ends
// before the cutoff), so f can leave the version without being read: every
// version of every key in it is expired, and expiry is a property of the
// key (see Retention).
func expiredWhole(v *Version, f *SSTMeta, exps map[TableID]int64) bool {
	if len(f.Times) != len(f.Tables) {
		return false
	}
	any := false
	for i, t := range f.Tables {
		if !v.hasTable(t) {
			continue
		}
		cutoff, ok := exps[t]
		r := f.Times[i]
		if !ok || !r.Valid || r.Max >= cutoff {
			return false
		}
		any = true
	}
	return any
}

// cutoffs returns, for every table with a TTL, the time below which its
// rows are expired now.
func (e *Engine) cutoffs() map[TableID]int64 {
	e.ret.mu.RLock()
	defer e.ret.mu.RUnlock()
	now := e.opts.Clock()
	out := map[TableID]int64{}
	for t, r := range e.ret.m {
		if r.TTL > 0 {
			out[t] = now.Add(-r.TTL).UnixMicro()
		}
	}
	return out
}
