// Package binder resolves names and types in parsed statements and builds
// logical plans (internal/sql/plan) for queries, plus bound forms of DML
// and DDL statements that the session layer executes (CreateTable, Drop,
// CreateView, Insert, Update, Delete, Copy, SetVar, ...; see stmt.go,
// ddl.go, dml.go).
//
// Design:
//   - A scope lists the columns visible at a point of a query, with the
//     range-variable name that qualifies each; name resolution walks the
//     scope chain outwards, so a reference to an enclosing query's column
//     becomes a plan.OuterRef and marks the subquery correlated.
//   - Aggregation is bound the way PostgreSQL does it: expressions above
//     the Aggregate node are matched against the GROUP BY expressions
//     (structurally, by their bound form) and aggregate calls become
//     references to the Aggregate's output columns; any other column
//     reference is error 42803. GROUPING SETS, ROLLUP and CUBE add an
//     Expand under the Aggregate and a grouping-set number to its keys
//     (grouping.go).
//   - Untyped literals stay "unknown" until their context types them
//     (internal/expr does the coercion); an output column still unknown at
//     the end becomes text, as in PostgreSQL.
//   - Parameters $n take their type from the client when given, else from
//     their context (comparison with a typed operand, IN list, BETWEEN,
//     assignment target, LIMIT, CAST), else text.
//
// Optimisation happens here, while the syntax trees and scopes of each
// side are at hand (bound expressions from internal/expr are opaque, so a
// later pass could not move or split them):
//   - WHERE conjuncts are pushed down through inner joins and into the
//     preserved side of outer joins, ending as Scan filters where possible
//     (build.go: pushDown);
//   - join conditions col = col across the two sides become hash-join keys,
//     cast to one type so that equal values hash equally (tryEquiKey);
//   - WHERE [NOT] EXISTS / IN / uncorrelated NOT IN subqueries become
//     semi / anti / null-aware anti joins (decorrelate.go); other
//     subqueries stay plan.Subquery expressions, which are always correct;
//   - session-independent numeric/boolean constant expressions are folded
//     (fold.go); ORDER BY + LIMIT becomes TopN.
//
// The binder reads the catalog only through the Catalog interface.
//
// Invariants: I9 (no input ends the process), in two ways. Stored
// definitions (a view's query, DEFAULT and WATERMARK expressions) are
// slices of the user's text checked to parse to the same tree, never a
// tree printed back by pg_query's Deparse (C code that trusts its input,
// ddl.go: definitionText); the binder never changes the user's AST. And
// its recursion is bounded: a statement's depth by the parser (54001 past
// parser.MaxNesting), view expansion by maxViewNesting and a view met
// again inside its own expansion (42P17); expressions of different views
// do not nest into each other.
package binder
