// Package streamplan turns the logical plan of a materialized view's query
// (internal/sql/plan) into a stream plan: a tree of streaming operators in
// which every node knows its stream key (the columns that identify a row in
// its changelog) and its distribution, with exchanges where the data must
// be re-partitioned; then into fragments (the pieces between exchanges)
// that become actors.
//
// Conventions:
//   - A node's physical schema is its logical schema followed by hidden
//     columns the planner added to carry stream keys; expressions bound to
//     the logical schema therefore stay valid over the physical row.
//   - Stateful operators get their own state tables; the tables are listed
//     in plan order, so re-planning the same definition assigns the same
//     ids (how jobs are rebuilt after recovery). StateLayout describes
//     them (owning operator, types, key) with a fingerprint; a job stores
//     it at creation and a rebuild whose layout differs is refused rather
//     than bound by position (layout.go; issue 13 item 7).
//   - A subtree that reads no relation (VALUES, generate_series with
//     constant arguments, SELECT without FROM) is evaluated at planning
//     time and becomes a Values operator that emits its rows once; a
//     marker in its state table, committed in the same epoch as the rows,
//     keeps recovery from emitting them twice (constant.go).
//   - Expressions whose value changes over time (volatile functions) are
//     refused: an incrementally maintained row would freeze them.
//   - Explain renders a planned job for EXPLAIN CREATE MATERIALIZED VIEW.
//
// This package plans; it does not run anything.
package streamplan
