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

// JoinType is the kind of a streaming join.
type JoinType uint8

const (
	JoinInner JoinType = iota
	JoinLeftOuter
	JoinRightOuter
	JoinFullOuter
	// JoinLeftSemi outputs each left row that has at least one match
	// (EXISTS, IN); JoinLeftAnti each left row that has none (NOT EXISTS).
	// Their output is the left columns only.
	JoinLeftSemi
	JoinLeftAnti
)

func (k JoinType) String() string {
	return [...]string{"Inner", "LeftOuter", "RightOuter", "FullOuter", "LeftSemi", "LeftAnti"}[k]
}

func (k JoinType) semi() bool { return k == JoinLeftSemi || k == JoinLeftAnti }

// JoinSide is one input of a HashJoin.
type JoinSide struct {
	Input stream.Executor
	// Keys are the equi-join key columns (Left.Keys[i] = Right.Keys[i]);
	// both sides' key columns must have the same types.
	Keys []int
	// PK is the side's stream key: unique among the side's live rows.
	PK []int
	// State is the side's state table (HashJoinStateSchema).
	State *state.Table
}

// HashJoin is a symmetric hash join. Each side keeps its rows in a state
// table keyed by (join key, side pk). A row arriving on one side probes
// the other side's rows with the same key; each pair is emitted exactly
// once, when the later of its two rows arrives, so the output is exact
// under any interleaving.
//
// Outer sides also keep, per row, its degree: how many rows of the other
// side it matches (equal keys and a true residual condition). The
// NULL-padded row of a preserved-side row exists exactly while its degree
// is 0: it is retracted when the first match appears and re-emitted when
// the last one goes.
//
//	left outer join, key k:
//	  +L(k)            -> +L|NULL            (degree(L) = 0)
//	  +R(k)            -> -L|NULL, +L|R      (degree(L) = 1)
//	  -R(k)            -> -L|R, +L|NULL      (degree(L) = 0)
//
// NULL keys never match (unless the key is null-safe, IS NOT DISTINCT
// FROM); their rows are stored all the same so deletes can be checked.
// The degree is kept as a trailing column of the side's state table.
type HashJoin struct {
	kind     JoinType
	sides    [2]joinSide
	nullSafe []bool
	cond     expr.Expr
	loc      *time.Location
	actor    stream.ActorID
	schema   []types.Type
	align    *aligner
	out      output
	q        queue
	stopped  bool
	keyBuf   []byte
	skeyBuf  []byte
	fresh    bool           // SetFresh: the state tables started empty
	wm       joinWatermarks // join_watermark.go
	consistency
}

type joinSide struct {
	JoinSide
	outer bool
	width int
	cache *joinCache
	// known, when set (SetFresh), holds the join key of every row written
	// to the side's state table since it was created empty: a probe for a
	// key it does not contain has no matches and reads no storage.
	known *keyFilter
	// probes counts the probes of this side by the other side's rows, and
	// writes the rows written to it: a side probed at least as often as
	// written caches the first row of a key it never saw (writeKey).
	probes, writes int64
}

// HashJoinStateSchema returns the schema of one side's state table:
// the side's row (plus a degree column when the side is preserved by an
// outer join), keyed by (keys, pk columns not in keys), distributed by the
// keys.
func HashJoinStateSchema(name string, sideTypes []types.Type, keys, pk []int, outer bool) state.Schema {
	s := state.Schema{Name: name, Types: append([]types.Type(nil), sideTypes...)}
	if outer {
		s.Types = append(s.Types, types.Int64)
	}
	s.PK = append(s.PK, keys...)
	for _, p := range pk {
		dup := false
		for _, k := range keys {
			dup = dup || k == p
		}
		if !dup {
			s.PK = append(s.PK, p)
		}
	}
	s.DistKey = append([]int(nil), keys...)
	return s
}

