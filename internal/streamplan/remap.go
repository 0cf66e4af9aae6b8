package streamplan

import (
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/types"
)

// Remap evaluates e over a rearranged row: column i of the row e was bound
// against is column mapping[i] of the row it is given. The planner uses it
// where physical rows carry extra columns between logical ones (a join's
// left side), since bound expressions are opaque.
func Remap(e expr.Expr, mapping []int) expr.Expr {
	identity := true
	for i, m := range mapping {
		if m != i {
			identity = false
		}
	}
	if identity {
		return e
	}
	return &remapped{inner: e, mapping: mapping}
}

type remapped struct {
	inner   expr.Expr
	mapping []int
}

func (r *remapped) Type() types.Type { return r.inner.Type() }
func (r *remapped) String() string   { return r.inner.String() }
func (r *remapped) Eval(ctx *expr.EvalContext, row types.Row) (types.Datum, error) {
	tmp := make(types.Row, len(r.mapping))
	for i, m := range r.mapping {
		tmp[i] = row[m]
	}
	return r.inner.Eval(ctx, tmp)
}
