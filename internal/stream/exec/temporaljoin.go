package exec

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// CommittedSnapshots is what a temporal join needs of the storage engine:
// a pinned snapshot of the newest committed version (storage.Engine).
type CommittedSnapshots interface {
	Snapshot() *storage.Snapshot
}

// TemporalLookup is the lookup side of a TemporalJoin: a table (or
// materialized view) read by key at the newest committed epoch.
type TemporalLookup struct {
	// Table encodes lookup keys and decodes rows; it is the relation's
	// own state table schema and id. The join never writes or commits it.
	Table *state.Table
	// Keys are the left columns holding the lookup values, in the order
	// of the relation's primary key: all of it (a point lookup) or a
	// prefix holding its distribution key (a prefix scan in one vnode).
	Keys []int
	// Point: Keys cover the whole primary key.
	Point bool
	// Snapshots pins the committed version each chunk reads.
	Snapshots CommittedSnapshots
}

// TemporalJoin is RisingWave's process-time temporal join (`s JOIN t FOR
// SYSTEM_TIME AS OF PROCTIME() ON s.k = t.pk`): each left change looks
// up the right relation's committed rows with its key as they are when
// the change is processed, and later changes of the right relation do
// not touch what was emitted. Output rows are the left row followed by
// the right row (NULLs for an unmatched row of a LEFT join).
//
// The join keeps no copy of the right side: it reads the right relation's
// own state table through a snapshot of the newest committed version,
// pinned for one input chunk. It reads the committed epoch, not the
// epoch being written: the invariant it relies on is I7's — a committed
// epoch is durable and never rolled back — so a looked-up row is never
// one that a recovery takes back, and the snapshot's pin keeps every
// version at that epoch readable while the chunk is joined (compaction
// keeps the newest version at or below every pinned epoch). A committed
// epoch is also complete for every table at once, so all lookups of a
// chunk see one consistent state of the right relation. Rows the right
// side wrote in epochs not yet committed are not seen: a right-side
// change becomes visible to the left rows processed after its epoch
// commits (FLUSH returns).
//
// With an input that may retract rows (not append-only), the join
// memorises what it emitted for each left row in a state table keyed by
// (lookup key, left stream key, right primary key): a retraction emits
// exactly those rows again as deletes — not a new lookup, whose answer
// may differ — and forgets them. An append-only input needs no state.
type TemporalJoin struct {
	input   stream.Executor
	outer   bool
	lookup  TemporalLookup
	cond    expr.Expr
	loc     *time.Location
	memo    *state.Table // nil: append-only input
	memoKey []int        // memo PK prefix taken from a left row
	leftW   int
	rightW  int
	q       queue
	keyBuf  []byte
	consistency
}

// TemporalJoinMemoSchema is the memo state table of a temporal join over
// a retractable input: the output row (left ++ right), keyed by the
// lookup key columns, the left stream key and the right primary key
// (offset by the left width), distributed by the lookup key.
func TemporalJoinMemoSchema(name string, leftTypes, rightTypes []types.Type, lookupKeys, leftKey, rightPK []int) state.Schema {
	s := state.Schema{Name: name, Types: append(slices.Clone(leftTypes), rightTypes...)}
	for _, k := range append(slices.Clone(lookupKeys), leftKey...) {
		if !slices.Contains(s.PK, k) {
			s.PK = append(s.PK, k)
		}
	}
	for _, k := range rightPK {
		s.PK = append(s.PK, len(leftTypes)+k)
	}
	s.DistKey = slices.Clone(lookupKeys)
	return s
}

// NewTemporalJoin returns the join of input with lookup; outer makes it a
// LEFT join; cond (nil: none) is evaluated over left ++ right rows; memo
// (nil for an append-only input) is a TemporalJoinMemoSchema table whose
// key starts with the left columns memoKey.
func NewTemporalJoin(input stream.Executor, lookup TemporalLookup, outer bool, cond expr.Expr, memo *state.Table, memoKey []int, loc *time.Location) (*TemporalJoin, error) {
	lt := input.Schema()
	if err := checkCols("temporal join", append(slices.Clone(lookup.Keys), memoKey...), len(lt)); err != nil {
		return nil, err
	}
	if lookup.Snapshots == nil {
		return nil, fmt.Errorf("temporal join: the store cannot pin committed snapshots")
	}
	rt := lookup.Table.Schema().Types
	if memo != nil && len(memo.Schema().Types) != len(lt)+len(rt) {
		return nil, fmt.Errorf("temporal join: memo state table %d has %d columns; want %d (see TemporalJoinMemoSchema)", memo.ID(), len(memo.Schema().Types), len(lt)+len(rt))
	}
	if loc == nil {
		loc = time.UTC
	}
	return &TemporalJoin{input: input, outer: outer, lookup: lookup, cond: cond, loc: loc, memo: memo, memoKey: memoKey,
		leftW: len(lt), rightW: len(rt)}, nil
}

func (j *TemporalJoin) Schema() []types.Type {
	return append(slices.Clone(j.input.Schema()), j.lookup.Table.Schema().Types...)
}

func (j *TemporalJoin) Identity() string {
	kind := "Inner"
	if j.outer {
		kind = "LeftOuter"
	}
	s := fmt.Sprintf("TemporalJoin(%s, %s lookup [%s]", kind, j.lookup.Table.Schema().Name, colList(j.lookup.Keys))
	if j.cond != nil {
		s += ", cond " + j.cond.String()
	}
	if j.memo != nil {
		s += fmt.Sprintf("; state table %d", j.memo.ID())
	}
	return s + ")"
}

