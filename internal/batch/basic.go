package batch

import (
	"context"
	"slices"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

type scanExec struct {
	r    *runner
	node *plan.Scan
	it   RowIterator
	c    canceler
}

func (s *scanExec) Next(ctx context.Context) (types.Row, error) {
	if s.it == nil {
		if s.r.env.Data == nil {
			return nil, internalf("no data source for scan of %s", s.node.Rel.Name)
		}
		it, err := s.open(ctx)
		if err != nil || it == nil {
			return nil, err
		}
		s.it = it
	}
	var ec *expr.EvalContext
	for {
		if err := s.c.check(ctx); err != nil {
			return nil, err
		}
		row, err := s.it.Next(ctx)
		if err != nil || row == nil {
			return nil, err
		}
		if s.node.Filter == nil {
			return row, nil
		}
		if ec == nil {
			ec = s.r.evalCtx(ctx)
		}
		ok, err := evalBool(ec, s.node.Filter, row)
		if err != nil {
			return nil, err
		}
		if ok {
			return row, nil
		}
	}
}

// open starts the scan: a key-range read when the filter fixes a prefix of
// the primary key and the source supports it, else a full scan. A NULL in
// the prefix matches nothing (nil iterator, no error).
func (s *scanExec) open(ctx context.Context) (RowIterator, error) {
	if s.node.Index != nil {
		if it, ok, err := s.openIndex(ctx); err != nil || ok {
			return it, err
		}
	}
	if ks, ok := s.r.env.Data.(KeyScanner); ok && len(s.node.KeyPrefix) > 0 {
		ec := s.r.evalCtx(ctx)
		prefix := make(types.Row, len(s.node.KeyPrefix))
		usable := true
		for i, e := range s.node.KeyPrefix {
			d, err := e.Eval(ec, nil)
			if err != nil {
				usable = false // e.g. out of range for the key type
				break
			}
			if d.IsNull() {
				return emptyRows{}, nil
			}
			prefix[i] = d
		}
		if usable {
			it, ok, err := ks.ScanKey(ctx, s.node.Rel, prefix)
			if err != nil || ok {
				return it, err
			}
		}
	}
	if ts, ok := s.r.env.Data.(TimeScanner); ok {
		// A time-series table filtered on its time index reads only the
		// files whose time range overlaps (timerange.go).
		if lo, hi, ok := timeBounds(s.node.Rel, s.node.Filter, s.r.evalCtx(ctx)); ok {
			if lo > hi {
				return emptyRows{}, nil
			}
			it, ok, err := ts.ScanTime(ctx, s.node.Rel, lo, hi)
			if err != nil || ok {
				return it, err
			}
		}
	}
	return s.r.env.Data.Scan(ctx, s.node.Rel)
}

// emptyRows is a scan that matches nothing.
type emptyRows struct{}

func (emptyRows) Next(context.Context) (types.Row, error) { return nil, nil }
func (emptyRows) Close()                                  {}

func (s *scanExec) Close() {
	if s.it != nil {
		s.it.Close()
		s.it = nil
	}
}

type valuesExec struct {
	r    *runner
	node *plan.Values
	i    int
}

func (v *valuesExec) Next(ctx context.Context) (types.Row, error) {
	if v.i >= len(v.node.Rows) {
		return nil, nil
	}
	exprs := v.node.Rows[v.i]
	v.i++
	if v.i%cancelCheckRows == 0 {
		if err := ctxErr(ctx); err != nil {
			return nil, err
		}
	}
	row := make(types.Row, len(exprs))
	ec := v.r.evalCtx(ctx)
	for i, e := range exprs {
		d, err := e.Eval(ec, nil)
		if err != nil {
			return nil, err
		}
		row[i] = d
	}
	return row, nil
}
func (v *valuesExec) Close() {}

type filterExec struct {
	r    *runner
	in   executor
	cond expr.Expr
	c    canceler
}

func (f *filterExec) Next(ctx context.Context) (types.Row, error) {
	ec := f.r.evalCtx(ctx)
	for {
		if err := f.c.check(ctx); err != nil {
			return nil, err
		}
		row, err := f.in.Next(ctx)
		if err != nil || row == nil {
			return nil, err
		}
		ok, err := evalBool(ec, f.cond, row)
		if err != nil {
			return nil, err
		}
		if ok {
			return row, nil
		}
	}
}
func (f *filterExec) Close() { f.in.Close() }

type projectExec struct {
	r     *runner
	in    executor
	exprs []expr.Expr
}

func (p *projectExec) Next(ctx context.Context) (types.Row, error) {
	row, err := p.in.Next(ctx)
	if err != nil || row == nil {
		return nil, err
	}
	ec := p.r.evalCtx(ctx)
	out := make(types.Row, len(p.exprs))
	for i, e := range p.exprs {
		d, err := e.Eval(ec, row)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}
func (p *projectExec) Close() { p.in.Close() }

type limitExec struct {
	r             *runner
	in            executor
	limit, offset expr.Expr
	started       bool
	remaining     int64 // -1: unlimited
}

func (l *limitExec) Next(ctx context.Context) (types.Row, error) {
	if !l.started {
		l.started = true
		ec := l.r.evalCtx(ctx)
		l.remaining = -1
		if l.limit != nil {
			n, null, err := evalCount(ec, l.limit, "LIMIT")
			if err != nil {
				return nil, err
			}
			if !null {
				l.remaining = n
			}
		}
		if l.offset != nil {
			n, _, err := evalCount(ec, l.offset, "OFFSET")
			if err != nil {
				return nil, err
			}
			var c canceler
			for i := int64(0); i < n && l.remaining != 0; i++ {
				if err := c.check(ctx); err != nil {
					return nil, err
				}
				row, err := l.in.Next(ctx)
				if err != nil || row == nil {
					l.remaining = 0
					return nil, err
				}
			}
		}
	}
	if l.remaining == 0 {
		return nil, nil
	}
	row, err := l.in.Next(ctx)
	if err != nil || row == nil {
		return nil, err
	}
	if l.remaining > 0 {
		l.remaining--
	}
	return row, nil
}
func (l *limitExec) Close() { l.in.Close() }

// evalCount evaluates a LIMIT/OFFSET value: NULL means no limit (PostgreSQL
// treats LIMIT NULL as LIMIT ALL and OFFSET NULL as 0); negative is 2201W /
// 2201X.
func evalCount(ec *expr.EvalContext, e expr.Expr, what string) (int64, bool, error) {
	d, err := e.Eval(ec, nil)
	if err != nil {
		return 0, false, err
	}
	if d.IsNull() {
		return 0, true, nil
	}
	var n int64
	switch d.Kind() {
	case types.KindInt16, types.KindInt32, types.KindInt64:
		n = d.Int()
	default:
		f := types.ToFloat(d)
		n = int64(f + 0.5)
	}
	if n < 0 {
		code := "2201W"
		if what == "OFFSET" {
			code = "2201X"
		}
		return 0, false, sqlerr.Errorf(code, "%s must not be negative", what)
	}
	return n, false, nil
}

// compareKeys orders two rows' evaluated sort keys as PostgreSQL does:
// NULLs sort as larger than every value unless NullsFirst says otherwise,
// independently of DESC.
func compareKeys(keys []plan.SortKey, a, b []types.Datum) int {
	for i, k := range keys {
		x, y := a[i], b[i]
		xn, yn := x.IsNull(), y.IsNull()
		var c int
		switch {
		case xn && yn:
			c = 0
		case xn:
			if k.NullsFirst {
				c = -1
			} else {
				c = 1
			}
		case yn:
			if k.NullsFirst {
				c = 1
			} else {
				c = -1
			}
		default:
			c = types.Compare(x, y)
			if k.Desc {
				c = -c
			}
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

type sortExec struct {
	r    *runner
	in   executor
	keys []plan.SortKey
	rows []types.Row
	i    int
	done bool
	mem  memHold
}

type keyedRow struct {
	key []types.Datum
	row types.Row
	seq int // input position: ties keep input order (stable sort)
}

// sortKeyed sorts items by key, ties by input order. An unstable sort
// with the position as the last key is faster than a stable merge sort.
func sortKeyed(keys []plan.SortKey, items []keyedRow) {
	slices.SortFunc(items, func(a, b keyedRow) int {
		if c := compareKeys(keys, a.key, b.key); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
}

func (s *sortExec) Next(ctx context.Context) (types.Row, error) {
	if !s.done {
		s.done = true
		s.mem.a = s.r.mem
		ec := s.r.evalCtx(ctx)
		var items []keyedRow
		var c canceler
		for {
			if err := c.check(ctx); err != nil {
				return nil, err
			}
			row, err := s.in.Next(ctx)
			if err != nil {
				return nil, err
			}
			if row == nil {
				break
			}
			key := make([]types.Datum, len(s.keys))
			for i, k := range s.keys {
				d, err := k.Expr.Eval(ec, row)
				if err != nil {
					return nil, err
				}
				key[i] = d
			}
			if err := s.mem.grow("sort", keyedRowSize+rowBytes(row)+rowBytes(key)+sliceSize); err != nil {
				return nil, err
			}
			items = append(items, keyedRow{key: key, row: row, seq: len(items)})
		}
		sortKeyed(s.keys, items)
		s.rows = make([]types.Row, len(items))
		for i, it := range items {
			s.rows[i] = it.row
		}
	}
	if s.i >= len(s.rows) {
		return nil, nil
	}
	s.i++
	return s.rows[s.i-1], nil
}
func (s *sortExec) Close() {
	s.in.Close()
	s.mem.release()
}

type distinctExec struct {
	r    *runner
	in   executor
	on   []expr.Expr
	seen map[string]struct{}
	buf  []byte
	vals []types.Datum
	c    canceler
	mem  memHold
}

func (d *distinctExec) Next(ctx context.Context) (types.Row, error) {
	ec := d.r.evalCtx(ctx)
	for {
		if err := d.c.check(ctx); err != nil {
			return nil, err
		}
		row, err := d.in.Next(ctx)
		if err != nil || row == nil {
			return nil, err
		}
		vals := []types.Datum(row)
		if d.on != nil {
			if d.vals, err = evalAll(ec, d.on, row, d.vals); err != nil {
				return nil, err
			}
			vals = d.vals
		}
		d.buf = rowKey(d.buf, vals)
		if _, ok := d.seen[string(d.buf)]; ok {
			continue
		}
		d.mem.a = d.r.mem
		if err := d.mem.grow("DISTINCT", mapEntrySize+int64(len(d.buf))); err != nil {
			return nil, err
		}
		d.seen[string(d.buf)] = struct{}{}
		return row, nil
	}
}
func (d *distinctExec) Close() {
	d.in.Close()
	d.mem.release()
}
