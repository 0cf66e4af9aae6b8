package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/types"
)

// Column is one output column of a node.
type Column struct {
	Name string
	Type types.Type
	// Table is the range-variable name that qualifies the column (for
	// name resolution and EXPLAIN); "" for computed columns.
	Table string
	// Hidden columns exist in the row (a table's _row_id) but are not
	// expanded by *.
	Hidden bool
	// OrigRel and OrigAtt name the stored table or materialized view
	// column this column is taken from unchanged (OrigAtt is the 1-based
	// position in its relation's columns); 0 when computed. Clients read
	// them from RowDescription (JDBC getTableName, isNullable).
	OrigRel catalog.ObjectID
	OrigAtt int
}

// Schema is a node's output row shape.
type Schema []Column

// Types returns the column types.
func (s Schema) Types() []types.Type {
	out := make([]types.Type, len(s))
	for i, c := range s {
		out[i] = c.Type
	}
	return out
}

// Node is a logical operator.
type Node interface {
	Schema() Schema
	Children() []Node
	// Describe is the one-line description used by EXPLAIN.
	Describe() string
}

// Scan reads a relation: every column in catalog order, hidden ones
// included. Filter, when set, is a predicate the optimizer pushed into the
// scan (bound against the scan's own output).
type Scan struct {
	Rel    *catalog.Relation
	Alias  string
	Out    Schema
	Filter expr.Expr
	// KeyPrefix, when set, holds the values (constants or parameters) that
	// Filter requires of a prefix of the relation's primary key: the scan
	// may read only that key range. Filter is still applied to every row.
	KeyPrefix []expr.Expr
	// Index, when set, is an index whose key range holds every row Filter
	// can accept: the scan may read it instead of the relation.
	Index *IndexLookup
	// ProcTime marks RisingWave's `rel FOR SYSTEM_TIME AS OF PROCTIME()`:
	// in a materialized view the scan is the lookup side of a temporal
	// join (each left row reads the relation's committed contents when it
	// is processed); a batch query reads it as an ordinary scan.
	ProcTime bool
}

// IndexLookup reads a relation's rows through one of its indexes: the
// index rows whose first len(Eq) key columns equal Eq and whose next key
// column lies between Lo and Hi (inclusive; nil is open), each mapped
// back to a row of the relation (from the index's own columns when it
// stores them all, else by a point read of the relation by primary key).
// The scan's Filter is still applied to every row.
type IndexLookup struct {
	Index  *catalog.Relation
	Eq     []expr.Expr
	Lo, Hi expr.Expr
	// Covering: the index stores every column of the relation.
	Covering bool
}

func (l *IndexLookup) String() string {
	var b strings.Builder
	b.WriteString("using " + l.Index.Name)
	if len(l.Eq) > 0 {
		b.WriteString(" key: (" + exprList(l.Eq) + ")")
	}
	if l.Lo != nil || l.Hi != nil {
		lo, hi := "-inf", "+inf"
		if l.Lo != nil {
			lo = l.Lo.String()
		}
		if l.Hi != nil {
			hi = l.Hi.String()
		}
		fmt.Fprintf(&b, " range %s: [%s, %s]", l.Index.Columns[len(l.Eq)].Name, lo, hi)
	}
	if !l.Covering {
		b.WriteString(" lookup by primary key")
	}
	return b.String()
}

// Values produces literal rows. Rows' expressions see an empty input row
// (or the outer row, for a correlated VALUES in a subquery).
type Values struct {
	Rows [][]expr.Expr
	Out  Schema
}

// Filter keeps rows where Cond is true.
type Filter struct {
	Input Node
	Cond  expr.Expr
}

// Project computes Exprs over each input row.
type Project struct {
	Input Node
	Exprs []expr.Expr
	Out   Schema
}

// AggCall is one aggregate function call.
type AggCall struct {
	Name     string
	Args     []expr.Expr // evaluated over the aggregate's input row
	Distinct bool
	Filter   expr.Expr // FILTER (WHERE ...), nil when absent
	// OrderBy is the aggregate's ORDER BY (string_agg(x, ',' ORDER BY y)).
	OrderBy []SortKey
	Type    types.Type
	// Func is the resolved aggregate (its NewState makes accumulators).
	Func *expr.Aggregate
}

func (a *AggCall) String() string {
	var b strings.Builder
	b.WriteString(a.Name)
	b.WriteByte('(')
	if a.Distinct {
		b.WriteString("DISTINCT ")
	}
	if len(a.Args) == 0 {
		b.WriteByte('*')
	}
	for i, e := range a.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(e.String())
	}
	b.WriteByte(')')
	if a.Filter != nil {
		b.WriteString(" FILTER (WHERE " + a.Filter.String() + ")")
	}
	return b.String()
}

