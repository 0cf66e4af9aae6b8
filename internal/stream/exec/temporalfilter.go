package exec

import (
	"context"
	"fmt"
	"time"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// TemporalFilter maintains a comparison between an expression of the row
// and now(): WHERE ts > now() - INTERVAL '1 hour' (RisingWave's temporal
// filter). In a view, now() is the time of the epoch the rows belong to:
// the barrier loop's epochs embed wall-clock milliseconds (<<16) and grow
// strictly, so now() never goes back, and every row of one epoch sees the
// same now() in every executor, which keeps a view consistent with one
// committed epoch (I3).
//
// The comparison is monotone in now(), so a row changes its answer at most
// once. Two shapes follow, by the side of the row's key expression k:
//
//   - expiring (k > f(now()), k >= ...): a row passes when it arrives and
//     fails once now() moves past it. The state table holds the rows that
//     currently pass, ordered by k; at each new now() the rows at the low
//     end of k that fail are retracted and deleted from state, so the
//     state holds only the live window (the "state cleaned as time
//     passes" of a temporal filter).
//   - delaying (k < f(now()), k <= ...): a row fails when it arrives and
//     passes once now() catches up. The state table holds the rows still
//     waiting, ordered by k; at each new now() those at the low end that
//     pass are emitted and leave the state.
//
// A row whose k is NULL (or whose comparison fails to evaluate: an
// expression error, counted as for Filter) never passes and is never
// stored. The state row is k followed by the input row, keyed by (k, the
// input's stream key) and distributed by distKey, so each actor scans
// only the vnodes it owns, in k order, and stops at the first row whose
// answer did not change.
//
// A new now() is applied when the first message after a barrier is asked
// for: its changes belong to the epoch the barrier opens (b.Curr), whose
// now() it is. A filter that opens its state (a new view, or a recovery
// from committed epoch C, whose state was made with now() of C) first
// scans it at now() of the state table's epoch, so that the state holds
// exactly the rows that can still change before any row is processed. Watermarks are not forwarded: delayed rows and
// late retractions would break their promise downstream.
type TemporalFilter struct {
	input    stream.Executor
	cond     expr.Expr // over the input row; calls now()
	key      expr.Expr // the side of cond without now()
	expiring bool
	table    *state.Table
	owns     func(uint16) bool
	loc      *time.Location

	now time.Time
	// pending: a scan at now is due before the next row (a barrier
	// moved now, or the filter just opened its state, which was written
	// at an earlier now()).
	pending bool
	q       queue
	consistency
}

// TemporalFilterStateSchema returns the state table schema: the key
// expression's value, then the input row; keyed by the key value and the
// input's stream key, distributed by distKey (input columns; empty: one
// vnode).
func TemporalFilterStateSchema(name string, keyType types.Type, inTypes []types.Type, inputKey, distKey []int) state.Schema {
	s := state.Schema{Name: name, Types: append([]types.Type{keyType}, inTypes...), PK: []int{0}}
	for _, k := range inputKey {
		s.PK = append(s.PK, 1+k)
	}
	for _, d := range distKey {
		s.DistKey = append(s.DistKey, 1+d)
	}
	return s
}

// NewTemporalFilter returns the filter cond over input, where key is the
// side of cond that does not call now() and expiring tells the shape (see
// TemporalFilter). loc is the view's session time zone.
func NewTemporalFilter(input stream.Executor, cond, key expr.Expr, expiring bool, table *state.Table, loc *time.Location) (*TemporalFilter, error) {
	if want := len(input.Schema()) + 1; len(table.Schema().Types) != want {
		return nil, fmt.Errorf("temporal filter: state table %d has %d columns; want %d (see TemporalFilterStateSchema)", table.ID(), len(table.Schema().Types), want)
	}
	if loc == nil {
		loc = time.UTC
	}
	f := &TemporalFilter{input: input, cond: cond, key: key, expiring: expiring, table: table, loc: loc}
	f.now, f.pending = EpochTime(table.Epoch()), true
	return f, nil
}

// EpochTime is now() of an epoch: the wall-clock milliseconds it embeds.
func EpochTime(epoch uint64) time.Time { return time.UnixMilli(int64(epoch >> 16)) }

// SetVnodeOwner restricts the scans at a new now() to the vnodes owns
// reports (the actor's share of the state table).
func (f *TemporalFilter) SetVnodeOwner(owns func(v uint16) bool) { f.owns = owns }

func (f *TemporalFilter) Schema() []types.Type { return f.input.Schema() }
func (f *TemporalFilter) Identity() string {
	shape := "delaying"
	if f.expiring {
		shape = "expiring"
	}
	return fmt.Sprintf("TemporalFilter(%s, %s; state table %d)", f.cond, shape, f.table.ID())
}

func (f *TemporalFilter) Next(ctx context.Context) (stream.Message, error) {
	for {
		if msg, ok := f.q.pop(); ok {
			return msg, nil
		}
		if f.pending {
			if err := f.advance(ctx); err != nil {
				return stream.Message{}, err
			}
			f.pending = false
			continue
		}
		msg, err := f.input.Next(ctx)
		if err != nil {
			return msg, err
		}
		if msg.Watermark != nil {
			continue
		}
		if b := msg.Barrier; b != nil {
			if err := commitAll(ctx, f.Identity(), b.Curr, f.table); err != nil {
				return stream.Message{}, err
			}
			if now := EpochTime(b.Curr); now.After(f.now) {
				f.now, f.pending = now, true
			}
			return msg, nil
		}
		out, err := f.apply(ctx, msg.Chunk)
		if err != nil {
			return stream.Message{}, err
		}
		if out.Len() > 0 {
			return stream.Message{Chunk: out}, nil
		}
	}
}

// passes evaluates the comparison and the key of row at now.
func (f *TemporalFilter) passes(ctx context.Context, ec *expr.EvalContext, row types.Row) (pass bool, key types.Datum, err error) {
	d, err := f.cond.Eval(ec, row)
	if err != nil {
		return false, types.NullDatum, exprError(ctx, f.Identity(), f.cond, err)
	}
	key, err = f.key.Eval(ec, row)
	if err != nil {
		return false, types.NullDatum, exprError(ctx, f.Identity(), f.key, err)
	}
	return !d.IsNull() && d.Bool(), key, nil
}

func (f *TemporalFilter) evalContext(ctx context.Context, now time.Time) *expr.EvalContext {
	return &expr.EvalContext{Ctx: ctx, Location: f.loc, StatementTime: now}
}

// apply passes a chunk of changes at the current now(). Update pairs
// become a delete and an insert: their halves may pass differently, and
// one of them may wait in state.
func (f *TemporalFilter) apply(ctx context.Context, in *types.Chunk) (*types.Chunk, error) {
	ec := f.evalContext(ctx, f.now)
	out := &types.Chunk{}
	var tk ticker
	for i, row := range in.Rows {
		if err := tk.tick(ctx); err != nil {
			return nil, err
		}
		pass, key, err := f.passes(ctx, ec, row)
		if err != nil {
			return nil, err
		}
		insert := in.Ops[i].IsInsert()
		op := types.OpDelete
		if insert {
			op = types.OpInsert
		}
		if pass {
			out.Append(op, row)
		}
		// Expiring: state holds the rows that pass; delaying: those that
		// wait. A row that does neither (NULL key; expired) is not kept.
		if key.IsNull() || pass != f.expiring {
			continue
		}
		srow := append(types.Row{key}, row...)
		if insert {
			f.table.Insert(srow)
			continue
		}
		if _, found, err := f.table.GetRow(ctx, srow); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Identity(), err)
		} else if !found {
			// I6. Non-strict: nothing to remove.
			err := inconsistent(f.Identity(), f.table, srow, "delete of a row that was never inserted (row %s)", row)
			if err := f.violation(ctx, f.Identity(), err); err != nil {
				return nil, err
			}
			continue
		}
		f.table.Delete(srow)
	}
	return out, nil
}

// advance brings the state to f.now: expired rows are retracted, waiting
// rows whose time has come are emitted, and both leave the state table.
func (f *TemporalFilter) advance(ctx context.Context) error {
	ec := f.evalContext(ctx, f.now)
	var changed expr.Blocks[types.Row]
	var evalErr error
	// Collect first: the scan reads the table being deleted from. Within
	// a vnode rows are in key order, and the answer changes first at the
	// low end of the key, so each vnode's scan stops at the first row
	// whose answer did not change.
	err := scanOwned(ctx, f.table, f.owns, func(srow types.Row) bool {
		pass, _, err := f.passes(ctx, ec, srow[1:])
		if err != nil {
			evalErr = err
			return false
		}
		if pass == f.expiring {
			return false
		}
		changed.Append(srow)
		return true
	})
	if err == nil {
		err = evalErr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", f.Identity(), err)
	}
	op := types.OpInsert
	if f.expiring {
		op = types.OpDelete
	}
	var o output
	for i := 0; i < changed.Len(); i++ {
		srow := changed.At(i)
		f.table.Delete(srow)
		o.emit(op, srow[1:])
	}
	f.q.pushChunks(&o)
	return nil
}
