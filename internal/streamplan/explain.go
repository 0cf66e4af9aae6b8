package streamplan

import (
	"fmt"
	"strings"
	"time"

	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/stream/state"
)

// Explain renders a planned job (after AssignStateTables) as EXPLAIN
// CREATE MATERIALIZED VIEW prints it: the fragments from the root down,
// each a tree of operators with their stream key, distribution and state
// tables, then every state table with its key columns.
//
//	Fragment 0 (single)
//	StreamMaterialize { columns: [b, n], stream key: [b], dist: single }
//	├── state tables: [0]
//	└── StreamExchange { dist: single } from Fragment 1
//
// An exchange ends its fragment's tree and names the fragment that feeds
// it; a scan names the upstream relation whose actors feed it one to one
// (no shuffle).
func Explain(root *Node) []string {
	e := &explainer{ids: map[*Node]int{}}
	e.number(root)
	for _, f := range e.frags {
		if len(e.out) > 0 {
			e.out = append(e.out, "")
		}
		e.out = append(e.out, fmt.Sprintf("Fragment %d (%s)", e.ids[f], fragmentDist(f)))
		e.node(f, "", "")
	}
	if len(e.tables) > 0 {
		e.out = append(e.out, "")
	}
	for _, t := range e.tables {
		e.table(t)
	}
	return e.out
}

type explainer struct {
	frags  []*Node       // fragment roots in numbering order
	ids    map[*Node]int // fragment root -> number
	tables []tableRef
	out    []string
}

// tableRef is one state table and the operator owning it.
type tableRef struct {
	id     int64
	owner  *Node
	index  int // among the owner's state tables
	schema *state.Schema
}

// number assigns fragment numbers depth first from the root (the
// fragment writing the view is 0), in the order the fragments print.
func (e *explainer) number(root *Node) {
	e.ids[root] = len(e.frags)
	e.frags = append(e.frags, root)
	walkFragment(root, func(n *Node) {
		if n.Op == OpExchange {
			e.number(n.Inputs[0])
		}
	})
}

// fragmentDist says how a fragment's actors split the rows.
func fragmentDist(f *Node) string {
	scan := ""
	walkFragment(f, func(n *Node) {
		if scan != "" {
			return
		}
		switch n.Op {
		case OpScan:
			scan = "one actor per actor of " + n.Rel.Name
		case OpSource:
			scan = "one actor per split of source " + n.Rel.Name
		case OpValues:
			scan = "single actor"
		}
	})
	switch {
	case f.Dist.Kind == DistSingle || readsSingleExchange(f):
		return "single actor"
	case scan != "":
		return scan
	}
	return "parallel, " + distString(f, f.Dist)
}

// node prints n and its subtree; first prefixes n's line, rest the lines
// below it.
func (e *explainer) node(n *Node, first, rest string) {
	line := first + "Stream" + opLabel(n) + " { " + strings.Join(attributes(n), ", ") + " }"
	if n.Op == OpExchange {
		line += fmt.Sprintf(" from Fragment %d", e.ids[n.Inputs[0]])
	}
	e.out = append(e.out, line)
	var children []func(first, rest string)
	if len(n.StateTables) > 0 {
		ids := make([]string, len(n.StateTables))
		for i, id := range n.StateTables {
			ids[i] = fmt.Sprint(id)
			ref := tableRef{id: int64(id), owner: n, index: i}
			if i < len(n.stateSchemas) {
				ref.schema = &n.stateSchemas[i]
			}
			e.tables = append(e.tables, ref)
		}
		children = append(children, func(first, _ string) {
			e.out = append(e.out, first+"state tables: ["+strings.Join(ids, ", ")+"]")
		})
	}
	if n.Op != OpExchange {
		for _, c := range n.Inputs {
			children = append(children, func(first, rest string) { e.node(c, first, rest) })
		}
	}
	for i, child := range children {
		if i == len(children)-1 {
			child(rest+"└── ", rest+"    ")
		} else {
			child(rest+"├── ", rest+"│   ")
		}
	}
}

// opLabel names the operator as RisingWave's EXPLAIN does.
func opLabel(n *Node) string {
	switch n.Op {
	case OpScan:
		return "TableScan"
	case OpUnionAll:
		return "Union"
	}
	return n.Op.String()
}

