// Package slt runs sqllogictest files in the dialect of sqllogictest-rs as
// used by RisingWave, against any server that speaks the PostgreSQL wire
// protocol (Runnel itself, or a real PostgreSQL for cross-checking).
//
// File format (one record per paragraph; records separated by blank lines):
//
//	# comment
//	statement ok                      SQL must succeed
//	statement count <n>               ... and affect n rows
//	statement error [<regex>]         SQL must fail (error text matches regex)
//	statement error                   ... with exactly this error text:
//	<sql>
//	----
//	db error: ERROR: <message>        (ends at two blank lines)
//	query <types> [nosort|rowsort|valuesort] [label]
//	<sql>
//	----
//	<rows, values separated by spaces; NULL, (empty), t/f>
//	query error [<regex>]             (or the ---- form, as statement error)
//	system ok                         run a shell command; optional ---- output
//	include <glob>                    run other files (relative to this one) in
//	                                  the same session
//	skipif <label> / onlyif <label>   condition the next record on the labels
//	connection <name>                 run the next record on a named session
//	control substitution on|off       $VAR, ${VAR}, ${VAR:default}, \$ escapes,
//	                                  $__TEST_DIR__, $__NOW__, $__DATABASE__
//	control sortmode <mode>           default sort mode for queries
//	sleep <duration>                  e.g. 500ms, 2s
//	halt                              stop running this file
//
// Any statement/query/system header may end in "retry <n> backoff <d>": the
// record is re-run up to n more times, d apart, until it passes. A line
// "retry <n> backoff <d>" on its own applies the same to the next record.
//
// Error texts have the form "db error: <SEVERITY>: <message>" followed by
// "\nDETAIL: …" and "\nHINT: …" lines when present, like RisingWave's
// driver prints them; a regex is searched for anywhere in that text (or
// matched against the SQLSTATE). An expected text may contain <slt:ignore>
// to skip a variable part. Values are compared after collapsing runs of
// whitespace, like sqllogictest-rs's default normaliser; rowsort and
// valuesort sort both the actual and the expected side. Values PostgreSQL
// and RisingWave print differently compare equal (compare.go): a UTC offset
// with zero minutes (+00 vs +00:00), a float in exponent or plain notation
// (1e-06 vs 0.000001), and, in columns typed R, decimals with more or fewer
// trailing zeros (2.50 vs 2.5000000000000000). Column-type letters may be
// any letter, lower case included (query iiI), and "statement err" is read
// as "statement error", as sqllogictest-rs does.
//
// Each top-level file gets its own session (and named sessions) and its own
// $__TEST_DIR__; included files share their includer's. Failures are
// reported as file:line of the record's header line, and a run ends with the
// line "N passed, M failed" (", K skipped" when records were skipped).
package slt
