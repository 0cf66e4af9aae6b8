// Package sql is Runnel's SQL front end: it turns statement text into
// something the session layer can execute. Sub-packages do the work:
//
//	parser/  split + parse (pg_query_go, plus FLUSH, SHOW TABLES, ...)
//	binder/  names and types -> logical plans and bound DDL/DML
//	plan/    the logical plan, shared by batch and streaming planning
//
// Entry points for the session layer (pgwire's simple and extended query
// protocols):
//
//	sts, err := parser.Parse(text)                   // one or more statements
//	p, err := sql.Prepare(cat, st, paramTypes)       // bind one statement
//	p.Kind                                           // what it is (Query, Insert, CreateTable, ...)
//	p.ParamTypes, p.Columns                          // Describe: $n types, result columns
//	it, err := p.Execute(ctx, env, params)           // run a query (Kind == Query/Explain)
//	p.Bound                                          // for everything else: a bound statement
//	                                                 // struct from binder (binder.CreateTable,
//	                                                 // binder.Insert, ...) that the lead executes
//
// Runnel-only statements come back as *binder.Runnel wrapping the parser's
// struct (parser.Flush, parser.ShowObjects, parser.Describe, ...), except
// CREATE SOURCE and RisingWave's CREATE TABLE clauses (WATERMARK FOR,
// APPEND ONLY, FORMAT/ENCODE), which bind into *binder.CreateTable.
//
// DML contract (see binder/dml.go): Insert.Source yields complete rows in
// catalog column order (defaults filled, assignment casts applied, NOT NULL
// checked when rows are produced; hidden _row_id NULL for the write path
// to assign); Update.Plan yields old row ++ new row; Delete.Plan yields old
// rows; RETURNING expressions are bound against one stored row.
//
// Parameter types: the client's declared types win; unspecified ones are
// inferred from context (comparison with a typed operand, assignment
// target, CAST) and default to text, as PostgreSQL does.
//
// Errors are *sqlerr.Error with PostgreSQL's SQLSTATE and, where known, the
// character position in the statement text.
//
// Invariants: see batch (I4, I5); this package adds none of its own.
package sql
