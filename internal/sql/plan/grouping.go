package plan

import (
	"fmt"
	"strings"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// GROUP BY GROUPING SETS, ROLLUP and CUBE are planned as Expand under an
// Aggregate, the plan PostgreSQL's executor and RisingWave use:
//
//	GROUP BY ROLLUP(a, b): sets (a, b), (a), ()
//
//	input row      Expand output (input ++ a', b' ++ grouping_set)
//	(1, 2, x) ->   (1, 2, x,   1,    2,    0)
//	               (1, 2, x,   1,    NULL, 1)
//	               (1, 2, x,   NULL, NULL, 2)
//
// and the Aggregate groups by (a', b', grouping_set). The set number keeps
// a group of set 1 whose b is a real NULL apart from the rows of set 2,
// and it is what GROUPING() is computed from. Aggregate arguments read the
// input columns, which Expand passes unchanged: sum(b) over the () set
// sums every b. Expand is a function of one row, so a retraction expands
// to exactly the rows its insert did and a streaming Aggregate above it
// maintains every set.

// Expand repeats each input row once per grouping set: the row, then one
// column per grouping expression in Keys (its value when the set groups
// by it, NULL otherwise), then the set's number (int4, the position in
// Sets). Sets lists, per set, the indices in Keys it groups by; duplicate
// sets are kept (each produces its groups again, as in PostgreSQL).
type Expand struct {
	Input Node
	Keys  []expr.Expr // bound against Input
	Sets  [][]int
	Out   Schema
}

func (n *Expand) Schema() Schema   { return n.Out }
func (n *Expand) Children() []Node { return []Node{n.Input} }
func (n *Expand) Describe() string {
	return "Expand grouping sets: " + FormatGroupingSets(n.Keys, n.Sets)
}

// FormatGroupingSets renders sets of keys as "(a, b), (a), ()".
func FormatGroupingSets(keys []expr.Expr, sets [][]int) string {
	parts := make([]string, len(sets))
	for i, s := range sets {
		names := make([]string, len(s))
		for j, k := range s {
			names[j] = keys[k].String()
		}
		parts[i] = "(" + strings.Join(names, ", ") + ")"
	}
	return strings.Join(parts, ", ")
}

// GroupingSetType is the type of Expand's set-number column.
var GroupingSetType = types.Int32

// GroupingFunc is GROUPING(args) above an Aggregate over an Expand: an
// integer bitmask with one bit per argument, the leftmost argument the
// most significant, set when the row's grouping set does not group by that
// argument. Values[s] is the mask of set s (computed when binding), SetID
// reads the row's set number.
type GroupingFunc struct {
	Args   []string // the arguments, for EXPLAIN
	SetID  expr.Expr
	Values []int32
}

func (g *GroupingFunc) Type() types.Type { return types.Int32 }
func (g *GroupingFunc) String() string {
	return "GROUPING(" + strings.Join(g.Args, ", ") + ")"
}
func (g *GroupingFunc) Eval(ctx *expr.EvalContext, row types.Row) (types.Datum, error) {
	d, err := g.SetID.Eval(ctx, row)
	if err != nil {
		return types.NullDatum, err
	}
	if d.IsNull() || d.Int() < 0 || d.Int() >= int64(len(g.Values)) {
		// Expand numbers the sets 0..len-1: anything else is a planning bug.
		return types.NullDatum, sqlerr.New(sqlerr.InternalError, fmt.Sprintf("GROUPING: grouping set %s out of range", d))
	}
	return types.DInt32(g.Values[d.Int()]), nil
}
