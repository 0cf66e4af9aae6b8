package binder

import (
	"fmt"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
)

// BindWatermark binds a relation's stored WATERMARK FOR expression
// (catalog.Watermark.Expr) over the relation's physical row (hidden
// columns included), cast to the watermark column's type. It returns nil
// when the relation has no watermark.
func BindWatermark(rel *catalog.Relation) (expr.Expr, error) {
	wm := rel.Watermark
	if wm == nil {
		return nil, nil
	}
	if wm.Column < 0 || wm.Column >= len(rel.Columns) {
		return nil, fmt.Errorf("%s: watermark column %d out of range", rel.Name, wm.Column)
	}
	n, err := parseExprText(wm.Expr)
	if err != nil {
		return nil, fmt.Errorf("%s: watermark expression %q: %w", rel.Name, wm.Expr, err)
	}
	sch := make(plan.Schema, len(rel.Columns))
	for i, c := range rel.Columns {
		sch[i] = plan.Column{Name: c.Name, Type: c.Type, Table: rel.Name, Hidden: c.Hidden}
	}
	sc := &scope{width: len(sch)}
	sc.addTable(rel.Name, sch, 0)
	b := &Binder{}
	e, err := b.bindExpr(n, &exprCtx{sc: sc, clause: "WATERMARK"})
	if err != nil {
		return nil, fmt.Errorf("%s: watermark expression %q: %w", rel.Name, wm.Expr, err)
	}
	return expr.NewCast(e, rel.Columns[wm.Column].Type, expr.CastImplicit)
}
