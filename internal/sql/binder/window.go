package binder

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// winCtx collects window function calls of one query level.
type winCtx struct {
	base  int // width of the Window node's input
	calls []*plan.WindowCall
	named map[string]*pg.WindowDef
}

// PostgreSQL's FRAMEOPTION_* bits (nodes/parsenodes.h).
const (
	frameRange              = 0x2
	frameRows               = 0x4
	frameGroups             = 0x8
	frameStartUnboundedPrec = 0x20
	frameEndUnboundedFoll   = 0x100
	frameStartCurrentRow    = 0x200
	frameEndCurrentRow      = 0x400
	frameStartOffsetPrec    = 0x800
	frameEndOffsetPrec      = 0x1000
	frameStartOffsetFoll    = 0x2000
	frameEndOffsetFoll      = 0x4000
	frameExcludeCurrentRow  = 0x8000
	frameExcludeGroup       = 0x10000
	frameExcludeTies        = 0x20000
	frameNonDefault         = 0x1
	frameStartUnboundedFoll = 0x80
	frameEndUnboundedPrec   = 0x40
)

// resolveWindowDef merges a window definition with the named window it
// refers to (OVER w, OVER (w ORDER BY ...)).
func (b *Binder) resolveWindowDef(wd *pg.WindowDef, wc *winCtx) (*pg.WindowDef, error) {
	ref := wd.Refname
	if ref == "" && wd.Name != "" && len(wd.PartitionClause) == 0 && len(wd.OrderClause) == 0 && wd.FrameOptions&frameNonDefault == 0 {
		ref = wd.Name // OVER w
	}
	if ref == "" {
		return wd, nil
	}
	// wc.named holds resolved definitions (no reference left in them).
	base, ok := wc.named[ref]
	if !ok {
		return nil, b.errorf(wd.Location, sqlerr.UndefinedObject, "window \"%s\" does not exist", ref)
	}
	out := &pg.WindowDef{PartitionClause: base.PartitionClause, OrderClause: base.OrderClause,
		FrameOptions: base.FrameOptions, StartOffset: base.StartOffset, EndOffset: base.EndOffset, Location: wd.Location}
	if len(wd.PartitionClause) > 0 && ref == wd.Refname {
		return nil, b.errorf(wd.Location, sqlerr.WindowingError, "cannot override PARTITION BY clause of window \"%s\"", ref)
	}
	if len(wd.OrderClause) > 0 {
		if len(base.OrderClause) > 0 {
			return nil, b.errorf(wd.Location, sqlerr.WindowingError, "cannot override ORDER BY clause of window \"%s\"", ref)
		}
		out.OrderClause = wd.OrderClause
	}
	if wd.FrameOptions&frameNonDefault != 0 && ref == wd.Refname {
		if base.FrameOptions&frameNonDefault != 0 {
			return nil, b.errorf(wd.Location, sqlerr.WindowingError, "cannot copy window \"%s\" because it has a frame clause", ref)
		}
		out.FrameOptions, out.StartOffset, out.EndOffset = wd.FrameOptions, wd.StartOffset, wd.EndOffset
	}
	return out, nil
}

func (b *Binder) bindWindowCall(fc *pg.FuncCall, name string, ec *exprCtx) (expr.Expr, error) {
	wc := ec.win
	wd, err := b.resolveWindowDef(fc.Over, wc)
	if err != nil {
		return nil, err
	}
	// Arguments, PARTITION BY and ORDER BY are bound like the select list
	// (above any aggregation) but may not contain window calls.
	in := &exprCtx{sc: ec.sc, clause: "window function calls", agg: ec.agg}
	call := &plan.WindowCall{Name: name}
	for _, p := range wd.PartitionClause {
		e, err := b.bindExpr(p, in)
		if err != nil {
			return nil, err
		}
		call.PartitionBy = append(call.PartitionBy, e)
	}
	for _, s := range wd.OrderClause {
		k, err := b.bindSortKey(s.GetSortBy(), in)
		if err != nil {
			return nil, err
		}
		call.OrderBy = append(call.OrderBy, k)
	}
	args, err := b.bindList(fc.Args, in)
	if err != nil {
		return nil, err
	}
	if fc.AggFilter != nil {
		f, err := b.bindExpr(fc.AggFilter, in)
		if err != nil {
			return nil, err
		}
		if call.Filter, err = expr.CoerceBool(f, "FILTER"); err != nil {
			return nil, err
		}
	}
	if fc.AggDistinct {
		return nil, b.errorf(fc.Location, sqlerr.FeatureNotSupported, "DISTINCT is not implemented for window functions")
	}
	switch name {
	case "row_number", "rank", "dense_rank":
		if len(args) != 0 {
			return nil, sqlerr.Errorf(sqlerr.UndefinedFunction, "function %s with arguments does not exist", name)
		}
		call.Type = types.Int64
	case "percent_rank", "cume_dist":
		if len(args) != 0 {
			return nil, sqlerr.Errorf(sqlerr.UndefinedFunction, "function %s with arguments does not exist", name)
		}
		call.Type = types.Float64
	case "ntile":
		if len(args) != 1 {
			return nil, sqlerr.New(sqlerr.UndefinedFunction, "function ntile requires one argument")
		}
		if args[0], err = expr.NewCast(args[0], types.Int32, expr.CastImplicit); err != nil {
			return nil, err
		}
		call.Type = types.Int32
	case "lag", "lead":
		if len(args) < 1 || len(args) > 3 {
			return nil, sqlerr.Errorf(sqlerr.UndefinedFunction, "function %s does not exist", name)
		}
		if args[0], err = expr.ResolveUnknown(args[0]); err != nil {
			return nil, err
		}
		if len(args) > 1 {
			if args[1], err = expr.NewCast(args[1], types.Int32, expr.CastImplicit); err != nil {
				return nil, err
			}
		}
		if len(args) > 2 {
			if args[2], err = expr.NewCast(args[2], args[0].Type(), expr.CastImplicit); err != nil {
				return nil, err
			}
		}
		call.Type = args[0].Type()
	case "first_value", "last_value", "nth_value":
		want := 1
		if name == "nth_value" {
			want = 2
		}
		if len(args) != want {
			return nil, sqlerr.Errorf(sqlerr.UndefinedFunction, "function %s does not exist", name)
		}
		if args[0], err = expr.ResolveUnknown(args[0]); err != nil {
			return nil, err
		}
		if want == 2 {
			if args[1], err = expr.NewCast(args[1], types.Int32, expr.CastImplicit); err != nil {
				return nil, err
			}
		}
		call.Type = args[0].Type()
	default:
		if !isAggregateName(name) {
			return nil, b.errorf(fc.Location, sqlerr.WrongObjectType, "OVER specified, but %s is not a window function nor an aggregate function", name)
		}
		if fc.AggStar {
			args = nil
		}
		ts := make([]types.Type, len(args))
		for i, a := range args {
			ts[i] = a.Type()
		}
		agg, err := expr.LookupAggregate(name, ts, false)
		if err != nil {
			return nil, b.errAt(err, fc.Location)
		}
		if args, err = expr.BindAggregateArgs(agg, args); err != nil {
			return nil, err
		}
		call.Agg, call.Type = agg, agg.ResultType
	}
	call.Args = args
	if call.Frame, err = b.bindFrame(wd, in); err != nil {
		return nil, err
	}
	idx := wc.base + len(wc.calls)
	wc.calls = append(wc.calls, call)
	return &expr.ColumnRef{Index: idx, Typ: call.Type, Name: name + "(...) OVER (...)"}, nil
}