func (j *TemporalJoin) Next(ctx context.Context) (stream.Message, error) {
	for {
		if msg, ok := j.q.pop(); ok {
			return msg, nil
		}
		msg, err := j.input.Next(ctx)
		if err != nil {
			return msg, err
		}
		if b := msg.Barrier; b != nil {
			if err := commitAll(ctx, j.Identity(), b.Curr, j.memo); err != nil {
				return stream.Message{}, err
			}
			return msg, nil
		}
		if msg.Chunk == nil {
			return msg, nil // watermarks on left columns pass
		}
		var o output
		if err := j.apply(ctx, msg.Chunk, &o); err != nil {
			return stream.Message{}, err
		}
		j.q.pushChunks(&o)
	}
}

// apply joins one chunk against one committed snapshot.
func (j *TemporalJoin) apply(ctx context.Context, c *types.Chunk, o *output) error {
	snap := j.lookup.Snapshots.Snapshot()
	defer snap.Close()
	ec := newEvalContext(ctx, j.loc)
	var tk ticker
	for i, row := range c.Rows {
		if err := tk.tick(ctx); err != nil {
			return err
		}
		if !c.Ops[i].IsInsert() {
			if err := j.retract(ctx, row, o); err != nil {
				return err
			}
			continue
		}
		matched := false
		err := j.match(ctx, snap, row, func(right types.Row) error {
			out := append(slices.Clone(row), right...)
			ok, err := j.condTrue(ctx, ec, out)
			if err != nil || !ok {
				return err
			}
			matched = true
			j.emit(types.OpInsert, out, o)
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", j.Identity(), err)
		}
		if !matched && j.outer {
			out := slices.Clone(row)
			for range j.rightW {
				out = append(out, types.NullDatum)
			}
			j.emit(types.OpInsert, out, o)
		}
	}
	return nil
}

func (j *TemporalJoin) emit(op types.Op, out types.Row, o *output) {
	if j.memo != nil {
		j.memo.Insert(out)
	}
	o.emit(op, out)
}

// retract emits, as deletes, the rows the join emitted for row.
func (j *TemporalJoin) retract(ctx context.Context, row types.Row, o *output) error {
	if j.memo == nil {
		// The planner proved the input append-only (I6: contradicting
		// input is reported; tolerated, the retraction is dropped).
		return j.violation(ctx, j.Identity(), inconsistent(j.Identity(), nil, row, "retraction of an append-only input"))
	}
	it, err := j.memo.Iter(ctx, project(row, j.memoKey))
	if err != nil {
		return fmt.Errorf("%s: %w", j.Identity(), err)
	}
	var rows []types.Row
	for it.Next() {
		rows = append(rows, it.Row())
	}
	err = it.Err()
	it.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", j.Identity(), err)
	}
	if len(rows) == 0 && j.outer {
		// I6: a LEFT join emitted at least one row for every left row
		// it saw, so this one never came; tolerated, nothing is emitted.
		// (An inner join's row may have matched nothing.)
		return j.violation(ctx, j.Identity(), inconsistent(j.Identity(), j.memo, project(row, j.memoKey), "retraction of a row the join never saw"))
	}
	for _, r := range rows {
		j.memo.Delete(r)
		o.emit(types.OpDelete, r)
	}
	return nil
}

// match calls fn with every committed right row whose key equals row's
// lookup values. A NULL lookup value matches nothing.
func (j *TemporalJoin) match(ctx context.Context, snap *storage.Snapshot, row types.Row, fn func(types.Row) error) error {
	key := project(row, j.lookup.Keys)
	for _, d := range key {
		if d.IsNull() {
			return nil
		}
	}
	t := j.lookup.Table
	id := t.ID()
	if j.lookup.Point {
		k, ok := t.EncodePK(j.keyBuf[:0], key)
		if !ok {
			return fmt.Errorf("lookup key does not fix the vnode of %s", t.Schema().Name)
		}
		j.keyBuf = k
		v, found, err := snap.Get(ctx, id, k)
		if err != nil || !found {
			return err
		}
		r, err := types.DecodeValueRow(v, t.Schema().Types, nil)
		if err != nil {
			return fmt.Errorf("%s: corrupt row: %w", t.Schema().Name, err)
		}
		return fn(r)
	}
	lower, upper, ok := t.PrefixBounds(key)
	if !ok {
		return fmt.Errorf("lookup key does not fix the vnode of %s", t.Schema().Name)
	}
	it, err := snap.Iter(ctx, id, lower, upper, storage.ReadOptions{})
	if err != nil {
		return err
	}
	defer it.Close()
	var tk ticker
	for it.Next() {
		if err := tk.tick(ctx); err != nil { // I5: a key may match many rows
			return err
		}
		r, err := types.DecodeValueRow(it.Value(), t.Schema().Types, nil)
		if err != nil {
			return fmt.Errorf("%s: corrupt row: %w", t.Schema().Name, err)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return it.Err()
}

// condTrue evaluates the residual condition over an output row; a data
// error makes it NULL (evalerr.go).
func (j *TemporalJoin) condTrue(ctx context.Context, ec *expr.EvalContext, out types.Row) (bool, error) {
	if j.cond == nil {
		return true, nil
	}
	d, err := j.cond.Eval(ec, out)
	if err != nil {
		return false, exprError(ctx, j.Identity(), j.cond, err)
	}
	return !d.IsNull() && d.Bool(), nil
}