// OuterSides reports which sides of a join of kind k keep a degree column
// in HashJoinStateSchema: the preserved sides of outer joins, and the left
// side of semi and anti joins.
func (k JoinType) OuterSides() (left, right bool) {
	return k == JoinLeftOuter || k == JoinFullOuter || k.semi(), k == JoinRightOuter || k == JoinFullOuter
}

// NewHashJoin returns a join of left and right on Left.Keys = Right.Keys
// (nullSafe[i]: key i compares with IS NOT DISTINCT FROM; nil: none) and
// the residual condition cond (nil: none) evaluated over left ++ right.
// Output rows are the left columns followed by the right columns. actor is
// the id of the actor running the join (it stops after a barrier that
// stops that actor).
func NewHashJoin(actor stream.ActorID, kind JoinType, left, right JoinSide, nullSafe []bool, cond expr.Expr, loc *time.Location) (*HashJoin, error) {
	if len(left.Keys) != len(right.Keys) {
		return nil, fmt.Errorf("hash join: %d left keys but %d right keys", len(left.Keys), len(right.Keys))
	}
	if nullSafe == nil {
		nullSafe = make([]bool, len(left.Keys))
	}
	if len(nullSafe) != len(left.Keys) {
		return nil, fmt.Errorf("hash join: nullSafe has %d entries for %d keys", len(nullSafe), len(left.Keys))
	}
	lo, ro := kind.OuterSides()
	j := &HashJoin{kind: kind, nullSafe: nullSafe, cond: cond, loc: loc, actor: actor}
	for i, s := range []JoinSide{left, right} {
		ts := s.Input.Schema()
		if err := checkCols("join keys", s.Keys, len(ts)); err != nil {
			return nil, err
		}
		if err := checkCols("join side pk", s.PK, len(ts)); err != nil {
			return nil, err
		}
		seen := map[int]bool{}
		for _, k := range s.Keys {
			if seen[k] {
				return nil, fmt.Errorf("hash join: column %d appears twice among one side's keys; put the extra equality in the condition", k)
			}
			seen[k] = true
		}
		outer := lo
		if i == 1 {
			outer = ro
		}
		want := len(ts)
		if outer {
			want++
		}
		if len(s.State.Schema().Types) != want {
			return nil, fmt.Errorf("hash join: state table %d has %d columns; want %d (see HashJoinStateSchema)", s.State.ID(), len(s.State.Schema().Types), want)
		}
		j.sides[i] = joinSide{JoinSide: s, outer: outer, width: len(ts), cache: newJoinCache()}
		if i == 0 || !kind.semi() {
			j.schema = append(j.schema, ts...)
		}
	}
	lt, rt := left.Input.Schema(), right.Input.Schema()
	for i := range left.Keys {
		a, b := lt[left.Keys[i]], rt[right.Keys[i]]
		if a.Kind != b.Kind {
			return nil, fmt.Errorf("hash join: key %d has types %s and %s; cast both to one type", i, a, b)
		}
	}
	j.align = newAligner(j.Identity(), []stream.Executor{left.Input, right.Input})
	j.align.watermarks = true
	return j, nil
}

// SetFresh tells the join that both state tables were empty when it
// started (a new job): it then remembers the join keys it writes, and the
// first probe of a key never written (each key's, during a backfill)
// answers "no matches" without a storage read.
func (j *HashJoin) SetFresh() {
	j.fresh = true
	for i := range j.sides {
		j.sides[i].known = newKeyFilter()
	}
	j.setupCleanIndexes()
}

func (j *HashJoin) Schema() []types.Type { return j.schema }
func (j *HashJoin) Identity() string {
	c := ""
	if j.cond != nil {
		c = ", cond " + j.cond.String()
	}
	return fmt.Sprintf("HashJoin(%s, [%s] = [%s]%s; state tables %d, %d)", j.kind,
		colList(j.sides[0].Keys), colList(j.sides[1].Keys), c, j.sides[0].State.ID(), j.sides[1].State.ID())
}

