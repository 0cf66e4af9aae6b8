package pgwire

import (
	"sort"
	"sync/atomic"
	"time"
)

// SessionInfo describes one connection for operators (the dashboard's
// sessions page): who, from where, and what it runs now.
type SessionInfo struct {
	PID         uint32
	User        string
	Database    string
	Application string
	Remote      string
	Connected   time.Time
	// State is "active" while a request runs, else "idle".
	State string
	// Query is the SQL text of the running request (or of the last one,
	// when idle); QueryStart when it started.
	Query      string
	QueryStart time.Time
}

// activity is a connection's current (or last) request. It is replaced,
// never modified, so readers on other goroutines load it without a lock.
type activity struct {
	query  string
	start  time.Time
	active bool
	// end is when the connection last became idle (the end of its last
	// request, or of startup).
	end time.Time
	// tx is the session's transaction status as last reported in
	// ReadyForQuery; xactStart the start of the request that opened the
	// current transaction block (zero outside one).
	tx        TxStatus
	xactStart time.Time
}

// maxActivityQuery bounds the query text kept per connection.
const maxActivityQuery = 4096

func (c *conn) setActivity(query string) time.Time {
	if len(query) > maxActivityQuery {
		query = query[:maxActivityQuery]
	}
	now := time.Now()
	a := &activity{query: query, start: now, active: true, tx: TxIdle}
	if prev := c.act.Load(); prev != nil {
		a.tx, a.xactStart = prev.tx, prev.xactStart
	}
	c.act.Store(a)
	return now
}

func (c *conn) endActivity() {
	if a := c.act.Load(); a != nil && a.active {
		n := *a
		n.active, n.end = false, time.Now()
		c.act.Store(&n)
	}
}

// noteTxStatus records the transaction status the connection reports in
// ReadyForQuery (see Backend.Activity). A block opened by the last request
// started when that request did.
func (c *conn) noteTxStatus(st TxStatus) {
	a := c.act.Load()
	if a == nil {
		c.act.Store(&activity{end: time.Now(), tx: st})
		return
	}
	if a.active || a.tx == st {
		return
	}
	n := *a
	n.tx = st
	switch {
	case st == TxIdle:
		n.xactStart = time.Time{}
	case a.tx == TxIdle:
		n.xactStart = a.start
		if n.xactStart.IsZero() {
			n.xactStart = a.end
		}
	}
	c.act.Store(&n)
}

// connInfo is what startup learnt about the connection.
type connInfo struct {
	user, database, app, remote string
	connected                   time.Time
}

// Sessions lists the connections that completed startup, by pid.
func (s *Server) Sessions() []SessionInfo {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.byPID))
	for _, c := range s.byPID {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	out := make([]SessionInfo, 0, len(conns))
	for _, c := range conns {
		info := c.info.Load()
		if info == nil {
			continue // still starting up
		}
		si := SessionInfo{PID: c.pid, User: info.user, Database: info.database, Application: info.app, Remote: info.remote,
			Connected: info.connected, State: "idle"}
		if app := c.app.Load(); app != nil {
			si.Application = *app
		}
		if a := c.act.Load(); a != nil {
			si.Query, si.QueryStart = a.query, a.start
			if a.active {
				si.State = "active"
			}
		}
		out = append(out, si)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// CancelBackend cancels the running statement of the connection with pid
// (57014, as a client's cancel request would), for an operator; it reports
// whether such a connection exists.
func (s *Server) CancelBackend(pid uint32) bool {
	s.mu.Lock()
	c := s.byPID[pid]
	s.mu.Unlock()
	if c == nil {
		return false
	}
	c.cancelStatement(errQueryCanceled)
	return true
}

// connActivity holds the fields conn keeps for Sessions and Backend.
type connActivity struct {
	info atomic.Pointer[connInfo]
	act  atomic.Pointer[activity]
	// app is the application_name last reported to the client (SET
	// application_name changes it); nil until then.
	app atomic.Pointer[string]
	// terminated is set by Backend.Terminate: the connection ends with
	// FATAL 57P01 at its next chance.
	terminated atomic.Bool
}

// Backend is a connection's handle for the SQL layer's view of other
// sessions (pg_stat_activity, pg_cancel_backend, pg_terminate_backend):
// its process id, what it runs now, and the two signals PostgreSQL's
// functions send. NewSession gets it in StartupParams. Its methods are
// safe on any goroutine.
type Backend interface {
	// PID is the process id the client got in BackendKeyData.
	PID() uint32
	// Activity is what the connection does now.
	Activity() Activity
	// Cancel cancels the running request with 57014 "canceling statement
	// due to user request", as a CancelRequest with the right key does;
	// an idle connection is not affected.
	Cancel()
	// Terminate ends the connection with FATAL 57P01 "terminating
	// connection due to administrator command": a running request is
	// cancelled, an idle connection is woken.
	Terminate()
}

// Activity is a connection's state as pg_stat_activity shows it.
type Activity struct {
	// State is "active" while a request runs, else "idle", "idle in
	// transaction" or "idle in transaction (aborted)" by the transaction
	// status the connection last reported in ReadyForQuery.
	State string
	// Query is the text of the running request, or of the last one when
	// idle ("" before the first).
	Query string
	// QueryStart is when that request started, StateChange when State
	// last changed, XactStart when the current transaction started (the
	// request that opened the block, or the running request outside one).
	// Zero: none.
	QueryStart, StateChange, XactStart time.Time
}

// backend is conn's Backend.
type backend conn

func (b *backend) PID() uint32 { return b.pid }

func (b *backend) Activity() Activity {
	a := b.act.Load()
	if a == nil {
		var connected time.Time
		if info := b.info.Load(); info != nil {
			connected = info.connected
		}
		return Activity{State: "idle", StateChange: connected}
	}
	out := Activity{Query: a.query, QueryStart: a.start, XactStart: a.xactStart}
	if a.active {
		out.State, out.StateChange = "active", a.start
		if out.XactStart.IsZero() {
			out.XactStart = a.start
		}
		return out
	}
	out.StateChange = a.end
	switch a.tx {
	case TxActive:
		out.State = "idle in transaction"
	case TxFailed:
		out.State = "idle in transaction (aborted)"
	default:
		out.State = "idle"
	}
	return out
}

func (b *backend) Cancel() { (*conn)(b).cancelStatement(errQueryCanceled) }

func (b *backend) Terminate() { (*conn)(b).terminate() }
