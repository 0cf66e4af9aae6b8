package streamplan

import (
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/decorrelate"
)

// Remap evaluates e over a rearranged row: column i of the row e was bound
// against is column mapping[i] of the row it is given (decorrelate.Remap).
func Remap(e expr.Expr, mapping []int) expr.Expr { return decorrelate.Remap(e, mapping) }

type remapped = decorrelate.Remapped
