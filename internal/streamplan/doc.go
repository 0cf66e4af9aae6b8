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
//     ids (how jobs are rebuilt after recovery).
//
// This package plans; it does not run anything.
package streamplan