func (j *HashJoin) Next(ctx context.Context) (stream.Message, error) {
	for {
		if msg, ok := j.q.pop(); ok {
			return msg, nil
		}
		if j.stopped {
			return stream.Message{}, stream.ErrStopped
		}
		side, msg, err := j.align.next(ctx)
		if err != nil {
			return stream.Message{}, err
		}
		if w := msg.Watermark; w != nil {
			j.wm.observe(side, w)
			continue
		}
		if b := msg.Barrier; b != nil {
			if err := j.cleanup(ctx); err != nil {
				return stream.Message{}, err
			}
			if err := commitAll(ctx, j.Identity(), b.Curr, j.sides[0].State, j.sides[1].State); err != nil {
				return stream.Message{}, err
			}
			for i := range j.sides {
				j.sides[i].cache.lru.shrinkToShare()
			}
			if b.StopsActor(j.actor) {
				j.stopped = true
				j.align.close()
				for i := range j.sides {
					j.sides[i].cache.lru.close()
				}
			}
			return msg, nil
		}
		if err := j.apply(ctx, side, msg.Chunk); err != nil {
			return stream.Message{}, err
		}
		j.q.pushChunks(&j.out)
	}
}

// joined builds the output row of left row l and right row r (nil: NULLs).
func (j *HashJoin) joined(side int, row, other types.Row) types.Row {
	out := make(types.Row, 0, len(j.schema))
	l, r := row, other
	if side == 1 {
		l, r = other, row
	}
	if l == nil {
		out = out[:j.sides[0].width] // NULLs: make zeroes the row
	} else {
		out = append(out, l[:j.sides[0].width]...)
	}
	if r == nil {
		out = out[:len(out)+j.sides[1].width]
	} else {
		out = append(out, r[:j.sides[1].width]...)
	}
	return out
}

