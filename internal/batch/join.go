package batch

import (
	"context"

	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/types"
)

// joinExec is a hash join when the plan has equality keys and a nested-loop
// join otherwise. The right side is the build side: it is read fully into
// memory first; the left side streams.
//
// Right rows whose key has a NULL never match (SQL equality), but a right
// or full join still outputs them as unmatched, and a null-aware anti join
// (NOT IN) treats them as "unknown" matches for every left row.
type joinExec struct {
	r           *runner
	node        *plan.Join
	left, right executor

	built      bool
	rightRows  []types.Row
	matched    []bool
	table      map[string][]int
	nullKeyed  []int // right rows with a NULL in the key
	leftWidth  int
	rightWidth int

	pending []types.Row
	// pendingBytes is what pending holds (charged to mem): one left row
	// can match every right row.
	pendingBytes int64
	leftDone     bool
	tailDone     bool
	c            canceler
	buf          []byte
	lkey         []types.Datum
	combined     types.Row
	mem          memHold
}

func newJoin(r *runner, n *plan.Join, left, right executor) *joinExec {
	return &joinExec{r: r, node: n, left: left, right: right,
		leftWidth: len(n.Left.Schema()), rightWidth: len(n.Right.Schema())}
}

func (j *joinExec) build(ctx context.Context) error {
	j.built = true
	j.mem.a = j.r.mem
	ec := j.r.evalCtx(ctx)
	var key []types.Datum
	for {
		if err := j.c.check(ctx); err != nil {
			return err
		}
		row, err := j.right.Next(ctx)
		if err != nil {
			return err
		}
		if row == nil {
			break
		}
		if err := j.mem.grow("join build side", rowBytes(row)+sliceSize+8+mapEntrySize); err != nil {
			return err
		}
		idx := len(j.rightRows)
		j.rightRows = append(j.rightRows, row)
		if len(j.node.RightKeys) == 0 {
			continue
		}
		if j.table == nil {
			j.table = map[string][]int{}
		}
		if key, err = evalAll(ec, j.node.RightKeys, row, key); err != nil {
			return err
		}
		if hasNull(key) {
			j.nullKeyed = append(j.nullKeyed, idx)
			continue
		}
		j.buf = rowKey(j.buf, key)
		j.table[string(j.buf)] = append(j.table[string(j.buf)], idx)
	}
	j.matched = make([]bool, len(j.rightRows))
	return nil
}

func (j *joinExec) concat(l, r types.Row) types.Row {
	out := make(types.Row, 0, j.leftWidth+j.rightWidth)
	if l == nil {
		out = append(out, make(types.Row, j.leftWidth)...)
	} else {
		out = append(out, l...)
	}
	if r == nil {
		out = append(out, make(types.Row, j.rightWidth)...)
	} else {
		out = append(out, r...)
	}
	return out
}

// condOK evaluates the residual condition for a left/right pair.
func (j *joinExec) condOK(ctx context.Context, l, r types.Row) (bool, error) {
	if j.node.Cond == nil {
		return true, nil
	}
	j.combined = append(append(j.combined[:0], l...), r...)
	return evalBool(j.r.evalCtx(ctx), j.node.Cond, j.combined)
}

func (j *joinExec) Next(ctx context.Context) (types.Row, error) {
	if !j.built {
		if err := j.build(ctx); err != nil {
			return nil, err
		}
	}
	for {
		if len(j.pending) > 0 {
			row := j.pending[0]
			j.pending = j.pending[1:]
			return row, nil
		}
		j.pending = nil
		j.mem.a.shrink(j.pendingBytes)
		j.mem.n -= j.pendingBytes
		j.pendingBytes = 0
		if j.leftDone {
			if !j.tailDone {
				j.tailDone = true
				if k := j.node.Kind; k == plan.RightJoin || k == plan.FullJoin {
					for i, r := range j.rightRows {
						if !j.matched[i] {
							j.pending = append(j.pending, j.concat(nil, r))
						}
					}
					continue
				}
			}
			return nil, nil
		}
		l, err := j.left.Next(ctx)
		if err != nil {
			return nil, err
		}
		if l == nil {
			j.leftDone = true
			continue
		}
		if err := j.probe(ctx, l); err != nil {
			return nil, err
		}
	}
}

// candidates returns the right rows that can match l (nil, false when l's
// key has a NULL and nothing can match).
func (j *joinExec) candidates(ctx context.Context, l types.Row) ([]int, bool, error) {
	if len(j.node.LeftKeys) == 0 {
		return nil, true, nil // every row: see probe
	}
	var err error
	if j.lkey, err = evalAll(j.r.evalCtx(ctx), j.node.LeftKeys, l, j.lkey); err != nil {
		return nil, false, err
	}
	if hasNull(j.lkey) {
		return nil, false, nil
	}
	j.buf = rowKey(j.buf, j.lkey)
	return j.table[string(j.buf)], true, nil
}

func (j *joinExec) probe(ctx context.Context, l types.Row) error {
	kind := j.node.Kind
	cands, keyOK, err := j.candidates(ctx, l)
	if err != nil {
		return err
	}
	all := len(j.node.LeftKeys) == 0
	n := len(cands)
	if all {
		n = len(j.rightRows)
	}
	if !keyOK {
		n = 0
	}
	found := false
	for x := 0; x < n; x++ {
		if err := j.c.check(ctx); err != nil {
			return err
		}
		i := x
		if !all {
			i = cands[x]
		}
		r := j.rightRows[i]
		ok, err := j.condOK(ctx, l, r)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		found = true
		switch kind {
		case plan.SemiJoin, plan.AntiJoin:
		default:
			j.matched[i] = true
			if err := j.hold(l, r); err != nil {
				return err
			}
			j.pending = append(j.pending, j.concat(l, r))
		}
		if kind == plan.SemiJoin || kind == plan.AntiJoin {
			break
		}
	}
	switch kind {
	case plan.LeftJoin, plan.FullJoin:
		if !found {
			j.pending = append(j.pending, j.concat(l, nil))
		}
	case plan.SemiJoin:
		if found {
			j.pending = append(j.pending, l)
		}
	case plan.AntiJoin:
		if found {
			return nil
		}
		if j.node.NullAware && len(j.rightRows) > 0 {
			// NOT IN: a NULL on either side makes the comparison
			// unknown, which filters the row out.
			if !keyOK {
				// l's key is NULL: unknown unless no right row passes
				// the residual condition.
				for _, r := range j.rightRows {
					ok, err := j.condOK(ctx, l, r)
					if err != nil {
						return err
					}
					if ok {
						return nil
					}
				}
			}
			for _, i := range j.nullKeyed {
				ok, err := j.condOK(ctx, l, j.rightRows[i])
				if err != nil {
					return err
				}
				if ok {
					return nil
				}
			}
		}
		j.pending = append(j.pending, l)
	}
	return nil
}

// hold charges a pending output row.
func (j *joinExec) hold(l, r types.Row) error {
	n := sliceSize + int64(j.leftWidth+j.rightWidth)*datumSize
	if err := j.mem.grow("join", n); err != nil {
		return err
	}
	j.pendingBytes += n
	return nil
}

func (j *joinExec) Close() {
	j.left.Close()
	j.right.Close()
	j.mem.release()
}