// Aggregate groups its input by GroupBy and computes Aggs per group. Its
// output is the group keys followed by the aggregate results. With no
// GroupBy it is a global aggregate: exactly one row, even on empty input.
//
// Always lists group keys whose row exists even when no input row falls
// in the group: the empty sets of GROUPING SETS (NULL keys and the set's
// number), each a global aggregate of its own, so GROUP BY ROLLUP(a) has
// its total row (count 0) over an empty input, as in PostgreSQL.
type Aggregate struct {
	Input   Node
	GroupBy []expr.Expr
	Aggs    []*AggCall
	Out     Schema
	Always  []types.Row
}

// JoinKind is the kind of join.
type JoinKind uint8

const (
	InnerJoin JoinKind = iota
	LeftJoin
	RightJoin
	FullJoin
	// SemiJoin outputs each left row that has a match (EXISTS / IN).
	SemiJoin
	// AntiJoin outputs each left row that has no match (NOT EXISTS).
	AntiJoin
)

func (k JoinKind) String() string {
	return [...]string{"Inner", "Left", "Right", "Full", "Semi", "Anti"}[k]
}

// Join joins Left and Right. LeftKeys[i] = RightKeys[i] are equality keys
// (each bound against its own side; NULL keys never match); Cond is the
// residual condition bound against left columns followed by right columns.
// Semi and anti joins output only left columns.
//
// NullAware marks the anti join of NOT IN: a left row whose key is NULL,
// or any right row whose key is NULL, makes the NOT IN unknown, so such
// left rows are not output (unless the right side is empty).
type Join struct {
	Kind      JoinKind
	Left      Node
	Right     Node
	LeftKeys  []expr.Expr
	RightKeys []expr.Expr
	Cond      expr.Expr
	NullAware bool
	Out       Schema
}

// SortKey is one ORDER BY item.
type SortKey struct {
	Expr       expr.Expr
	Desc       bool
	NullsFirst bool
}

func (k SortKey) String() string {
	s := k.Expr.String()
	if k.Desc {
		s += " DESC"
	}
	if k.NullsFirst != k.Desc { // not the default
		if k.NullsFirst {
			s += " NULLS FIRST"
		} else {
			s += " NULLS LAST"
		}
	}
	return s
}

// Sort orders its input (stably).
type Sort struct {
	Input Node
	Keys  []SortKey
}

// Limit skips Offset rows and returns at most Limit rows (nil: no limit).
// Both are expressions without column references (constants or $n).
type Limit struct {
	Input  Node
	Limit  expr.Expr
	Offset expr.Expr
}

// TopN is Sort followed by Limit, fused by the optimizer. WithTies (FETCH
// FIRST n ROWS WITH TIES) also returns the rows after the limit that sort
// equal, by Keys, to the last row within it.
type TopN struct {
	Input    Node
	Keys     []SortKey
	Limit    expr.Expr
	Offset   expr.Expr
	WithTies bool
}

// Distinct removes duplicate rows. With On set (DISTINCT ON), it keeps the
// first row of each group of equal On values, in input order.
type Distinct struct {
	Input Node
	On    []expr.Expr
}

// SetOpKind is UNION, INTERSECT or EXCEPT.
type SetOpKind uint8

const (
	Union SetOpKind = iota
	Intersect
	Except
)

func (k SetOpKind) String() string { return [...]string{"Union", "Intersect", "Except"}[k] }

// SetOp combines two inputs of the same arity; column types were unified by
// the binder (each side projects casts as needed).
type SetOp struct {
	Kind  SetOpKind
	All   bool
	Left  Node
	Right Node
	Out   Schema
}

// TableFunc is a set-returning function in FROM (generate_series, unnest).
// Args are constant for the statement (or correlated to an outer row).
type TableFunc struct {
	Name string
	Args []expr.Expr
	Out  Schema
	// WithOrdinality appends a bigint ordinal column.
	WithOrdinality bool
}

// WindowCall is one window function call.
type WindowCall struct {
	Name        string
	Args        []expr.Expr
	PartitionBy []expr.Expr
	OrderBy     []SortKey
	Frame       *Frame
	Filter      expr.Expr
	Type        types.Type
	// Agg is set for aggregate functions used as window functions.
	Agg *expr.Aggregate
}

// FrameMode is ROWS, RANGE or GROUPS.
type FrameMode uint8

const (
	FrameRange FrameMode = iota
	FrameRows
	FrameGroups
)

// BoundKind is one end of a frame.
type BoundKind uint8

const (
	UnboundedPreceding BoundKind = iota
	OffsetPreceding
	CurrentRow
	OffsetFollowing
	UnboundedFollowing
)