func (b *Binder) bindFrame(wd *pg.WindowDef, ec *exprCtx) (*plan.Frame, error) {
	o := wd.FrameOptions
	if o&frameNonDefault == 0 {
		return nil, nil
	}
	f := &plan.Frame{Mode: plan.FrameRange}
	switch {
	case o&frameRows != 0:
		f.Mode = plan.FrameRows
	case o&frameGroups != 0:
		f.Mode = plan.FrameGroups
	}
	bound := func(unbPrec, unbFoll, cur, offPrec, offFoll int32, off *pg.Node, dflt plan.BoundKind) (plan.FrameBound, error) {
		switch {
		case o&unbPrec != 0:
			return plan.FrameBound{Kind: plan.UnboundedPreceding}, nil
		case o&unbFoll != 0:
			return plan.FrameBound{Kind: plan.UnboundedFollowing}, nil
		case o&cur != 0:
			return plan.FrameBound{Kind: plan.CurrentRow}, nil
		case o&(offPrec|offFoll) != 0:
			e, err := b.bindExpr(off, &exprCtx{sc: &scope{parent: ec.sc.parent}, clause: "window frame offsets"})
			if err != nil {
				return plan.FrameBound{}, err
			}
			if f.Mode != plan.FrameRange {
				if e, err = expr.NewCast(e, types.Int64, expr.CastImplicit); err != nil {
					return plan.FrameBound{}, err
				}
			} else if e.Type().Kind == types.KindUnknown {
				if e, err = expr.ResolveUnknown(e); err != nil {
					return plan.FrameBound{}, err
				}
			}
			k := plan.OffsetPreceding
			if o&offFoll != 0 {
				k = plan.OffsetFollowing
			}
			return plan.FrameBound{Kind: k, Offset: e}, nil
		}
		return plan.FrameBound{Kind: dflt}, nil
	}
	var err error
	if f.Start, err = bound(frameStartUnboundedPrec, frameStartUnboundedFoll, frameStartCurrentRow, frameStartOffsetPrec, frameStartOffsetFoll, wd.StartOffset, plan.UnboundedPreceding); err != nil {
		return nil, err
	}
	if f.End, err = bound(frameEndUnboundedPrec, frameEndUnboundedFoll, frameEndCurrentRow, frameEndOffsetPrec, frameEndOffsetFoll, wd.EndOffset, plan.CurrentRow); err != nil {
		return nil, err
	}
	if f.Start.Kind == plan.UnboundedFollowing {
		return nil, b.errorf(wd.Location, sqlerr.WindowingError, "frame start cannot be UNBOUNDED FOLLOWING")
	}
	if f.End.Kind == plan.UnboundedPreceding {
		return nil, b.errorf(wd.Location, sqlerr.WindowingError, "frame end cannot be UNBOUNDED PRECEDING")
	}
	if f.Mode == plan.FrameRange && (f.Start.Offset != nil || f.End.Offset != nil) && len(wd.OrderClause) != 1 {
		return nil, b.errorf(wd.Location, sqlerr.WindowingError, "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column")
	}
	if f.Mode == plan.FrameGroups && len(wd.OrderClause) == 0 {
		return nil, b.errorf(wd.Location, sqlerr.WindowingError, "GROUPS mode requires an ORDER BY clause")
	}
	switch {
	case o&frameExcludeCurrentRow != 0:
		f.Exclude = 1
	case o&frameExcludeGroup != 0:
		f.Exclude = 2
	case o&frameExcludeTies != 0:
		f.Exclude = 3
	}
	return f, nil
}