// attributes lists what EXPLAIN shows of one operator.
func attributes(n *Node) []string {
	var a []string
	add := func(format string, args ...any) { a = append(a, fmt.Sprintf(format, args...)) }
	var in *Node
	if len(n.Inputs) > 0 {
		in = n.Inputs[0]
	}
	switch n.Op {
	case OpScan:
		add("table: %s", n.Rel.Name)
		add("columns: %s", colList(n, seq(0, len(n.Schema))))
		add("upstream: no shuffle, backfilled from a snapshot")
	case OpSource:
		add("source: %s", n.Rel.Name)
		add("columns: %s", colList(n, seq(0, len(n.Schema))))
	case OpValues:
		add("rows: %d", len(n.Rows))
		add("columns: %s", colList(n, seq(0, len(n.Schema))))
		add("emitted once")
	case OpHopWindow:
		if h := n.Hop; h != nil {
			add("time column: %s", colName(in, h.TimeCol))
			add("slide: %s", time.Duration(h.Slide)*time.Microsecond)
			add("size: %s", time.Duration(h.Size)*time.Microsecond)
			if h.Offset != 0 {
				add("offset: %s", time.Duration(h.Offset)*time.Microsecond)
			}
		}
		if n.Exprs != nil {
			parts := make([]string, len(n.Exprs))
			for i, x := range n.Exprs {
				parts[i] = x.String()
			}
			add("then exprs: [%s]", strings.Join(parts, ", "))
		}
	case OpFilter:
		add("predicate: %s", n.Cond)
	case OpWindowClose:
		add("emits a row once the watermark passes: %s", colName(in, n.CloseCol))
	case OpProjectSet:
		parts := make([]string, len(n.SRFs))
		for i, c := range n.SRFs {
			args := make([]string, len(c.Args))
			for j, a := range c.Args {
				args[j] = a.String()
			}
			parts[i] = c.Name + "(" + strings.Join(args, ", ") + ")"
		}
		add("set-returning functions: [%s]", strings.Join(parts, ", "))
		if n.SRFOrdinality {
			add("with ordinality")
		}
		if n.SRFOuter {
			add("outer: a row whose expansion is empty is kept once, padded with NULL")
		}
	case OpDynamicFilter:
		add("predicate: %s", n.Cond)
		add("rows kept ordered by: %s; a new bound emits only the rows between the old and the new one", n.Dynamic.Key)
	case OpTemporalFilter:
		add("predicate: %s", n.Cond)
		if n.Temporal.Expiring {
			add("expires rows as now() passes: %s", n.Temporal.Key)
		} else {
			add("delays rows until now() reaches: %s", n.Temporal.Key)
		}
	case OpProject:
		parts := make([]string, len(n.Exprs))
		for i, x := range n.Exprs {
			parts[i] = x.String()
			if name := n.Schema[i].Name; name != "" && name != parts[i] {
				parts[i] += " AS " + name
			}
		}
		add("exprs: [%s]", strings.Join(parts, ", "))
	case OpHashAgg, OpSimpleAgg:
		if n.Op == OpHashAgg {
			add("group key: %s", colList(in, n.GroupKey))
		}
		parts := make([]string, len(n.Aggs))
		for i, g := range n.Aggs {
			parts[i] = g.Call.String()
		}
		add("aggs: [%s]", strings.Join(parts, ", "))
		if len(n.Always) > 0 {
			keys := make([]string, len(n.Always))
			for i, k := range n.Always {
				keys[i] = k.String()
			}
			add("always present: [%s]", strings.Join(keys, ", "))
		}
	case OpExpand:
		add("grouping sets: [%s]", plan.FormatGroupingSets(n.Exprs, n.GroupingSets))
	case OpHashJoin:
		add("type: %s", n.JoinKind)
		add("left keys: %s", colList(n.Inputs[0], n.LeftKeys))
		add("right keys: %s", colList(n.Inputs[1], n.RightKeys))
		if n.Cond != nil {
			add("condition: %s", n.Cond)
		}
	case OpTemporalJoin:
		t := n.TemporalJoin
		add("type: %s", n.JoinKind)
		lookup := "primary key"
		if !t.Point {
			lookup = "primary key prefix"
		}
		pk := make([]string, len(n.LeftKeys))
		for i := range n.LeftKeys {
			pk[i] = t.Rel.Columns[t.Rel.PK[i]].Name
		}
		add("lookup by %s: %s (%s) = %s, at the committed epoch when processed", lookup, t.Rel.Name, strings.Join(pk, ", "), colList(in, n.LeftKeys))
		if n.Cond != nil {
			add("condition: %s", n.Cond)
		}
		if t.AppendOnly {
			add("append-only input: no state")
		} else {
			add("emitted rows memorised per left row (its retraction deletes them)")
		}
	case OpTopN:
		if len(n.GroupKey) > 0 {
			add("group key: %s", colList(in, n.GroupKey))
		}
		add("order: %s", orderList(in, n.Order))
		if n.Limit >= 0 {
			add("limit: %d", n.Limit)
		}
		if len(n.TieCols) > 0 {
			add("with ties on: %s", colList(in, n.TieCols))
		}
		if n.Offset > 0 {
			add("offset: %d", n.Offset)
		}
	case OpDistinct:
		add("distinct key: %s", colList(in, n.GroupKey))
	case OpOverWindow:
		if w := n.Window; w != nil {
			calls := make([]string, len(w.Calls))
			for i, c := range w.Calls {
				args := make([]string, len(c.Args))
				for j, x := range c.Args {
					args[j] = colName(in, x)
				}
				calls[i] = c.Call.Name + "(" + strings.Join(args, ", ") + ")"
			}
			add("window functions: [%s]", strings.Join(calls, ", "))
			add("partition by: %s", colList(in, w.PartitionBy))
			add("order by: %s", orderList(in, w.OrderBy))
		}
	case OpExchange:
		add("dist: %s", distString(n, n.Dist))
		return a
	case OpSink:
		if n.SinkAppendOnly {
			add("type: append-only")
		}
		fallthrough
	case OpMaterialize:
		var visible []int
		for i, c := range n.Schema {
			if !c.Hidden {
				visible = append(visible, i)
			}
		}
		add("columns: %s", colList(n, visible))
	}
	if cols := CleanedByWatermark(n, 0); len(cols) > 0 {
		add("state cleaned by watermark on: %s", colList(in, cols))
	}
	if (n.Op == OpSource || n.Op == OpScan) && len(WatermarkColumns(n)) > 0 {
		// The source's actors, or the table's, drop the late rows.
		add("watermark: %s, late rows dropped", n.Rel.Watermark.Expr)
	}
	if cols := WatermarkColumns(n); len(cols) > 0 {
		add("output watermarks: %s", colList(n, cols))
	}
	add("stream key: %s", colList(n, n.Key))
	add("dist: %s", distString(n, n.Dist))
	return a
}

