package exec

import (
	"context"
	"fmt"

	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// TopN maintains ORDER BY ... LIMIT n OFFSET m, globally or per group
// (GroupTopN: the row_number() OVER (PARTITION BY g ORDER BY o) <= n
// pattern; DistinctOn: DISTINCT ON (g) ... ORDER BY g, o is the first row
// per group).
//
// State: every input row, keyed by (group, order key, pk), so a group's
// rows are stored in ORDER BY order and the top rows are the first
// offset+limit rows of the group's prefix. Per epoch, a touched group's
// visible rows (positions offset .. offset+limit-1) are read before the
// first change and again at the barrier; the difference, matched by pk,
// is emitted: deletes for rows that left, inserts for rows that entered,
// update pairs for rows whose content (or rank) changed.
//
//	LIMIT 2, rows by order key: a b | c      insert x (a < x < b)
//	before: a b          after: a x | b c
//	emit:   - b, + x
//
// A watermark on a group column closes the groups below it
// (keyWatermarks): at the next barrier, after the touched groups have been
// flushed, their rows are deleted from the state table, nothing is
// emitted for them, and the watermark is forwarded on that column of the
// output (the output row starts with the input row). A global top-N has
// no group and ignores watermarks.
type TopN struct {
	input    stream.Executor
	group    []int
	sort     sortKey
	pk       []int
	limit    int64 // < 0: no limit
	offset   int64
	emitRank bool
	tieCols  []int // WITH TIES: rows after the limit equal to the last one here are visible too
	table    *state.Table
	inTypes  []types.Type
	schema   []types.Type
	kind     string

	dirty  map[string]*topGroup
	order  []string
	keyBuf []byte
	out    output
	q      queue
	wm     keyWatermarks
	consistency
}

type topGroup struct {
	key  types.Row
	prev []types.Row // visible output rows at first touch
}

// TopNStateSchema returns the state table schema for a (group) top-N
// over input types inTypes. The stored row is the input row followed by
// one "is null" flag per NULLS FIRST order item.
func TopNStateSchema(name string, inTypes []types.Type, group []int, order []ColumnOrder, pk []int) state.Schema {
	sk := sortKey{orders: order}
	s := state.Schema{Name: name, Types: append([]types.Type(nil), inTypes...)}
	in := map[int]bool{}
	add := func(col int, desc bool) {
		if in[col] {
			return
		}
		in[col] = true
		s.PK = append(s.PK, col)
		s.Desc = append(s.Desc, desc)
	}
	for _, g := range group {
		add(g, false)
	}
	for _, o := range sk.orders {
		if o.NullsFirst {
			s.Types = append(s.Types, types.Bool)
			add(len(s.Types)-1, true)
		}
		add(o.Col, o.Desc)
	}
	for _, p := range pk {
		add(p, false)
	}
	s.DistKey = append([]int(nil), group...)
	return s
}

// NewTopN returns ORDER BY order LIMIT limit OFFSET offset over input
// (limit < 0: no limit). pk is the input's stream key. Output rows are the
// input rows.
func NewTopN(input stream.Executor, order []ColumnOrder, pk []int, limit, offset int64, table *state.Table) (*TopN, error) {
	return newTopN("TopN", input, nil, order, pk, limit, offset, false, table)
}

// NewGroupTopN returns a per-group top-N. With emitRank, each output row
// carries its 1-based position within its group (row_number) as a
// trailing bigint column.
func NewGroupTopN(input stream.Executor, group []int, order []ColumnOrder, pk []int, limit, offset int64, emitRank bool, table *state.Table) (*TopN, error) {
	return newTopN("GroupTopN", input, group, order, pk, limit, offset, emitRank, table)
}

// NewDistinctOn returns DISTINCT ON (on) ... ORDER BY order: the first row
// of each group of equal on values.
func NewDistinctOn(input stream.Executor, on []int, order []ColumnOrder, pk []int, table *state.Table) (*TopN, error) {
	return newTopN("DistinctOn", input, on, order, pk, 1, 0, false, table)
}

func newTopN(kind string, input stream.Executor, group []int, order []ColumnOrder, pk []int, limit, offset int64, emitRank bool, table *state.Table) (*TopN, error) {
	ts := input.Schema()
	if err := checkCols(kind+" group", group, len(ts)); err != nil {
		return nil, err
	}
	if err := checkCols(kind+" pk", pk, len(ts)); err != nil {
		return nil, err
	}
	for _, o := range order {
		if err := checkCols(kind+" order", []int{o.Col}, len(ts)); err != nil {
			return nil, err
		}
	}
	if offset < 0 {
		return nil, fmt.Errorf("%s: negative offset %d", kind, offset)
	}
	sk := sortKey{orders: order}
	if want := len(ts) + sk.width() - len(order); len(table.Schema().Types) != want {
		return nil, fmt.Errorf("%s: state table %d has %d columns; want %d (see TopNStateSchema)", kind, table.ID(), len(table.Schema().Types), want)
	}
	t := &TopN{input: input, group: group, sort: sk, pk: pk, limit: limit, offset: offset, emitRank: emitRank,
		table: table, inTypes: ts, kind: kind, dirty: map[string]*topGroup{}}
	t.schema = append([]types.Type(nil), ts...)
	if emitRank {
		t.schema = append(t.schema, types.Int64)
	}
	return t, nil
}

// SetWithTies makes the top-N FETCH FIRST n ROWS WITH TIES: the rows after
// the limit whose values in cols (the ORDER BY keys) equal those of the
// last row within it are output too. The state is the same (every input
// row); visible reads on past the limit while rows tie.
func (t *TopN) SetWithTies(cols []int) { t.tieCols = cols }

func (t *TopN) Schema() []types.Type { return t.schema }
func (t *TopN) Identity() string {
	return fmt.Sprintf("%s(group [%s], limit %d offset %d; state table %d)", t.kind, colList(t.group), t.limit, t.offset, t.table.ID())
}

func (t *TopN) Next(ctx context.Context) (stream.Message, error) {
	for {
		if msg, ok := t.q.pop(); ok {
			return msg, nil
		}
		msg, err := t.input.Next(ctx)
		if err != nil {
			return msg, err
		}
		if m := msg.Watermark; m != nil {
			t.wm.observe(t.group, m)
			continue
		}
		if b := msg.Barrier; b != nil {
			if err := t.flush(ctx); err != nil {
				return stream.Message{}, err
			}
			if err := t.cleanup(ctx); err != nil {
				return stream.Message{}, err
			}
			if err := commitAll(ctx, t.Identity(), b.Curr, t.table); err != nil {
				return stream.Message{}, err
			}
			t.q.pushChunks(&t.out)
			t.wm.emit(&t.q, t.groupCol)
			t.q.push(msg)
			continue
		}
		if err := t.apply(ctx, stateInputHook(t, "", msg.Chunk)); err != nil {
			return stream.Message{}, err
		}
		if len(t.dirty) >= maxDirtyGroups {
			if err := t.flush(ctx); err != nil {
				return stream.Message{}, err
			}
			t.q.pushChunks(&t.out)
		}
	}
}

// stored extends an input row with its NULLS FIRST flags.
func (t *TopN) stored(row types.Row) types.Row {
	out := append(row[:len(row):len(row)], nil...)
	for _, o := range t.sort.orders {
		if o.NullsFirst {
			out = append(out, types.DBool(row[o.Col].IsNull()))
		}
	}
	return out
}

// visible reads the group's output rows (positions offset..offset+limit-1).
func (t *TopN) visible(ctx context.Context, key types.Row) ([]types.Row, error) {
	it, err := t.table.Iter(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Identity(), err)
	}
	defer it.Close()
	var out []types.Row
	var pos int64
	var tk ticker
	var last, buf []byte // WITH TIES: the tie columns of the last row within the limit, of this one
	for it.Next() {
		if err := tk.tick(ctx); err != nil {
			return nil, err
		}
		if t.limit >= 0 && pos >= t.offset+t.limit {
			if len(t.tieCols) == 0 || last == nil {
				break
			}
			buf = appendKeyCols(buf[:0], it.Row(), t.tieCols, t.inTypes)
			if string(buf) != string(last) {
				break
			}
		} else if len(t.tieCols) > 0 && t.limit > 0 && pos == t.offset+t.limit-1 {
			last = appendKeyCols(nil, it.Row(), t.tieCols, t.inTypes)
		}
		if pos >= t.offset {
			r := it.Row()[:len(t.inTypes):len(t.inTypes)]
			if t.emitRank {
				r = append(r, types.DInt64(pos+1))
			}
			out = append(out, r)
		}
		pos++
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", t.Identity(), err)
	}
	return out, nil
}

