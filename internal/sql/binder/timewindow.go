package binder

import (
	"time"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// Time window functions in FROM, as RisingWave has them:
//
//	TUMBLE(rel, time_col, size [, offset])
//	HOP(rel, time_col, slide, size [, offset])
//
// rel names a table, source, view, materialized view or CTE; the result
// has rel's columns followed by window_start and window_end, of
// time_col's type (timestamp or timestamptz). Its columns are qualified
// by the FROM alias, or by rel's name without one (HOP(bid, ...) lets
// the query write bid.auction).
//
// TUMBLE is a projection: window_start is time_col floored to a multiple
// of size (shifted by offset), window_end = window_start + size; a NULL
// time gives NULL bounds. HOP emits size/slide rows per input row, one per
// window containing it (window_start ascending); a NULL time is in no
// window, so that row disappears (RisingWave filters it out too). The
// arguments after time_col are constant intervals without months; a day
// counts 24 hours.

// isTimeWindowFunc reports whether name is a time window function.
func isTimeWindowFunc(name string) bool { return name == "tumble" || name == "hop" }

func (b *Binder) bindTimeWindow(rf *pg.RangeFunction, fc *pg.FuncCall, name string, outer *scope) (*rel, error) {
	if rf.Ordinality {
		return nil, b.errorf(fc.Location, sqlerr.FeatureNotSupported, "WITH ORDINALITY is not supported for %s", name)
	}
	nConst := 1 // TUMBLE: size
	if name == "hop" {
		nConst = 2 // slide, size
	}
	if len(fc.Args) != 2+nConst && len(fc.Args) != 3+nConst {
		want := "TUMBLE(relation, time_col, size [, offset])"
		if name == "hop" {
			want = "HOP(relation, time_col, slide, size [, offset])"
		}
		return nil, b.errorf(fc.Location, sqlerr.UndefinedFunction, "function %s takes %d or %d arguments: %s", name, 2+nConst, 3+nConst, want)
	}
	if fc.AggStar || fc.AggDistinct || len(fc.AggOrder) > 0 || fc.Over != nil || fc.AggFilter != nil {
		return nil, b.errorf(fc.Location, sqlerr.SyntaxError, "invalid call of %s", name)
	}
	// The relation: a bare (possibly schema-qualified) name.
	cr := fc.Args[0].GetColumnRef()
	if cr == nil || len(cr.Fields) == 0 || len(cr.Fields) > 2 {
		return nil, b.errorf(location(fc.Args[0]), sqlerr.FeatureNotSupported, "the first argument of %s must name a table, source or view", name)
	}
	rv := &pg.RangeVar{Relname: cr.Fields[len(cr.Fields)-1].GetString_().GetSval(), Location: cr.Location, Inh: true}
	if len(cr.Fields) == 2 {
		rv.Schemaname = cr.Fields[0].GetString_().GetSval()
	}
	if rv.Relname == "" {
		return nil, b.errorf(cr.Location, sqlerr.FeatureNotSupported, "the first argument of %s must name a table, source or view", name)
	}
	alias := rv.Relname
	if rf.Alias != nil && rf.Alias.Aliasname != "" {
		alias = rf.Alias.Aliasname
	}
	rv.Alias = &pg.Alias{Aliasname: alias}
	in, err := b.bindRangeVar(rv, outer)
	if err != nil {
		return nil, err
	}
	input := in.node
	// The time column, named in rel's scope.
	te, err := b.bindExpr(fc.Args[1], &exprCtx{sc: in.sc, clause: "FROM"})
	if err != nil {
		return nil, err
	}
	tc, ok := te.(*expr.ColumnRef)
	if !ok {
		return nil, b.errorf(location(fc.Args[1]), sqlerr.FeatureNotSupported, "the second argument of %s must be a column of %s", name, rv.Relname)
	}
	tt := tc.Type()
	if tt.Kind != types.KindTimestamp && tt.Kind != types.KindTimestamptz {
		return nil, b.errorf(location(fc.Args[1]), sqlerr.DatatypeMismatch,
			"the time column of %s must be of type timestamp or timestamp with time zone, not %s", name, tt.Name())
	}
	ivs := make([]int64, len(fc.Args)-2)
	for i, a := range fc.Args[2:] {
		what := [...]string{"window size", "offset"}[min(i, 1)]
		if name == "hop" {
			what = [...]string{"window slide", "window size", "offset"}[i]
		}
		if ivs[i], err = b.windowInterval(a, what, outer); err != nil {
			return nil, err
		}
	}
	var size, slide, offset int64
	if name == "hop" {
		slide, size = ivs[0], ivs[1]
		if len(ivs) > 2 {
			offset = ivs[2]
		}
		if slide <= 0 || size <= 0 {
			return nil, b.errorf(fc.Location, sqlerr.InvalidParameterValue, "window slide and window size of HOP must be positive")
		}
		if size%slide != 0 {
			return nil, b.errorf(fc.Location, sqlerr.InvalidParameterValue,
				"window size %s of HOP must be a multiple of its slide %s", intervalText(size), intervalText(slide))
		}
	} else {
		size = ivs[0]
		slide = size
		if len(ivs) > 1 {
			offset = ivs[1]
		}
		if size <= 0 {
			return nil, b.errorf(fc.Location, sqlerr.InvalidParameterValue, "window size of TUMBLE must be positive")
		}
	}
	sch := append(plan.Schema(nil), input.Schema()...)
	sch = append(sch,
		plan.Column{Name: "window_start", Type: tt, Table: alias},
		plan.Column{Name: "window_end", Type: tt, Table: alias})
	var node plan.Node
	if name == "hop" {
		node = &plan.HopWindow{Input: input, TimeCol: tc.Index, Slide: slide, Size: size, Offset: offset, Out: sch}
	} else {
		exprs := make([]expr.Expr, 0, len(sch))
		for i, c := range input.Schema() {
			exprs = append(exprs, &expr.ColumnRef{Index: i, Typ: c.Type, Name: qualName(alias, c.Name)})
		}
		exprs = append(exprs,
			&expr.TimeWindowBound{Arg: tc, Slide: size, Offset: offset, Name: "window_start"},
			&expr.TimeWindowBound{Arg: tc, Slide: size, Offset: offset, Shift: size, Name: "window_end"})
		node = &plan.Project{Input: input, Exprs: exprs, Out: sch}
	}
	var colAlias *pg.Alias
	if rf.Alias != nil && len(rf.Alias.Colnames) > 0 {
		colAlias = rf.Alias
	}
	if node, err = b.aliasColumns(node, colAlias, fc.Location); err != nil {
		return nil, err
	}
	return b.leaf(node, alias, outer), nil
}

// windowInterval evaluates a constant interval argument of a time window
// function to microseconds.
func (b *Binder) windowInterval(n *pg.Node, what string, outer *scope) (int64, error) {
	constant := true
	walkAST(n, func(x *pg.Node) bool {
		switch {
		case x.GetColumnRef() != nil, x.GetParamRef() != nil, x.GetSubLink() != nil, x.GetFuncCall() != nil:
			constant = false
		}
		return constant
	})
	if !constant {
		return 0, b.errorf(location(n), sqlerr.FeatureNotSupported, "the %s of a time window must be a constant interval", what)
	}
	e, err := b.bindExpr(n, &exprCtx{sc: &scope{parent: outer}, clause: "FROM"})
	if err != nil {
		return 0, err
	}
	if e, err = expr.NewCast(e, types.Interval, expr.CastImplicit); err != nil {
		return 0, b.errAt(err, location(n))
	}
	d, err := e.Eval(&expr.EvalContext{Location: time.UTC, StatementTime: time.Now()}, nil)
	if err != nil {
		return 0, b.errAt(err, location(n))
	}
	if d.IsNull() {
		return 0, b.errorf(location(n), sqlerr.InvalidParameterValue, "the %s of a time window must not be NULL", what)
	}
	iv := d.Interval()
	if iv.Months != 0 {
		return 0, b.errorf(location(n), sqlerr.InvalidParameterValue,
			"the %s of a time window must not contain months or years (their length varies): %s", what, types.FormatText(d, types.Interval, nil))
	}
	const microsPerDay = 86400 * 1000000
	us := int64(iv.Days)*microsPerDay + iv.Micros
	if iv.Days > expr.MaxWindowSpan/microsPerDay || -int64(iv.Days) > expr.MaxWindowSpan/microsPerDay ||
		us > expr.MaxWindowSpan || us < -expr.MaxWindowSpan {
		return 0, b.errorf(location(n), sqlerr.InvalidParameterValue, "the %s of a time window is too large", what)
	}
	return us, nil
}

func intervalText(us int64) string {
	return "'" + types.FormatText(types.DInterval(types.IntervalValue{Micros: us}), types.Interval, nil) + "'"
}