func (j *HashJoin) apply(ctx context.Context, side int, c *types.Chunk) error {
	c = stateInputHook(j, [2]string{" side 0", " side 1"}[side], c)
	var tk ticker
	for i, row := range c.Rows {
		if err := tk.tick(ctx); err != nil {
			return err
		}
		var err error
		switch {
		case j.kind.semi() && c.Ops[i].IsInsert():
			err = j.semiInsert(ctx, side, row, &tk)
		case j.kind.semi():
			err = j.semiDelete(ctx, side, row, &tk)
		case c.Ops[i].IsInsert():
			err = j.insert(ctx, side, row, &tk)
		default:
			err = j.delete(ctx, side, row, &tk)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// probeKey returns the key values of row, or nil when a NULL key makes
// the row match nothing.
func (j *HashJoin) probeKey(side int, row types.Row) types.Row {
	s := &j.sides[side]
	key := make(types.Row, len(s.Keys))
	for i, k := range s.Keys {
		if row[k].IsNull() && !j.nullSafe[i] {
			return nil
		}
		key[i] = row[k]
	}
	return key
}

// cacheKey encodes row's join key (side's key columns) for the caches;
// false when a NULL key means the row is never probed for.
func (j *HashJoin) cacheKey(side int, row types.Row) (string, bool) {
	s := &j.sides[side]
	buf := j.keyBuf[:0]
	for i, k := range s.Keys {
		if row[k].IsNull() && !j.nullSafe[i] {
			return "", false
		}
		buf = types.AppendKey(buf, row[k], types.Type{}, false, false)
	}
	j.keyBuf = buf
	return string(buf), true
}

// write stores row in side's state table (and cache).
func (j *HashJoin) write(side int, row types.Row) {
	ck, ok := j.cacheKey(side, row)
	j.writeKey(side, ck, ok, row)
}

// writeKey is write with row's cache key already computed (cacheKey).
func (j *HashJoin) writeKey(side int, ck string, hasCK bool, row types.Row) {
	s := &j.sides[side]
	s.writes++
	newKey := false
	if hasCK && s.known != nil {
		newKey = !s.known.mayContainString(ck)
		if !s.known.addString(ck) {
			s.known = nil // full: it no longer knows every key
		}
	}
	if !hasCK || !s.cache.has(ck) {
		if newKey && s.probes >= s.writes {
			// The key's only row is this one: cache it, so that the other
			// side's first probe of it (Nexmark q4: a bid of a new
			// auction) reads no storage. Sides written more often than
			// probed (q4's bids) skip the upkeep.
			j.skeyBuf = s.State.EncodeKey(j.skeyBuf[:0], row)
			skey := string(j.skeyBuf)
			s.State.InsertKey(skey, row)
			s.cache.fill(ck, []string{skey}, []types.Row{row.Copy()})
			return
		}
		s.State.Insert(row)
		return
	}
	j.skeyBuf = s.State.EncodeKey(j.skeyBuf[:0], row)
	skey := string(j.skeyBuf)
	s.State.InsertKey(skey, row)
	s.cache.put(ck, skey, row)
}

// remove deletes row from side's state table (and cache).
func (j *HashJoin) remove(side int, row types.Row) {
	s := &j.sides[side]
	ck, ok := j.cacheKey(side, row)
	if !ok || !s.cache.has(ck) {
		s.State.Delete(row)
		return
	}
	j.skeyBuf = s.State.EncodeKey(j.skeyBuf[:0], row)
	skey := string(j.skeyBuf)
	s.State.DeleteKey(skey)
	s.cache.remove(ck, skey)
}

// stored returns side's stored row with row's state key.
func (j *HashJoin) stored(ctx context.Context, side int, row types.Row) (types.Row, bool, error) {
	s := &j.sides[side]
	probe := row
	if s.outer {
		probe = append(row[:s.width:s.width], types.NullDatum)
	}
	if ck, ok := j.cacheKey(side, row); ok {
		if e, ok := s.cache.get(ck); ok {
			j.skeyBuf = s.State.EncodeKey(j.skeyBuf[:0], probe)
			r, found := e.lookup(string(j.skeyBuf))
			return r, found, nil
		}
	}
	r, found, err := s.State.GetRow(ctx, probe)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", j.Identity(), err)
	}
	return r, found, nil
}

// forMatches calls fn for every row of the other side matching row, in
// state-key order, from the other side's cache or its state table (then
// caching the key's rows).
func (j *HashJoin) forMatches(ctx context.Context, side int, row types.Row, tk *ticker, fn func(other types.Row) error) error {
	ck, ok := j.cacheKey(side, row)
	return j.forMatchesKey(ctx, side, row, ck, ok, tk, fn)
}

// forMatchesKey is forMatches with row's cache key already computed.
func (j *HashJoin) forMatchesKey(ctx context.Context, side int, row types.Row, ck string, hasCK bool, tk *ticker, fn func(other types.Row) error) error {
	if !hasCK {
		return nil
	}
	o := &j.sides[1-side]
	o.probes++
	var ec *expr.EvalContext
	visit := func(other types.Row) error {
		if err := tk.tick(ctx); err != nil {
			return err
		}
		if j.cond != nil {
			if ec == nil {
				ec = newEvalContext(ctx, j.loc)
			}
			d, err := j.cond.Eval(ec, j.joined(side, row, other))
			if err != nil {
				// A data error makes the condition NULL, not true: the pair
				// does not match (evalerr.go). The same pair evaluates the
				// same when either side is retracted, so the join's degrees
				// stay consistent.
				if err := exprError(ctx, j.Identity(), j.cond, err); err != nil {
					return err
				}
				return nil
			}
			if d.IsNull() || !d.Bool() {
				return nil
			}
		}
		if joinProbeHook != nil {
			joinProbeHook()
		}
		return fn(other)
	}
	if e, ok := o.cache.get(ck); ok {
		for _, other := range e.rows {
			if err := visit(other); err != nil {
				return err
			}
		}
		return nil
	}
	if o.known != nil && !o.known.mayContainString(ck) {
		// No row was ever written under ck. No empty cache entry either:
		// the filter answers the next probe as cheaply, and rows written
		// to a key nobody probes again need no cache upkeep (q4's bids of
		// a new auction).
		return nil
	}
	it, err := o.State.Iter(ctx, j.probeKey(side, row))
	if err != nil {
		return fmt.Errorf("%s: %w", j.Identity(), err)
	}
	defer it.Close()
	var skeys []string
	var rows []types.Row
	var size int64
	collect := true
	for it.Next() {
		other := it.Row()
		if collect {
			j.skeyBuf = o.State.EncodeKey(j.skeyBuf[:0], other)
			skey := string(j.skeyBuf)
			size += joinRowBytes(skey, other)
			if o.cache.tooLarge(size) {
				collect, skeys, rows = false, nil, nil
			} else {
				skeys = append(skeys, skey)
				rows = append(rows, other)
			}
		}
		if err := visit(other); err != nil {
			return err
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("%s: %w", j.Identity(), err)
	}
	if collect {
		o.cache.fill(ck, skeys, rows)
	}
	return nil
}

// joinProbeHook, when set by a test, runs for every matched row.
var joinProbeHook func()

func (j *HashJoin) insert(ctx context.Context, side int, row types.Row, tk *ticker) error {
	s, o := &j.sides[side], &j.sides[1-side]
	var degree int64
	var updates []types.Row
	ck, hasCK := j.cacheKey(side, row)
	err := j.forMatchesKey(ctx, side, row, ck, hasCK, tk, func(other types.Row) error {
		degree++
		if o.outer {
			d := other[o.width].Int()
			if d == 0 {
				j.out.emit(types.OpDelete, j.joined(side, nil, other))
			}
			u := append(other[:o.width:o.width], types.DInt64(d+1))
			updates = append(updates, u)
		}
		j.out.emit(types.OpInsert, j.joined(side, row, other))
		return nil
	})
	if err != nil {
		return err
	}
	for _, u := range updates {
		j.write(1-side, u)
	}
	stored := row
	if s.outer {
		if degree == 0 {
			j.out.emit(types.OpInsert, j.joined(side, row, nil))
		}
		stored = append(row[:s.width:s.width], types.DInt64(degree))
	}
	j.writeKey(side, ck, hasCK, stored)
	if ix := j.wm.index[side]; ix != nil && ix.ready {
		j.indexRow(side, stored)
	}
	return nil
}

func (j *HashJoin) delete(ctx context.Context, side int, row types.Row, tk *ticker) error {
	s, o := &j.sides[side], &j.sides[1-side]
	stored, found, err := j.stored(ctx, side, row)
	if err != nil {
		return err
	}
	if !found {
		// I6. Non-strict: the delete is dropped (no joined row of it was
		// ever emitted).
		return j.violation(ctx, j.Identity(), inconsistent(j.Identity(), s.State, project(row, s.State.Schema().PK),
			"delete of a %s row that was never inserted (row %s)", [2]string{"left", "right"}[side], row))
	}
	var updates []types.Row
	err = j.forMatches(ctx, side, stored, tk, func(other types.Row) error {
		if o.outer && other[o.width].Int() <= 0 {
			// I6. Non-strict: the pair was never counted, so nothing of
			// it is retracted and the other row's degree stays 0.
			return j.violation(ctx, j.Identity(), inconsistent(j.Identity(), o.State, project(other, o.State.Schema().PK),
				"join degree of %s would become negative (deleting %s)", other[:o.width], stored[:s.width]))
		}
		j.out.emit(types.OpDelete, j.joined(side, stored, other))
		if o.outer {
			d := other[o.width].Int() - 1
			if d == 0 {
				j.out.emit(types.OpInsert, j.joined(side, nil, other))
			}
			updates = append(updates, append(other[:o.width:o.width], types.DInt64(d)))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, u := range updates {
		j.write(1-side, u)
	}
	if s.outer && stored[s.width].Int() == 0 {
		j.out.emit(types.OpDelete, j.joined(side, stored, nil))
	}
	j.remove(side, stored)
	return nil
}

// Semi and anti joins keep a degree for each left row; the left row is
// in the output while its degree is > 0 (semi) or == 0 (anti). A left
// change needs no output beyond its own row; a right change moves the
// degrees of its matching left rows and emits the rows that cross 0.
//
//	semi: +L (no match) -> nothing; +R(k) -> +L; -R(k) -> -L
//	anti: +L (no match) -> +L;      +R(k) -> -L; -R(k) -> +L
func (j *HashJoin) semiVisible(degree int64) bool {
	if j.kind == JoinLeftSemi {
		return degree > 0
	}
	return degree == 0
}

func (j *HashJoin) semiInsert(ctx context.Context, side int, row types.Row, tk *ticker) error {
	l := &j.sides[0]
	if side == 0 {
		var degree int64
		if err := j.forMatches(ctx, 0, row, tk, func(types.Row) error { degree++; return nil }); err != nil {
			return err
		}
		if j.semiVisible(degree) {
			j.out.emit(types.OpInsert, row[:l.width:l.width])
		}
		j.write(0, append(row[:l.width:l.width], types.DInt64(degree)))
		return nil
	}
	var updates []types.Row
	err := j.forMatches(ctx, 1, row, tk, func(left types.Row) error {
		d := left[l.width].Int()
		if j.semiVisible(d) != j.semiVisible(d+1) {
			op := types.OpInsert
			if j.semiVisible(d) {
				op = types.OpDelete
			}
			j.out.emit(op, left[:l.width:l.width])
		}
		updates = append(updates, append(left[:l.width:l.width], types.DInt64(d+1)))
		return nil
	})
	if err != nil {
		return err
	}
	for _, u := range updates {
		j.write(0, u)
	}
	j.write(1, row)
	return nil
}

func (j *HashJoin) semiDelete(ctx context.Context, side int, row types.Row, tk *ticker) error {
	l := &j.sides[0]
	stored, found, err := j.stored(ctx, side, row)
	if err != nil {
		return err
	}
	if !found {
		// I6. Non-strict: the delete is dropped.
		s := &j.sides[side]
		return j.violation(ctx, j.Identity(), inconsistent(j.Identity(), s.State, project(row, s.State.Schema().PK),
			"delete of a %s row that was never inserted (row %s)", [2]string{"left", "right"}[side], row))
	}
	if side == 0 {
		if j.semiVisible(stored[l.width].Int()) {
			j.out.emit(types.OpDelete, stored[:l.width:l.width])
		}
		j.remove(0, stored)
		return nil
	}
	var updates []types.Row
	err = j.forMatches(ctx, 1, stored, tk, func(left types.Row) error {
		d := left[l.width].Int()
		if d <= 0 {
			// I6. Non-strict: the left row's degree stays 0 and its
			// visibility unchanged.
			return j.violation(ctx, j.Identity(), inconsistent(j.Identity(), l.State, project(left, l.State.Schema().PK),
				"join degree of %s would become negative (deleting %s)", left[:l.width], stored))
		}
		if j.semiVisible(d) != j.semiVisible(d-1) {
			op := types.OpInsert
			if j.semiVisible(d) {
				op = types.OpDelete
			}
			j.out.emit(op, left[:l.width:l.width])
		}
		updates = append(updates, append(left[:l.width:l.width], types.DInt64(d-1)))
		return nil
	})
	if err != nil {
		return err
	}
	for _, u := range updates {
		j.write(0, u)
	}
	j.remove(1, stored)
	return nil
}