// table prints one state table: its owner, columns, primary key and
// distribution key.
func (e *explainer) table(t tableRef) {
	s := t.schema
	if s == nil {
		e.out = append(e.out, fmt.Sprintf("Table %d (%s)", t.id, opLabel(t.owner)))
		return
	}
	names := stateColumnNames(t.owner, t.index, s)
	e.out = append(e.out, fmt.Sprintf("Table %d (%s)", t.id, opLabel(t.owner)))
	cols := make([]string, len(s.Types))
	for i, ty := range s.Types {
		cols[i] = names[i] + " " + ty.Name()
	}
	e.out = append(e.out, "├── columns: ["+strings.Join(cols, ", ")+"]")
	pk := make([]string, len(s.PK))
	for i, c := range s.PK {
		dir := "ASC"
		if i < len(s.Desc) && s.Desc[i] {
			dir = "DESC"
		}
		pk[i] = names[c] + " " + dir
	}
	e.out = append(e.out, "├── primary key: ["+strings.Join(pk, ", ")+"]")
	side := 0
	if t.owner.Op == OpHashJoin && t.index < len(t.owner.Inputs) {
		side = t.index
	}
	if cols := CleanedByWatermark(t.owner, side); len(cols) > 0 {
		e.out = append(e.out, "├── cleaned by watermark on: "+colList(t.owner.Inputs[side], cols))
	}
	if len(s.DistKey) == 0 {
		e.out = append(e.out, "└── distribution key: [] (one vnode)")
		return
	}
	dk := make([]string, len(s.DistKey))
	for i, c := range s.DistKey {
		dk[i] = names[c]
	}
	e.out = append(e.out, "└── distribution key: ["+strings.Join(dk, ", ")+"]")
}

