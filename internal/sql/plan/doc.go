// Package plan defines Runnel's logical query plan: a tree of relational
// operators (Scan, Filter, Project, Aggregate, Join, Sort, Limit, TopN,
// Distinct, SetOp, Values, TableFunc, Window, ProjectSet, HopWindow,
// Expand), each with an output schema, whose scalar parts are bound
// expressions from internal/expr.
//
// The binder (internal/sql/binder) produces it, the optimizer rewrites it
// (internal/sql/optimizer), the batch executors (internal/batch) run it for
// SELECT, and the streaming planner turns it into a stream graph. It is
// therefore free of execution concerns: a node states what is computed,
// never how it is stored or exchanged.
//
// Conventions:
//   - Every expression of a node is bound against the concatenation of its
//     inputs' output rows (a Join's condition sees left columns then right
//     columns), so a ColumnRef index is a position in that row.
//   - Subquery expressions (Subquery) carry their own plan; references to
//     columns of an enclosing query are OuterRef, resolved at execution time
//     from the outer row (see Subquery's doc).
//
// Invariants: none of ARCHITECTURE.md §3 live here; plans are immutable
// after optimisation and may be shared between executions.
package plan