func (t *TopN) apply(ctx context.Context, c *types.Chunk) error {
	var tk ticker
	for i, row := range c.Rows {
		if err := tk.tick(ctx); err != nil {
			return err
		}
		t.keyBuf = appendKeyCols(t.keyBuf[:0], row, t.group, t.inTypes)
		if _, ok := t.dirty[string(t.keyBuf)]; !ok {
			ks := string(t.keyBuf)
			key := project(row, t.group)
			prev, err := t.visible(ctx, key)
			if err != nil {
				return err
			}
			t.dirty[ks] = &topGroup{key: key, prev: prev}
			t.order = append(t.order, ks)
		}
		s := t.stored(row)
		if c.Ops[i].IsInsert() {
			t.table.Insert(s)
			continue
		}
		_, found, err := t.table.GetRow(ctx, s)
		if err != nil {
			return fmt.Errorf("%s: %w", t.Identity(), err)
		}
		if !found {
			// I6. Non-strict: the delete is dropped; the group's output
			// is recomputed from the table at the barrier as usual.
			err := inconsistent(t.Identity(), t.table, project(s, t.table.Schema().PK), "delete of a row that was never inserted (row %s)", row)
			if err := t.violation(ctx, t.Identity(), err); err != nil {
				return err
			}
			continue
		}
		t.table.Delete(s)
	}
	return nil
}