// FrameBound is one end of a frame; Offset is set for the Offset kinds.
type FrameBound struct {
	Kind   BoundKind
	Offset expr.Expr
}

// Frame is a window frame. The default (nil) is RANGE BETWEEN UNBOUNDED
// PRECEDING AND CURRENT ROW.
type Frame struct {
	Mode       FrameMode
	Start, End FrameBound
	// Exclude: 0 no others, 1 current row, 2 group, 3 ties.
	Exclude uint8
}

// Window appends one column per call to its input rows.
type Window struct {
	Input Node
	Calls []*WindowCall
	Out   Schema
}

// Explain is EXPLAIN of a query: its output is one text column.
type Explain struct {
	Query Node
	Out   Schema
}

func (n *Scan) Schema() Schema      { return n.Out }
func (n *Values) Schema() Schema    { return n.Out }
func (n *Filter) Schema() Schema    { return n.Input.Schema() }
func (n *Project) Schema() Schema   { return n.Out }
func (n *Aggregate) Schema() Schema { return n.Out }
func (n *Join) Schema() Schema      { return n.Out }
func (n *Sort) Schema() Schema      { return n.Input.Schema() }
func (n *Limit) Schema() Schema     { return n.Input.Schema() }
func (n *TopN) Schema() Schema      { return n.Input.Schema() }
func (n *Distinct) Schema() Schema  { return n.Input.Schema() }
func (n *SetOp) Schema() Schema     { return n.Out }
func (n *TableFunc) Schema() Schema { return n.Out }
func (n *Window) Schema() Schema    { return n.Out }
func (n *Explain) Schema() Schema   { return n.Out }

func (n *Scan) Children() []Node      { return nil }
func (n *Values) Children() []Node    { return nil }
func (n *Filter) Children() []Node    { return []Node{n.Input} }
func (n *Project) Children() []Node   { return []Node{n.Input} }
func (n *Aggregate) Children() []Node { return []Node{n.Input} }
func (n *Join) Children() []Node      { return []Node{n.Left, n.Right} }
func (n *Sort) Children() []Node      { return []Node{n.Input} }
func (n *Limit) Children() []Node     { return []Node{n.Input} }
func (n *TopN) Children() []Node      { return []Node{n.Input} }
func (n *Distinct) Children() []Node  { return []Node{n.Input} }
func (n *SetOp) Children() []Node     { return []Node{n.Left, n.Right} }
func (n *TableFunc) Children() []Node { return nil }
func (n *Window) Children() []Node    { return []Node{n.Input} }
func (n *Explain) Children() []Node   { return []Node{n.Query} }

func exprList(es []expr.Expr) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.String()
	}
	return strings.Join(parts, ", ")
}

func keyList(ks []SortKey) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = k.String()
	}
	return strings.Join(parts, ", ")
}

// prefixFixesVnode reports whether a lookup by the first n primary-key
// columns of rel fixes its vnode (covers its distribution key).
func prefixFixesVnode(rel *catalog.Relation, n int) bool {
	dist := rel.DistKey
	if len(dist) == 0 {
		dist = rel.PK
	}
	for _, c := range dist {
		if !slices.Contains(rel.PK[:min(n, len(rel.PK))], c) {
			return false
		}
	}
	return true
}

