// Package expr holds Runnel's scalar expressions, functions, operators,
// casts and aggregate and window functions, with PostgreSQL 15 semantics
// (NULL propagation, overflow and division-by-zero errors, implicit
// coercion and overload resolution). The binder builds expressions through
// this package's constructors; batch and streaming executors evaluate them.
//
// # Building expressions
//
// Every constructor type-checks and resolves at bind time and returns an
// *sqlerr.Error with PostgreSQL's SQLSTATE when PostgreSQL would refuse the
// query:
//
//	NewBinaryOp(op, l, r)        operators and AND/OR/LIKE/IS DISTINCT FROM
//	NewUnaryOp(op, e)            - + NOT
//	NewFuncCall(name, args)      scalar functions (plus COALESCE, NULLIF, GREATEST, LEAST)
//	NewCast(e, t, CastContext)   the pg_cast matrix plus I/O conversion casts
//	NewCase / NewCoalesce / NewNullIf / NewGreatest / NewLeast
//	NewIsNull / NewBoolTest / NewIn / NewBetween / NewLike
//	CommonType / CoerceToCommon  select_common_type for UNION, CASE, VALUES
//	CoerceUnknown / ResolveUnknown  untyped literals ('abc', NULL)
//	CoerceBool                   WHERE / HAVING / ON conditions
//
// Operators and functions live in registries of overloads (resolve.go);
// resolveOverload implements PostgreSQL's func_select_candidate: exact
// match, implicit coercibility, most exact matches, preferred types, type
// categories for unknown literals, and the "unknowns take the known type"
// rule. The same code resolves aggregates. Type categories, preferred
// types and the cast contexts are in coerce.go.
//
// Untyped string literals are converted when the expression is built
// (PostgreSQL also decides literal types while parsing), except for
// date/time targets whose meaning depends on the session (TimeZone, 'now'),
// which are converted at the first evaluation and cached per
// (time zone, statement time). Other casts of constants stay lazy, so an
// untaken CASE branch never raises an error.
//
// # Semantics that are easy to get wrong (and are tested against PostgreSQL)
//
//   - Integers: every result is range-checked against the result type
//     (22003 "integer out of range"); / truncates; % takes the dividend's
//     sign; x / 0 and x % 0 are 22012.
//   - numeric (apd decimals): + - * are exact; / uses select_div_scale;
//     sqrt, exp, ln, log and ^ use numeric.c's result-scale rules
//     (numeric ^ integer: scale max(16, dscale) as in PostgreSQL 15).
//   - Casts: numeric -> int rounds half away from zero, float -> int rounds
//     half to even (rint); float -> numeric goes through 15 (float4: 6)
//     significant digits; bool -> text is true/false while concat() and
//     format() use the output function (t/f).
//   - Three-valued logic for AND/OR/NOT/IN/BETWEEN; IS DISTINCT FROM.
//   - Dates and timestamps: month arithmetic clamps to the month's last
//     day; timestamptz arithmetic and truncation happen in the session time
//     zone (EvalContext.Location).
//
// # Aggregates (agg.go, agg_stats.go)
//
// LookupAggregate resolves name + argument types to an *Aggregate with
// PostgreSQL's result types. NewState is append-only (batch GROUP BY);
// NewRetractableState also supports Retract (streaming deletes, sliding
// window frames). count/sum/avg/bool_and/bool_or/stddev/variance keep O(1)
// state that Encode/Decode serialise compactly; min, max, string_agg and
// DISTINCT keep a multiset of their inputs, so their encoding grows with
// the input and the streaming engine should keep those inputs in a state
// table instead. Retracting a value a state never saw is an error
// (invariant I6: a consistency violation is reported, never absorbed).
//
// # Window functions (window.go)
//
// ComputeWindow evaluates one window function over one sorted partition
// for a sub-range [from, to) of its rows, so a streaming over-window
// executor can recompute only the rows a change touched. ROWS, RANGE (with
// numeric and date/time offsets) and GROUPS frames and every EXCLUDE
// option are supported. Loops check ctx.Ctx every 256 rows (invariant I5:
// cancellation is prompt), and no step between two checks allocates in
// proportion to the partition: a caller can hand its rows through
// accessors (WindowRows) and take results through a callback
// (ComputeWindowEach), and per-row arrays live in Blocks
// (window_blocks.go says why).
//
// This package imports only types and sqlerr from Runnel; it must not
// import the planner, executors or storage.
package expr
