package batch

import (
	"context"

	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/types"
)

// recursiveUnionExec runs WITH RECURSIVE: the base rows, then the
// recursive term over the rows of the previous step, rebuilt for each
// step, until a step yields no new row. Every row is kept in memory (the
// result and, for UNION, the set of rows seen); a query that never stops
// runs until statement_timeout or a cancel (checked every few hundred
// rows, I5).
type recursiveUnionExec struct {
	r    *runner
	node *plan.RecursiveUnion
	out  []types.Row
	i    int
	done bool
	c    canceler
	mem  memHold
}

func (e *recursiveUnionExec) Next(ctx context.Context) (types.Row, error) {
	if !e.done {
		e.done = true
		if err := e.run(ctx); err != nil {
			return nil, err
		}
	}
	if e.i >= len(e.out) {
		return nil, nil
	}
	e.i++
	return e.out[e.i-1], nil
}

func (e *recursiveUnionExec) run(ctx context.Context) error {
	seen := map[string]struct{}{}
	e.mem.a = e.r.mem
	var buf []byte
	// step drains n and returns its rows that are new (all of them for
	// UNION ALL).
	step := func(n plan.Node) ([]types.Row, error) {
		it, err := e.r.build(n)
		if err != nil {
			return nil, err
		}
		defer it.Close()
		var rows []types.Row
		for {
			if err := e.c.check(ctx); err != nil {
				return nil, err
			}
			row, err := it.Next(ctx)
			if err != nil {
				return nil, err
			}
			if row == nil {
				return rows, nil
			}
			if !e.node.All {
				buf = rowKey(buf, row)
				if _, ok := seen[string(buf)]; ok {
					continue
				}
				if err := e.mem.grow("WITH RECURSIVE", mapEntrySize+int64(len(buf))); err != nil {
					return nil, err
				}
				seen[string(buf)] = struct{}{}
			}
			if err := e.mem.grow("WITH RECURSIVE", rowBytes(row)+sliceSize); err != nil {
				return nil, err
			}
			rows = append(rows, row)
		}
	}
	work, err := step(e.node.Base)
	if err != nil {
		return err
	}
	for len(work) > 0 {
		e.out = append(e.out, work...)
		e.r.work[e.node.WorkID] = work
		if work, err = step(e.node.Recursive); err != nil {
			return err
		}
	}
	delete(e.r.work, e.node.WorkID)
	return nil
}

func (e *recursiveUnionExec) Close() { e.mem.release() }

// workTableExec reads the rows of the current step of its RecursiveUnion.
type workTableExec struct {
	rows []types.Row
	i    int
}

func (w *workTableExec) Next(context.Context) (types.Row, error) {
	if w.i >= len(w.rows) {
		return nil, nil
	}
	w.i++
	return w.rows[w.i-1], nil
}

func (w *workTableExec) Close() {}
