package exec

import (
	"context"
	"fmt"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/types"
)

// cleanIndex lets a join's watermark cleanup find the rows an interval
// bound closes without scanning the side's state table.
//
// Without it, every barrier at which a watermark advanced scans all the
// side's stored rows, and the tombstones of the rows cleaned before them,
// to find the few that closed: the work per barrier grows with the state
// and with the backlog of tombstones compaction has not yet dropped, so
// throughput fell as a run went on (Nexmark q4: 31 % of the CPU at 1 M
// events, most of it at 5 M; docs/benchmarks.md).
//
// The index is a min-heap of the side's stored rows (this actor's vnodes)
// by A(r), the value the bound compares with its limit; a cleanup pops the
// entries below the limit and deletes their rows by key. It is kept only
// where it can be exact:
//
//   - the side is append-only (JoinIntervalBound.AppendOnly): a stored row
//     never changes or leaves except by cleanup, so an entry never goes
//     stale;
//   - the side has exactly one interval bound and no key bound (the heap
//     has one order);
//   - it holds every stored row: a fresh job's tables start empty, so its
//     index is ready at once; a rebuilt job's first cleanup scans the side
//     (as without an index) and adds every row it keeps, and from then on
//     each insert adds its row;
//   - it stays under maxCleanIndexRows entries; past that it is dropped
//     and cleanup scans again.
//
// Rows whose A is NULL are never closed and are not indexed.
type cleanIndex struct {
	iv    int  // the interval bound's position in joinWatermarks.intervals
	ready bool // holds every stored row of the actor's vnodes
	h     cleanHeap
	// scratch and ec evaluate a non-column A.
	scratch types.Row
	ec      *expr.EvalContext
}

// maxCleanIndexRows bounds an index (~130 bytes an entry: ~130 MiB). Past
// it the side's cleanup falls back to scanning; the bounded state that
// cleanup exists for is far smaller (Nexmark q7 keeps ~180k bid rows).
var maxCleanIndexRows = 1 << 20 // a var so tests can force the fallback

type cleanEntry struct {
	v     types.Datum // A(r)
	skey  string      // the row's state-table key
	ck    string      // its join key (cache key)
	hasCK bool
}

// cleanHeap is a binary min-heap by v (typed, so a push does not box its
// entry).
type cleanHeap []cleanEntry

func (h cleanHeap) less(i, k int) bool { return types.Compare(h[i].v, h[k].v) < 0 }

func (h *cleanHeap) push(e cleanEntry) {
	*h = append(*h, e)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !a.less(i, p) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *cleanHeap) pop() cleanEntry {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a[last] = cleanEntry{}
	a = a[:last]
	for i := 0; ; {
		m, l, r := i, 2*i+1, 2*i+2
		if l < len(a) && a.less(l, m) {
			m = l
		}
		if r < len(a) && a.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

// setupCleanIndexes gives each side that qualifies (see cleanIndex) an
// index, ready at once when the state tables start empty (SetFresh).
func (j *HashJoin) setupCleanIndexes() {
	if j.kind.semi() {
		return // semi and anti joins rewrite their left rows' degrees
	}
	for side := range j.sides {
		j.wm.index[side] = nil
		n, at := 0, -1
		for i, b := range j.wm.intervals {
			if b.Side == side {
				n++
				at = i
			}
		}
		if n == 1 && j.wm.intervals[at].AppendOnly {
			j.wm.index[side] = &cleanIndex{iv: at, ready: j.fresh}
		}
	}
}

// keyBoundActive reports whether a key bound cleans rows too (the index
// orders by the interval bound alone, so it cannot serve then).
func (ix *cleanIndex) keyBoundActive(bounds []types.Datum) bool {
	for _, b := range bounds {
		if !b.IsNull() {
			return true
		}
	}
	return false
}

// indexRow adds a stored row of side to the side's index, if it has one
// (ready, or being built by a scan; A(r) NULL: never closed, not
// indexed).
func (j *HashJoin) indexRow(side int, row types.Row) {
	ix := j.wm.index[side]
	if ix == nil {
		return
	}
	iv := &j.wm.intervals[ix.iv]
	d := row[iv.ACol]
	if d.IsNull() {
		return
	}
	if ix.ec == nil {
		ix.ec = newEvalContext(context.Background(), j.loc)
	}
	v, ok := intervalValue(ix.ec, iv, d, &ix.scratch)
	if !ok {
		return
	}
	s := &j.sides[side]
	e := cleanEntry{v: v, skey: string(s.State.EncodeKey(nil, row))}
	e.ck, e.hasCK = j.cacheKey(side, row)
	ix.h.push(e)
	if len(ix.h) > maxCleanIndexRows {
		j.wm.index[side] = nil // cleanup scans from now on
	}
}

// cleanFromIndex deletes side's rows that the index's bound has closed:
// the entries below the bound's limit.
func (j *HashJoin) cleanFromIndex(ctx context.Context, side int, ix *cleanIndex, limits []intervalLimit) error {
	l := limits[ix.iv]
	if !l.ok {
		return nil
	}
	s := &j.sides[side]
	var tk ticker
	// The cached rows of each join key leave together (joinCache.removeKeys).
	uncache := map[string][]string{}
	defer func() {
		for ck, skeys := range uncache {
			s.cache.removeKeys(ck, skeys)
		}
	}()
	for len(ix.h) > 0 && types.Compare(ix.h[0].v, l.limit) < 0 {
		if err := tk.tick(ctx); err != nil { // I5
			return fmt.Errorf("%s: watermark cleanup: %w", j.Identity(), err)
		}
		e := ix.h.pop()
		s.State.DeleteKey(e.skey)
		if e.hasCK && s.cache.has(e.ck) {
			uncache[e.ck] = append(uncache[e.ck], e.skey)
		}
		j.wm.cleaned++
	}
	return nil
}
