package exec

import (
	"context"
	"fmt"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// DynamicFilter maintains WHERE k op (SELECT ...) where the subquery
// returns at most one row and op is <, <=, > or >= (RisingWave's
// DynamicFilter): the left input's rows pass when their key k compares
// true with the right input's one value, the bound.
//
// The left state holds every left row whose k is not NULL, keyed by (k,
// the left stream key), so it is in k order. The rows that pass are a
// prefix (k < bound, k <= bound) or a suffix (k > bound, k >= bound) of
// that order, so when the bound moves from a to b only the rows with k
// between a and b can change their answer: the filter scans that range and
// emits exactly the rows that cross, not every row as a join with the
// bound would. A NULL bound (no row, or a NULL value) passes nothing; the
// range is then the whole region the other bound passes.
//
//	k > bound, bound 10 -> 20:   k:  5  10  12  15  20  25
//	                                        ^^  ^^  ^^       retracted
//
// Right changes are not applied as they come: within an epoch the bound
// may go through an update's two halves (no row, then the new row), and
// applying each would retract and re-emit every passing row. The filter
// keeps the right input's latest row and applies the bound at the barrier,
// once per epoch: left rows of the epoch are decided with the bound in
// force, then the barrier's range scan moves every stored row to the new
// bound, so the output equals the filter over the epoch's final inputs.
// The right input's row, whose value is the bound in force after the
// barrier, is stored in the right state table (one row, empty key) and
// committed with the left state in the same epoch, so a recovery resumes
// with the rows and the bound they were decided with (I7: the view stays
// equal to its query across recovery).
type DynamicFilter struct {
	align *aligner
	left  stream.Executor
	key   expr.Expr // over the left row
	// cmp compares (k, bound): the two-column row.
	cmp  expr.Expr
	less bool // the pass region is a prefix (k < bound, k <= bound)

	leftTable, rightTable *state.Table
	// bound is the value in force (committed), next the right input's
	// current row (NULL: none).
	bound, next types.Datum
	nextRows    int // rows the right input holds now (at most one)
	rightDirty  bool
	loaded      bool
	stopped     bool
	actor       stream.ActorID
	q           queue
	out         output
	consistency
}

// DynamicFilterStateSchemas returns the left state (k, then the left row;
// keyed by k and the left stream key, one vnode) and the right state (the
// bound in force; empty key).
func DynamicFilterStateSchemas(name string, keyType, boundType types.Type, leftTypes []types.Type, leftKey []int) (left, right state.Schema) {
	left = state.Schema{Name: name + " left", Types: append([]types.Type{keyType}, leftTypes...), PK: []int{0}}
	for _, k := range leftKey {
		left.PK = append(left.PK, 1+k)
	}
	right = state.Schema{Name: name + " right", Types: []types.Type{boundType}, PK: []int{}}
	return left, right
}

// NewDynamicFilter returns the filter key op bound over left, with the
// bound the one column of right's rows. cmp is bound against (key,
// bound); less tells whether op is < or <=.
func NewDynamicFilter(actor stream.ActorID, left, right stream.Executor, key, cmp expr.Expr, less bool, leftTable, rightTable *state.Table) (*DynamicFilter, error) {
	if want := len(left.Schema()) + 1; len(leftTable.Schema().Types) != want {
		return nil, fmt.Errorf("dynamic filter: left state table %d has %d columns; want %d", leftTable.ID(), len(leftTable.Schema().Types), want)
	}
	if len(right.Schema()) < 1 || len(rightTable.Schema().Types) != 1 {
		return nil, fmt.Errorf("dynamic filter: the right input and state table %d must carry the bound first", rightTable.ID())
	}
	f := &DynamicFilter{left: left, key: key, cmp: cmp, less: less, leftTable: leftTable, rightTable: rightTable, actor: actor}
	f.align = newAligner(f.Identity(), []stream.Executor{left, right})
	return f, nil
}

func (f *DynamicFilter) Schema() []types.Type { return f.left.Schema() }
func (f *DynamicFilter) Identity() string {
	return fmt.Sprintf("DynamicFilter(%s; state tables %d, %d)", f.cmp, f.leftTable.ID(), f.rightTable.ID())
}

// load reads the bound in force from the right state table.
func (f *DynamicFilter) load(ctx context.Context) error {
	row, found, err := f.rightTable.Get(ctx, types.Row{})
	if err != nil {
		return fmt.Errorf("%s: %w", f.Identity(), err)
	}
	f.bound, f.next, f.nextRows = types.NullDatum, types.NullDatum, 0
	if found {
		f.bound, f.next, f.nextRows = row[0], row[0], 1
	}
	f.loaded = true
	return nil
}

func (f *DynamicFilter) Next(ctx context.Context) (stream.Message, error) {
	if !f.loaded {
		if err := f.load(ctx); err != nil {
			return stream.Message{}, err
		}
	}
	for {
		if msg, ok := f.q.pop(); ok {
			return msg, nil
		}
		if f.stopped {
			return stream.Message{}, stream.ErrStopped
		}
		side, msg, err := f.align.next(ctx)
		if err != nil {
			return stream.Message{}, err
		}
		if msg.Watermark != nil {
			continue
		}
		if b := msg.Barrier; b != nil {
			if err := f.moveBound(ctx); err != nil {
				return stream.Message{}, err
			}
			f.q.pushChunks(&f.out)
			if err := commitAll(ctx, f.Identity(), b.Curr, f.leftTable, f.rightTable); err != nil {
				return stream.Message{}, err
			}
			if b.StopsActor(f.actor) {
				f.stopped = true
				f.align.close()
			}
			f.q.push(msg)
			continue
		}
		if side == 1 {
			if err := f.applyRight(ctx, msg.Chunk); err != nil {
				return stream.Message{}, err
			}
			continue
		}
		if err := f.applyLeft(ctx, msg.Chunk); err != nil {
			return stream.Message{}, err
		}
		f.q.pushChunks(&f.out)
	}
}

// passes compares k with bound.
func (f *DynamicFilter) passes(ctx context.Context, k, bound types.Datum) (bool, error) {
	if k.IsNull() || bound.IsNull() {
		return false, nil
	}
	d, err := f.cmp.Eval(&expr.EvalContext{Ctx: ctx}, types.Row{k, bound})
	if err != nil {
		return false, exprError(ctx, f.Identity(), f.cmp, err)
	}
	return !d.IsNull() && d.Bool(), nil
}

func (f *DynamicFilter) applyLeft(ctx context.Context, c *types.Chunk) error {
	ec := &expr.EvalContext{Ctx: ctx}
	var tk ticker
	for i, row := range c.Rows {
		if err := tk.tick(ctx); err != nil {
			return err
		}
		k, err := f.key.Eval(ec, row)
		if err != nil {
			if err := exprError(ctx, f.Identity(), f.key, err); err != nil {
				return err
			}
			k = types.NullDatum // counted; the row never passes
		}
		if k.IsNull() {
			continue // never passes, never stored
		}
		srow := append(types.Row{k}, row...)
		insert := c.Ops[i].IsInsert()
		if insert {
			f.leftTable.Insert(srow)
		} else {
			if _, found, err := f.leftTable.GetRow(ctx, srow); err != nil {
				return fmt.Errorf("%s: %w", f.Identity(), err)
			} else if !found {
				// I6. Non-strict: nothing to remove.
				err := inconsistent(f.Identity(), f.leftTable, srow, "delete of a row that was never inserted (row %s)", row)
				if err := f.violation(ctx, f.Identity(), err); err != nil {
					return err
				}
				continue
			}
			f.leftTable.Delete(srow)
		}
		pass, err := f.passes(ctx, k, f.bound)
		if err != nil {
			return err
		}
		if pass {
			op := types.OpDelete
			if insert {
				op = types.OpInsert
			}
			f.out.emit(op, row)
		}
	}
	return nil
}

// applyRight records the right input's row; the bound moves at the
// barrier.
func (f *DynamicFilter) applyRight(ctx context.Context, c *types.Chunk) error {
	f.rightDirty = true
	for i, row := range c.Rows {
		if c.Ops[i].IsInsert() {
			f.nextRows++
			f.next = row[0]
		} else {
			f.nextRows--
			if f.nextRows == 0 {
				f.next = types.NullDatum
			}
		}
	}
	if f.nextRows < 0 || f.nextRows > 1 {
		// I6: a scalar subquery's input holds at most one row.
		err := inconsistent(f.Identity(), f.rightTable, types.Row{}, "the bound's input holds %d rows", f.nextRows)
		if err := f.violation(ctx, f.Identity(), err); err != nil {
			return err
		}
		f.nextRows = max(0, min(f.nextRows, 1))
	}
	return nil
}

// moveBound brings the output from the bound in force to the right
// input's current one, scanning only the rows between them.
func (f *DynamicFilter) moveBound(ctx context.Context) error {
	if f.rightDirty {
		// The right state holds the right input's row (its value may be
		// NULL), so a recovery knows whether a delete has a row to remove.
		f.rightDirty = false
		if f.nextRows == 1 {
			f.rightTable.Insert(types.Row{f.next})
		} else {
			f.rightTable.Delete(types.Row{f.next})
		}
	}
	old, next := f.bound, f.next
	if old.IsNull() && next.IsNull() {
		return nil
	}
	if !old.IsNull() && !next.IsNull() && types.Compare(old, next) == 0 {
		return nil
	}
	// The range of k that can change its answer, inclusive; an empty end
	// is open. With both bounds set it lies between them; with one NULL it
	// is that bound's pass region.
	var lo, hi types.Row
	switch {
	case !old.IsNull() && !next.IsNull():
		if types.Compare(old, next) < 0 {
			lo, hi = types.Row{old}, types.Row{next}
		} else {
			lo, hi = types.Row{next}, types.Row{old}
		}
	default:
		b := old
		if b.IsNull() {
			b = next
		}
		if f.less {
			hi = types.Row{b}
		} else {
			lo = types.Row{b}
		}
	}
	it, err := f.leftTable.IterPrefixRange(ctx, lo, hi, false)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Identity(), err)
	}
	defer it.Close()
	var tk ticker
	for it.Next() {
		if err := tk.tick(ctx); err != nil {
			return err
		}
		srow := it.Row()
		was, err := f.passes(ctx, srow[0], old)
		if err != nil {
			return err
		}
		is, err := f.passes(ctx, srow[0], next)
		if err != nil {
			return err
		}
		switch {
		case was && !is:
			f.out.emit(types.OpDelete, srow[1:])
		case is && !was:
			f.out.emit(types.OpInsert, srow[1:])
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("%s: %w", f.Identity(), err)
	}
	f.bound = next
	return nil
}
