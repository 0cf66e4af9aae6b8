package catalog

import "github.com/runneldb/runnel/internal/types"

// ObjectID identifies a catalog object (database, schema, relation, user).
// Ids come from a durable allocator and are never reused.
type ObjectID uint32

// TableID identifies a state table in the storage engine. A relation owns
// one or more state tables (a table or materialized view: the one holding
// its rows; an executor in a view's stream graph: its own).
type TableID uint32

// RelationKind is what a relation is.
type RelationKind uint8

const (
	KindTable RelationKind = iota
	KindMaterializedView
	KindView // a plain (non-materialized) view: only its definition is stored
	KindSource
	KindSystem // a virtual system table (pg_catalog, information_schema, rw_catalog)
	// KindSink is CREATE SINK: a streaming job delivering a query's
	// changes to an external system. It shares the relations' namespace
	// (as in RisingWave) but cannot be queried; Columns are the query's,
	// StateTables its plan's (the last one is the sink's log store).
	KindSink
	// KindIndex is CREATE INDEX: a streaming job keeping a copy of a
	// table's or materialized view's rows in its own state table, keyed by
	// the index columns and then the base relation's key (Index says
	// which). Batch queries read it by key range instead of scanning the
	// base relation; it cannot be queried by name.
	KindIndex
)

func (k RelationKind) String() string {
	switch k {
	case KindTable:
		return "table"
	case KindMaterializedView:
		return "materialized view"
	case KindView:
		return "view"
	case KindSource:
		return "source"
	case KindSystem:
		return "system table"
	case KindSink:
		return "sink"
	case KindIndex:
		return "index"
	}
	return "relation"
}

// Column is one column of a relation.
type Column struct {
	Name    string
	Type    types.Type
	NotNull bool
	// Default is the SQL text of the DEFAULT expression ("" when none).
	Default string
	// Hidden columns (the generated _row_id of a table without a primary
	// key) are not returned by SELECT * and not listed by \d.
	Hidden bool
	// Comment is COMMENT ON COLUMN's text ("" when none).
	Comment string `json:",omitempty"`
}

// Relation describes a table, view, materialized view or source.
type Relation struct {
	ID         ObjectID
	DatabaseID ObjectID
	SchemaID   ObjectID
	Name       string
	Kind       RelationKind
	Owner      string
	Columns    []Column
	// PK holds the column indices of the primary key, in key order. A table
	// declared without one gets a hidden _row_id column as its key. For a
	// materialized view it is the stream key derived by the planner.
	PK []int
	// DistKey holds the column indices that choose a row's virtual node
	// (defaults to PK).
	DistKey []int
	// StateTable is the storage table holding the relation's rows (tables
	// and materialized views); 0 for views and system tables.
	StateTable TableID
	// Definition is the defining SELECT of a view or materialized view.
	Definition string
	// EmitOnWindowClose: a materialized view defined with EMIT ON WINDOW
	// CLOSE (not part of Definition, which is a plain SELECT).
	EmitOnWindowClose bool `json:",omitempty"`
	// DependsOn lists the relations a view reads.
	DependsOn []ObjectID
	// Functions lists the SQL functions a view or sink's query calls
	// (inlined into its plan; see Function).
	Functions []ObjectID `json:",omitempty"`
	// AppendOnly marks sources and append-only tables.
	AppendOnly bool
	// Options holds WITH (...) options (connector settings).
	Options map[string]string
	// StateTables lists every state table of a materialized view's stream
	// graph in plan order (StateTable, the view's rows, is among them).
	// Re-planning the definition assigns them in the same order.
	StateTables []TableID
	// Creating is set while a materialized view is being backfilled; such
	// a view is not visible to queries, and recovery drops it.
	Creating bool
	// Watermark is a source's or table's WATERMARK FOR clause, nil when
	// it has none.
	Watermark *Watermark `json:",omitempty"`
	// StateLayout is the layout of a materialized view's or sink's state
	// tables as planned at creation (nil for a job created before layouts
	// were stored: the first rebuild records it). A rebuild whose plan
	// lays the state out differently refuses the job instead of binding
	// the stored tables by position (issue 13 item 7).
	StateLayout *StateLayout `json:",omitempty"`
	// Comment is COMMENT ON's text ("" when none).
	Comment string `json:",omitempty"`
	// Index describes an index (KindIndex), nil for other relations.
	Index *IndexSpec `json:",omitempty"`
}

// IndexSpec is what CREATE INDEX declared. The index's Columns are the
// key columns as declared, then the base relation's key columns not among
// them, then the included ones, each named as in the base relation; its
// PK is the first two groups (index columns, then the base key), so every
// base row has exactly one index row.
type IndexSpec struct {
	// On is the indexed table or materialized view.
	On ObjectID
	// Columns are the declared key columns (base column names), Desc
	// their order.
	Columns []string
	Desc    []bool
	// Include lists INCLUDE's columns; IncludeAll (no INCLUDE clause, as
	// in RisingWave) stores every column of the base relation.
	Include    []string `json:",omitempty"`
	IncludeAll bool     `json:",omitempty"`
}

// KeyDesc returns, for each of the index's PK columns, whether it is
// ordered descending (only declared index columns can be).
func (s *IndexSpec) KeyDesc(pkLen int) []bool {
	out := make([]bool, pkLen)
	copy(out, s.Desc)
	return out
}

// StateLayout is how a streaming job's state is laid out: each state
// table in plan order with its owning executor and schema, and a
// fingerprint over them.
type StateLayout struct {
	Fingerprint string
	Tables      []StateTableLayout
}

// StateTableLayout is one state table's layout: the executor that owns it
// (the stream operator's name), its column types, its key columns (with
// their order) and its distribution key.
type StateTableLayout struct {
	ID       TableID
	Executor string
	Types    []string
	Key      []int
	Desc     []bool `json:",omitempty"`
	DistKey  []int  `json:",omitempty"`
}

// Watermark is WATERMARK FOR Columns[Column] AS Expr: rows are expected to
// arrive with times no older than the largest Expr seen so far. Expr is
// SQL text over the relation's columns, of the column's type.
type Watermark struct {
	Column int
	Expr   string
}

// VisibleColumns returns the indices of the columns SELECT * returns.
func (r *Relation) VisibleColumns() []int {
	out := make([]int, 0, len(r.Columns))
	for i, c := range r.Columns {
		if !c.Hidden {
			out = append(out, i)
		}
	}
	return out
}

// ColumnIndex returns the index of the named column, or -1.
func (r *Relation) ColumnIndex(name string) int {
	for i, c := range r.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// Schema is a namespace in a database.
type Schema struct {
	ID         ObjectID
	DatabaseID ObjectID
	Name       string
	Owner      string
}

// Database is a database; sessions connect to one.
type Database struct {
	ID    ObjectID
	Name  string
	Owner string
}
