// Package httpapi is Runnel's HTTP listener (--http-listen, default
// 127.0.0.1:5691): Prometheus metrics at /metrics, JSON APIs under /api/,
// and a dashboard of plain HTML, CSS and vanilla JavaScript embedded in
// the binary (static/, //go:embed; nothing is built or fetched at run
// time).
//
// Like pgwire, it knows nothing of SQL or storage: it asks a Backend,
// which the server implements (server/observe_api.go) from the same state
// the rw_catalog relations read, so that the dashboard's numbers equal
// what SQL returns. The recorded series live in package obs; the server
// adds a scrape-time collector of its own state.
//
// Safety: every API call runs under a timeout and answers JSON; the one
// call that changes something (POST /api/sessions/cancel, cancelling a
// session's statement as a client's cancel request would) requires the
// X-Runnel-Request header, which a cross-site form cannot send, so a web
// page the operator visits cannot cancel statements through the
// listener. The listener binds loopback by default; it has no
// authentication (bind it to a trusted network only).
//
// This package guards no storage invariant. I9 applies: no request can
// end the process (net/http recovers a handler's panic; inputs are parsed
// as numbers or rejected with 400).
package httpapi
