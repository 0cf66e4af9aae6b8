// Package batch runs logical plans (internal/sql/plan) for SELECT and for
// the read side of DML: a pull-based tree of executors, each with
// Next(ctx) returning one row at a time (nil at the end), built by Build.
//
// Design:
//   - Row at a time: executors are simple loops over types.Row; hashing
//     uses an injective byte encoding of the key datums (hashkey.go) that
//     treats values PostgreSQL considers equal as equal (1.0 = 1.00,
//     -0 = 0, NaN = NaN).
//   - Blocking operators (sort, hash aggregate, hash join build, set
//     operations, window) keep their input in memory; TopN keeps only its
//     best LIMIT+OFFSET rows in a bounded heap. Sorts are stable (ties keep
//     input order) with PostgreSQL's NULL placement and byte-order ("C")
//     string collation.
//   - Joins: a hash join when the plan has equality keys (inner, left,
//     right, full, semi, anti, null-aware anti for NOT IN), otherwise a
//     nested loop over the buffered right side; the residual condition is
//     evaluated on left ++ right.
//   - Window functions are computed per partition after a stable sort;
//     frames that slide forward add and retract rows (O(1) per row for
//     sum/count/avg) instead of recomputing.
//   - Scans read through the DataSource interface, which the session layer
//     implements over storage at one consistent snapshot.
//   - Subqueries inside expressions run through a SubqueryRunner that the
//     executor tree installs into the evaluation context; uncorrelated
//     subqueries run once per execution and are cached.
//
// Invariants guarded:
//   - I5 (cancellation is prompt): every loop whose length depends on data
//     calls checkCancel at least every cancelCheckRows rows.
//   - I4 is the DataSource's: a scan of a dropped relation must fail, and
//     the executor passes the error up unchanged.
package batch