func (n *Scan) Describe() string {
	s := "Scan " + n.Rel.Name
	if n.Index != nil {
		s = "IndexScan " + n.Rel.Name
	}
	if n.ProcTime {
		s += " FOR SYSTEM_TIME AS OF PROCTIME()"
	}
	if n.Alias != "" && n.Alias != n.Rel.Name {
		s += " AS " + n.Alias
	}
	if n.Index != nil {
		s += " " + n.Index.String()
	} else if len(n.KeyPrefix) > 0 {
		parts := make([]string, len(n.KeyPrefix))
		for i, e := range n.KeyPrefix {
			parts[i] = e.String()
		}
		s += " key: (" + strings.Join(parts, ", ") + ")"
		if !prefixFixesVnode(n.Rel, len(n.KeyPrefix)) {
			// The rows are spread over vnodes by columns the prefix does
			// not fix: the lookup seeks in every vnode.
			s += " in every vnode"
		}
	}
	if n.Filter != nil {
		s += " filter: " + n.Filter.String()
	}
	return s
}
func (n *Values) Describe() string  { return fmt.Sprintf("Values %d rows", len(n.Rows)) }
func (n *Filter) Describe() string  { return "Filter " + n.Cond.String() }
func (n *Project) Describe() string { return "Project " + exprList(n.Exprs) }
func (n *Aggregate) Describe() string {
	parts := make([]string, len(n.Aggs))
	for i, a := range n.Aggs {
		parts[i] = a.String()
	}
	s := "Aggregate " + strings.Join(parts, ", ")
	if len(n.GroupBy) > 0 {
		s += " group by: " + exprList(n.GroupBy)
	}
	if len(n.Always) > 0 {
		keys := make([]string, len(n.Always))
		for i, k := range n.Always {
			keys[i] = k.String()
		}
		s += " always: " + strings.Join(keys, ", ")
	}
	return s
}
func (n *Join) Describe() string {
	s := n.Kind.String() + " Join"
	if n.NullAware {
		s += " (null-aware)"
	}
	if len(n.LeftKeys) > 0 {
		parts := make([]string, len(n.LeftKeys))
		for i := range n.LeftKeys {
			parts[i] = n.LeftKeys[i].String() + " = " + n.RightKeys[i].String()
		}
		s += " keys: " + strings.Join(parts, ", ")
	}
	if n.Cond != nil {
		s += " cond: " + n.Cond.String()
	}
	return s
}
func (n *Sort) Describe() string { return "Sort " + keyList(n.Keys) }
func (n *Limit) Describe() string {
	s := "Limit"
	if n.Limit != nil {
		s += " " + n.Limit.String()
	}
	if n.Offset != nil {
		s += " offset " + n.Offset.String()
	}
	return s
}
func (n *TopN) Describe() string {
	s := "TopN " + keyList(n.Keys)
	if n.Limit != nil {
		s += " limit " + n.Limit.String()
	}
	if n.WithTies {
		s += " with ties"
	}
	if n.Offset != nil {
		s += " offset " + n.Offset.String()
	}
	return s
}
func (n *Distinct) Describe() string {
	if n.On != nil {
		return "Distinct on " + exprList(n.On)
	}
	return "Distinct"
}
func (n *SetOp) Describe() string {
	if n.All {
		return n.Kind.String() + " All"
	}
	return n.Kind.String()
}
func (n *TableFunc) Describe() string { return "TableFunc " + n.Name + "(" + exprList(n.Args) + ")" }
func (n *Window) Describe() string {
	parts := make([]string, len(n.Calls))
	for i, c := range n.Calls {
		s := c.Name + "(" + exprList(c.Args) + ") over ("
		if len(c.PartitionBy) > 0 {
			s += "partition by " + exprList(c.PartitionBy)
		}
		if len(c.OrderBy) > 0 {
			if len(c.PartitionBy) > 0 {
				s += " "
			}
			s += "order by " + keyList(c.OrderBy)
		}
		parts[i] = s + ")"
	}
	return "Window " + strings.Join(parts, ", ")
}
func (n *Explain) Describe() string { return "Explain" }

// Format renders the tree as EXPLAIN prints it, one line per node.
func Format(n Node) []string {
	var out []string
	var walk func(n Node, depth int)
	walk = func(n Node, depth int) {
		prefix := strings.Repeat("  ", depth)
		if depth > 0 {
			prefix += "-> "
		}
		out = append(out, prefix+n.Describe())
		for _, c := range n.Children() {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return out
}

// SRFCall is a set-returning function in a select list.
type SRFCall struct {
	Name string
	Args []expr.Expr // bound against the ProjectSet's input row
	Type types.Type
}

// ProjectSet evaluates set-returning functions of a select list (SELECT
// generate_series(1, n) ...): each input row is followed by one output row
// per value of the longest SRF, the others padded with NULL (PostgreSQL 10+
// semantics). Its output is the input row followed by one column per call.
//
// A function in FROM that reads the columns of the items before it (FROM t,
// unnest(t.arr) WITH ORDINALITY, t LEFT JOIN LATERAL generate_series(1,
// t.n) ON true) is a ProjectSet over those items too: Ordinality appends
// the row's 1-based position in its expansion (int8) after the calls, and
// Outer makes a row whose expansion is empty produce one row with NULL
// calls (and ordinality) instead of none.
type ProjectSet struct {
	Input      Node
	Calls      []*SRFCall
	Ordinality bool
	Outer      bool
	Out        Schema
}

func (n *ProjectSet) Schema() Schema   { return n.Out }
func (n *ProjectSet) Children() []Node { return []Node{n.Input} }
func (n *ProjectSet) Describe() string {
	parts := make([]string, len(n.Calls))
	for i, c := range n.Calls {
		parts[i] = c.Name + "(" + exprList(c.Args) + ")"
	}
	d := "ProjectSet " + strings.Join(parts, ", ")
	if n.Ordinality {
		d += " WITH ORDINALITY"
	}
	if n.Outer {
		d += " (outer)"
	}
	return d
}
