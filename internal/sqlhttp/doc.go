// Package sqlhttp serves SQL over HTTP at GreptimeDB's path on the HTTP
// listener: GET or POST /v1/sql with the statements in the sql parameter
// (query string or form field) and db naming the schema (GreptimeDB's
// database) of Runnel's dev database, default public. The answer is
// GreptimeDB's JSON shape:
//
//	{"output": [{"records": {"schema": {"column_schemas": [{"name": "host", "data_type": "String"}, ...]},
//	                         "rows": [["a", 1700000000000000, 0.5]], "total_rows": 1}},
//	            {"affectedrows": 2}],
//	 "execution_time_ms": 3}
//
// one output per statement, in order. An error answers 400 (the request's
// fault) or 500 (an internal error) with {"code": <GreptimeDB status
// code>, "sqlstate": "42P01", "error": "...", "execution_time_ms": n};
// statements before the failing one have run, as over pgwire's simple
// protocol.
//
// It speaks to the same pgwire.Engine as pgwire and mysqlwire: each
// request is one engine session (so implicit commit and FLUSH behave as in
// SQL), closed at the end. Authentication follows pgwire's rules: HTTP
// Basic credentials name the user (root without them); a user with a
// password must give it, one without is trusted from loopback only.
//
// I9: the request body is bounded (maxBody), and the answer too
// (maxResponse): a larger result fails with 54000 rather than growing the
// process; a client that goes away cancels its statement.
package sqlhttp
