package exec

import (
	"context"
	"fmt"
	"strings"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// ctxCheckEvery is how many rows a data-dependent loop processes between
// cancellation checks (I5): ctx.Err is an atomic load plus a mutex in the
// worst case, cheap at this rate and prompt (a few hundred rows take
// microseconds).
const ctxCheckEvery = 256

// ColumnOrder is one ORDER BY item over an input column.
type ColumnOrder struct {
	Col        int
	Desc       bool
	NullsFirst bool
}

// NoColumn marks an absent optional column index (e.g. AggCall.Filter).
const NoColumn = -1

// ticker counts rows and checks ctx every ctxCheckEvery of them (I5).
type ticker struct{ n int }

func (t *ticker) tick(ctx context.Context) error {
	t.n++
	if t.n%ctxCheckEvery == 0 {
		return ctx.Err()
	}
	return nil
}

// inconsistent builds the I6 error for input that contradicts state: it
// names the executor, the state table and the key.
func inconsistent(identity string, t *state.Table, key types.Row, format string, args ...any) error {
	tbl := "no state table"
	if t != nil {
		tbl = fmt.Sprintf("%s (state table %d)", t.Schema().Name, t.ID())
	}
	return sqlerr.Errorf(sqlerr.DataCorrupted, "%s: inconsistent stream at %s, key %s: %s",
		identity, tbl, key.String(), fmt.Sprintf(format, args...))
}

// project returns row's values at cols.
func project(row types.Row, cols []int) types.Row {
	out := make(types.Row, len(cols))
	for i, c := range cols {
		out[i] = row[c]
	}
	return out
}

// typesAt returns ts at cols.
func typesAt(ts []types.Type, cols []int) []types.Type {
	out := make([]types.Type, len(cols))
	for i, c := range cols {
		out[i] = ts[c]
	}
	return out
}

// appendKeyCols appends the memcomparable encoding of row's cols: equal
// encodings mean equal values under SQL equality (1.5 = 1.50).
func appendKeyCols(dst []byte, row types.Row, cols []int, ts []types.Type) []byte {
	for _, c := range cols {
		dst = types.AppendKey(dst, row[c], ts[c], false, false)
	}
	return dst
}

// sameRow reports whether two rows are identical values, including
// representation (numeric scale), so that a change in how a value prints
// is emitted as an update.
func sameRow(a, b types.Row, ts []types.Type) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Kind() != b[i].Kind() {
			return false
		}
		if a[i].IsNull() {
			continue
		}
		if !types.Equal(a[i], b[i]) || a[i].String() != b[i].String() {
			return false
		}
	}
	return true
}

// checkCols validates column indices against an input width.
func checkCols(what string, cols []int, width int) error {
	for _, c := range cols {
		if c < 0 || c >= width {
			return fmt.Errorf("%s: column %d out of range (input has %d columns)", what, c, width)
		}
	}
	return nil
}

// output accumulates emitted changes into chunks of at most chunkSize rows,
// never splitting an update pair.
type output struct {
	cur   *types.Chunk
	ready []*types.Chunk
}

func (o *output) emit(op types.Op, row types.Row) {
	if o.cur == nil {
		o.cur = &types.Chunk{}
	}
	if o.cur.Len() >= chunkSize && op != types.OpUpdateInsert {
		o.ready = append(o.ready, o.cur)
		o.cur = &types.Chunk{}
	}
	o.cur.Append(op, row)
}

// update emits old -> new as an update pair.
func (o *output) update(old, new types.Row) {
	o.emit(types.OpUpdateDelete, old)
	o.emit(types.OpUpdateInsert, new)
}

// seal moves the open chunk to the ready list.
func (o *output) seal() {
	if o.cur != nil && o.cur.Len() > 0 {
		o.ready = append(o.ready, o.cur)
	}
	o.cur = nil
}

// pop returns the next ready chunk.
func (o *output) pop() (*types.Chunk, bool) {
	if len(o.ready) == 0 {
		return nil, false
	}
	c := o.ready[0]
	o.ready[0] = nil
	o.ready = o.ready[1:]
	return c, true
}

// queue holds messages an executor has produced but not yet returned.
type queue struct{ msgs []stream.Message }

func (q *queue) push(m stream.Message) { q.msgs = append(q.msgs, m) }
func (q *queue) pushChunks(o *output) {
	o.seal()
	for {
		c, ok := o.pop()
		if !ok {
			return
		}
		q.push(stream.Message{Chunk: c})
	}
}
func (q *queue) pop() (stream.Message, bool) {
	if len(q.msgs) == 0 {
		return stream.Message{}, false
	}
	m := q.msgs[0]
	q.msgs[0] = stream.Message{}
	q.msgs = q.msgs[1:]
	return m, true
}

// commitAll commits every non-nil state table to epoch next; a spill it
// runs ends with ctx (I5).
func commitAll(ctx context.Context, identity string, next uint64, tables ...*state.Table) error {
	for _, t := range tables {
		if t == nil {
			continue
		}
		if err := t.CommitContext(ctx, next); err != nil {
			return fmt.Errorf("%s: %w", identity, err)
		}
	}
	return nil
}

// colList renders column indices for Identity strings.
func colList(cols []int) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = fmt.Sprintf("$%d", c)
	}
	return strings.Join(parts, ", ")
}