// stateColumnNames names a state table's columns: its own names when the
// schema has them; otherwise from what the owner stores there (input rows
// for joins, top-N and window functions; group keys then aggregate states
// for aggregations), falling back to positions.
func stateColumnNames(owner *Node, idx int, s *state.Schema) []string {
	if len(s.ColumnNames) == len(s.Types) {
		return s.ColumnNames
	}
	names := make([]string, len(s.Types))
	for i := range names {
		names[i] = fmt.Sprintf("$%d", i)
	}
	set := func(i int, name string) {
		if i < len(names) {
			names[i] = name
		}
	}
	var in *Node
	if len(owner.Inputs) > 0 {
		in = owner.Inputs[0]
	}
	switch owner.Op {
	case OpHashJoin, OpTopN, OpOverWindow:
		if owner.Op == OpHashJoin && idx < len(owner.Inputs) {
			in = owner.Inputs[idx]
		}
		for i := range in.Schema {
			set(i, colName(in, i))
		}
		if owner.Op == OpHashJoin {
			set(len(in.Schema), "_degree")
		}
	case OpWindowClose:
		for i := range in.Schema {
			set(i, colName(in, i))
		}
	case OpTemporalJoin:
		for i := range owner.Schema {
			set(i, colName(owner, i))
		}
	case OpDynamicFilter:
		if idx == 1 {
			set(0, "_bound")
			break
		}
		set(0, "_filter_key")
		for i := range in.Schema {
			set(1+i, colName(in, i))
		}
	case OpTemporalFilter:
		set(0, "_temporal_key")
		for i := range in.Schema {
			set(1+i, colName(in, i))
		}
	case OpDistinct:
		for i, c := range owner.GroupKey {
			set(i, colName(in, c))
		}
		set(len(owner.GroupKey), "_count")
	case OpHashAgg, OpSimpleAgg:
		for i, c := range owner.GroupKey {
			set(i, colName(in, c))
		}
		if idx == 0 {
			k := len(owner.GroupKey)
			set(k, "_row_count")
			for i, a := range owner.Aggs {
				set(k+1+2*i, fmt.Sprintf("_agg_%d_state", i))
				set(k+2+2*i, a.Call.String())
			}
		}
	case OpSource:
		set(0, "split")
		set(1, "next_position")
	}
	return names
}

// colName names column i of n's output.
func colName(n *Node, i int) string {
	if n == nil || i < 0 || i >= len(n.Schema) || n.Schema[i].Name == "" {
		return fmt.Sprintf("$%d", i)
	}
	c := n.Schema[i]
	name := c.Name
	if c.Table != "" {
		name = c.Table + "." + c.Name
	}
	for j, o := range n.Schema {
		if j != i && o.Name == c.Name && o.Table == c.Table {
			// Two columns of one name (both sides' join keys): say which.
			return fmt.Sprintf("%s#%d", name, i)
		}
	}
	return name
}

func colList(n *Node, cols []int) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = colName(n, c)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func orderList(n *Node, order []OrderCol) string {
	parts := make([]string, len(order))
	for i, o := range order {
		parts[i] = colName(n, o.Col)
		if o.Desc {
			parts[i] += " DESC"
		} else {
			parts[i] += " ASC"
		}
		if o.NullsFirst != o.Desc {
			// PostgreSQL's default is NULLS LAST ascending, NULLS FIRST
			// descending; say so only when it differs.
			if o.NullsFirst {
				parts[i] += " NULLS FIRST"
			} else {
				parts[i] += " NULLS LAST"
			}
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// distString renders a distribution with column names of n.
func distString(n *Node, d Dist) string {
	switch d.Kind {
	case DistSingle:
		return "single"
	case DistHash:
		return "hash(" + strings.TrimPrefix(strings.TrimSuffix(colList(n, d.Keys), "]"), "[") + ")"
	}
	return "any"
}

// ExplainedFragment is one fragment of a stream plan as EXPLAIN prints it,
// for the dashboard's stream graph: its number, how its actors split the
// rows, its operators (EXPLAIN's lines) and the fragments whose output its
// exchanges read.
type ExplainedFragment struct {
	ID     int
	Dist   string
	Lines  []string
	Inputs []int
}

// ExplainFragments is Explain by fragment (the state-table list left out).
func ExplainFragments(root *Node) []ExplainedFragment {
	e := &explainer{ids: map[*Node]int{}}
	e.number(root)
	out := make([]ExplainedFragment, 0, len(e.frags))
	for _, f := range e.frags {
		e.out = e.out[:0]
		e.node(f, "", "")
		ef := ExplainedFragment{ID: e.ids[f], Dist: fragmentDist(f), Lines: append([]string(nil), e.out...)}
		walkFragment(f, func(n *Node) {
			if n.Op == OpExchange {
				ef.Inputs = append(ef.Inputs, e.ids[n.Inputs[0]])
			}
		})
		out = append(out, ef)
	}
	return out
}
