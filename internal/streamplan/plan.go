package streamplan

import (
	"fmt"
	"strings"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// DistKind says how a node's rows are spread over actors.
type DistKind uint8

const (
	// DistAny: spread in a way no operator can rely on.
	DistAny DistKind = iota
	// DistSingle: all rows in one actor.
	DistSingle
	// DistHash: rows hashed by Keys to vnodes, vnodes owned by actors.
	DistHash
)

// Dist is a distribution.
type Dist struct {
	Kind DistKind
	Keys []int
}

func (d Dist) String() string {
	switch d.Kind {
	case DistSingle:
		return "single"
	case DistHash:
		return fmt.Sprintf("hash%v", d.Keys)
	}
	return "any"
}

// Op is a stream operator.
type Op uint8

const (
	OpScan Op = iota // an upstream table or materialized view, backfilled
	OpFilter
	OpProject
	OpHashAgg
	OpSimpleAgg
	OpHashJoin
	OpTopN
	OpDistinct
	OpUnionAll
	OpExchange
	OpMaterialize
	OpSource // a connector (nexmark, datagen) read by this job
	OpOverWindow
	OpHopWindow      // HOP in FROM (timewindow.go)
	OpValues         // a constant relation, emitted once (constant.go)
	OpSink           // a sink's log store writer, the root of a sink job (sink.go)
	OpTemporalFilter // a comparison with now() (temporal.go)
	OpWindowClose    // EMIT ON WINDOW CLOSE's buffer (windowclose.go)
	OpProjectSet     // set-returning functions in a select list (projectset.go)
	OpDynamicFilter  // a comparison with a one-row subquery (dynamicfilter.go)
	OpTemporalJoin   // FOR SYSTEM_TIME AS OF PROCTIME() (temporaljoin.go)
	OpExpand         // a row per grouping set under a GROUPING SETS aggregation (expand.go)
)

var opNames = [...]string{"Scan", "Filter", "Project", "HashAgg", "SimpleAgg", "HashJoin", "TopN", "Distinct", "UnionAll", "Exchange", "Materialize", "Source", "OverWindow", "HopWindow", "Values", "Sink", "TemporalFilter", "WindowClose", "ProjectSet", "DynamicFilter", "TemporalJoin", "Expand"}

func (o Op) String() string { return opNames[o] }

// AggSpec is one aggregate call over column indices of the input.
type AggSpec struct {
	Call *plan.AggCall
	Args []int
	// Filter is the column holding the FILTER condition, -1 when none.
	Filter int
	// OrderBy is the call's ORDER BY (string_agg(x, ',' ORDER BY y)) over
	// input columns; the aggregate keeps its inputs sorted by it.
	OrderBy []OrderCol
}

// OrderCol is one ORDER BY column.
type OrderCol struct {
	Col        int
	Desc       bool
	NullsFirst bool
}

// Node is a stream plan node.
type Node struct {
	Op     Op
	Inputs []*Node
	// Schema is the physical output: logical columns, then hidden key
	// columns.
	Schema plan.Schema
	// Key is the stream key: output columns identifying a row.
	Key  []int
	Dist Dist

	Rel      *catalog.Relation // OpScan
	Exprs    []expr.Expr       // OpProject
	Cond     expr.Expr         // OpFilter; OpHashJoin's residual (over left ++ right physical rows)
	GroupKey []int             // OpHashAgg
	Aggs     []AggSpec         // OpHashAgg, OpSimpleAgg
	// InputKey is the input's stream key (OpHashAgg, OpSimpleAgg, OpTopN,
	// OpDistinct): stateful operators key their input rows by it.
	InputKey  []int
	JoinKind  plan.JoinKind
	LeftKeys  []int // OpHashJoin, over the left input
	RightKeys []int // over the right input
	Order     []OrderCol
	Limit     int64 // OpTopN; -1: no limit
	Offset    int64
	// TieCols, for OpTopN WITH TIES, are the columns of the ORDER BY keys
	// (the first entries of Order): rows after the limit that equal the
	// last row within it there are output too.
	TieCols  []int
	Window   *WindowSpec   // OpOverWindow
	Rows     []types.Row   // OpValues: the constant rows, stream key included
	Hop      *HopSpec      // OpHopWindow
	Temporal *TemporalSpec // OpTemporalFilter
	Dynamic  *DynamicSpec  // OpDynamicFilter
	// TemporalJoin is OpTemporalJoin's lookup (LeftKeys: the input's
	// lookup columns; Cond: the residual over input ++ looked-up row).
	TemporalJoin *TemporalJoinSpec
	// SRFs are OpProjectSet's calls; their columns follow the input's
	// first SRFAt columns.
	SRFs  []*plan.SRFCall
	SRFAt int
	// SRFOrdinality adds the ordinal after the calls (WITH ORDINALITY);
	// SRFOuter keeps a row with an empty expansion as one row of NULLs
	// (LEFT JOIN LATERAL ... ON true).
	SRFOrdinality, SRFOuter bool
	// GroupingSets are OpExpand's sets, each a list of indices in Exprs
	// (the grouping expressions, over the input's first ExpandAt
	// columns); the NULLed keys and the set number follow those columns.
	GroupingSets [][]int
	ExpandAt     int
	// Always are OpHashAgg's group keys whose row always exists (the
	// empty grouping sets, plan.Aggregate.Always).
	Always []types.Row
	// CloseCol is OpWindowClose's watermark column: a row is emitted once
	// the watermark passes its value there.
	CloseCol int
	// SinkAppendOnly: the sink keeps only inserts (OpSink).
	SinkAppendOnly bool
	// KeyDesc orders OpMaterialize's key columns descending where set (an
	// index's DESC columns); nil: all ascending.
	KeyDesc []bool

	// StateTables lists the state tables the operator owns, in plan order.
	StateTables  []catalog.TableID
	stateSchemas []state.Schema
}

// Types returns the node's physical column types.
func (n *Node) Types() []types.Type { return n.Schema.Types() }

// Describe renders the node for EXPLAIN.
func (n *Node) Describe() string {
	var b strings.Builder
	b.WriteString("Stream")
	b.WriteString(n.Op.String())
	switch n.Op {
	case OpScan, OpSource:
		fmt.Fprintf(&b, " %s", n.Rel.Name)
	case OpFilter, OpTemporalFilter, OpDynamicFilter:
		fmt.Fprintf(&b, " %s", n.Cond)
	case OpProject:
		parts := make([]string, len(n.Exprs))
		for i, e := range n.Exprs {
			parts[i] = e.String()
		}
		fmt.Fprintf(&b, " %s", strings.Join(parts, ", "))
	case OpHashAgg, OpSimpleAgg:
		parts := make([]string, len(n.Aggs))
		for i, a := range n.Aggs {
			parts[i] = a.Call.String()
		}
		if n.Op == OpHashAgg {
			fmt.Fprintf(&b, " group key %v", n.GroupKey)
		}
		fmt.Fprintf(&b, " aggs [%s]", strings.Join(parts, ", "))
		if len(n.Always) > 0 {
			fmt.Fprintf(&b, " always %v", n.Always)
		}
	case OpExpand:
		fmt.Fprintf(&b, " grouping sets %s", plan.FormatGroupingSets(n.Exprs, n.GroupingSets))
	case OpHashJoin:
		fmt.Fprintf(&b, " %s keys %v = %v", n.JoinKind, n.LeftKeys, n.RightKeys)
		if n.Cond != nil {
			fmt.Fprintf(&b, " cond %s", n.Cond)
		}
	case OpTemporalJoin:
		fmt.Fprintf(&b, " %s %s keys %v", n.JoinKind, n.TemporalJoin.Rel.Name, n.LeftKeys)
		if n.Cond != nil {
			fmt.Fprintf(&b, " cond %s", n.Cond)
		}
	case OpTopN:
		fmt.Fprintf(&b, " order %v limit %d offset %d", n.Order, n.Limit, n.Offset)
	case OpExchange:
		fmt.Fprintf(&b, " dist %s", n.Dist)
	}
	fmt.Fprintf(&b, " { key: %v, dist: %s", n.Key, n.Dist)
	if len(n.StateTables) > 0 {
		fmt.Fprintf(&b, ", state tables: %v", n.StateTables)
	}
	b.WriteString(" }")
	return b.String()
}

// Format renders the tree as EXPLAIN prints it.
func Format(n *Node) []string {
	var out []string
	var walk func(n *Node, depth int)
	walk = func(n *Node, depth int) {
		prefix := strings.Repeat("  ", depth)
		if depth > 0 {
			prefix += "└─"
		}
		out = append(out, prefix+n.Describe())
		for _, c := range n.Inputs {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return out
}

func unsupported(format string, args ...any) error {
	return sqlerr.Errorf(sqlerr.FeatureNotSupported, format, args...)
}
