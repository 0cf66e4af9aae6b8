package decorrelate

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
	return &Remapped{Inner: e, Mapping: mapping}
}

type Remapped struct {
	Inner   expr.Expr
	Mapping []int
}

func (r *Remapped) Type() types.Type { return r.Inner.Type() }
func (r *Remapped) String() string   { return r.Inner.String() }
func (r *Remapped) Eval(ctx *expr.EvalContext, row types.Row) (types.Datum, error) {
	tmp := make(types.Row, len(r.Mapping))
	for i, m := range r.Mapping {
		tmp[i] = row[m]
	}
	return r.Inner.Eval(ctx, tmp)
}