func (t *TopN) flush(ctx context.Context) error {
	var tk ticker
	for _, ks := range t.order {
		g := t.dirty[ks]
		cur, err := t.visible(ctx, g.key)
		if err != nil {
			return err
		}
		prevBy := make(map[string]types.Row, len(g.prev))
		for _, r := range g.prev {
			t.keyBuf = appendKeyCols(t.keyBuf[:0], r, t.pk, t.inTypes)
			prevBy[string(t.keyBuf)] = r
		}
		curKeys := make([]string, len(cur))
		curSet := make(map[string]bool, len(cur))
		for i, r := range cur {
			t.keyBuf = appendKeyCols(t.keyBuf[:0], r, t.pk, t.inTypes)
			curKeys[i] = string(t.keyBuf)
			curSet[curKeys[i]] = true
		}
		for _, r := range g.prev {
			if err := tk.tick(ctx); err != nil {
				return err
			}
			t.keyBuf = appendKeyCols(t.keyBuf[:0], r, t.pk, t.inTypes)
			if !curSet[string(t.keyBuf)] {
				t.out.emit(types.OpDelete, r)
			}
		}
		for i, r := range cur {
			if err := tk.tick(ctx); err != nil {
				return err
			}
			old, ok := prevBy[curKeys[i]]
			switch {
			case !ok:
				t.out.emit(types.OpInsert, r)
			case !sameRow(old, r, t.schema):
				t.out.update(old, r)
			}
		}
	}
	clear(t.dirty)
	t.order = t.order[:0]
	return nil
}

// SetVnodeOwner restricts watermark cleanup to the groups of the vnodes
// owns reports (the actor's share of the state table).
func (t *TopN) SetVnodeOwner(owns func(v uint16) bool) { t.wm.owns = owns }

// CleanedGroups reports how many groups watermark cleanup has deleted.
func (t *TopN) CleanedGroups() int64 { return t.wm.cleaned }

// groupCol maps a position of the group columns to its column in the
// input, the stored row and the output alike.
func (t *TopN) groupCol(p int) int { return t.group[p] }

// cleanup deletes the groups closed by the pending watermarks.
func (t *TopN) cleanup(ctx context.Context) error {
	var runs keyRuns
	err := t.wm.cleanup(ctx, t.table, t.groupCol, func(row types.Row) (bool, error) {
		// A group's rows come together (the table is keyed by group
		// first).
		t.keyBuf = appendKeyCols(t.keyBuf[:0], row, t.group, t.inTypes)
		return runs.isNew(t.keyBuf), nil
	})
	if err != nil {
		return fmt.Errorf("%s: watermark cleanup: %w", t.Identity(), err)
	}
	return nil
}
