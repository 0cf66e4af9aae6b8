package frontend

// Session introspection and control: the registry of live sessions,
// pg_stat_activity, pg_backend_pid / pg_cancel_backend /
// pg_terminate_backend, and RisingWave's SHOW PROCESSLIST and KILL.
//
// A session is registered under the process id pgwire gave its connection
// (the one in BackendKeyData, StartupParams.Backend) from NewSession until
// Close, which pgwire calls however the connection ends. What the
// connection runs now (state, query, its times) is pgwire's to know — a
// request is active until its last row is sent, after Execute returned —
// so an entry reads it through the Backend; signals go through it too,
// so pg_cancel_backend is the same cancellation as a client's cancel
// request. Sessions that do not come over pgwire (SQL over HTTP, the MySQL
// protocol) have no Backend and are not listed.

import (
	"context"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// sessionRegistry holds the live sessions by process id.
type sessionRegistry struct {
	mu    sync.Mutex
	byPID map[uint32]*session
	// gone is closed and replaced whenever a session leaves (waits of
	// pg_terminate_backend with a timeout).
	gone chan struct{}
}

func (r *sessionRegistry) add(ss *session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byPID == nil {
		r.byPID = map[uint32]*session{}
	}
	r.byPID[ss.backend.PID()] = ss
}

func (r *sessionRegistry) remove(ss *session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pid := ss.backend.PID()
	if r.byPID[pid] != ss {
		return
	}
	delete(r.byPID, pid)
	if r.gone != nil {
		close(r.gone)
		r.gone = nil
	}
}

// get returns the session with pid, or nil; with it, a channel closed once
// some session leaves after this call.
func (r *sessionRegistry) get(pid int64) (*session, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone == nil {
		r.gone = make(chan struct{})
	}
	if pid <= 0 || pid > int64(^uint32(0)) {
		return nil, r.gone
	}
	return r.byPID[uint32(pid)], r.gone
}

// list returns the live sessions by pid.
func (r *sessionRegistry) list() []*session {
	r.mu.Lock()
	out := make([]*session, 0, len(r.byPID))
	for _, ss := range r.byPID {
		out = append(out, ss)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].backend.PID() < out[j].backend.PID() })
	return out
}

// pid is pg_backend_pid(): the process id of the session's connection,
// 0 for a session without one.
func (ss *session) pid() int64 {
	if ss.backend == nil {
		return 0
	}
	return int64(ss.backend.PID())
}

// seesActivityOf tells whether the session may see what other runs: a
// superuser sees every session, others only their own user's
// (PostgreSQL's rule without its pg_read_all_stats role).
func (ss *session) seesActivityOf(other *session) bool {
	return ss.user.Superuser || other.user.Name == ss.user.Name
}

// signalKind is what a signal does, for PostgreSQL's messages.
type signalKind int

const (
	signalCancel signalKind = iota
	signalTerminate
)

// signalTarget finds the session pid that ss wants to signal and checks
// that ss may: a superuser signals anyone, others only sessions of their
// own user and never a superuser's (42501 with PostgreSQL's messages).
// A pid that is no session's is nil, without an error.
func (ss *session) signalTarget(pid int64, kind signalKind) (*session, <-chan struct{}, error) {
	target, gone := ss.s.sessions.get(pid)
	if target == nil {
		return nil, gone, nil
	}
	if ss.user.Superuser {
		return target, gone, nil
	}
	if target.user.Superuser {
		if kind == signalCancel {
			return nil, gone, sqlerr.New(sqlerr.InsufficientPrivilege, "must be a superuser to cancel superuser query")
		}
		return nil, gone, sqlerr.New(sqlerr.InsufficientPrivilege, "must be a superuser to terminate superuser process")
	}
	if target.user.Name != ss.user.Name {
		if kind == signalCancel {
			return nil, gone, sqlerr.New(sqlerr.InsufficientPrivilege, "must be a member of the role whose query is being canceled or member of pg_signal_backend")
		}
		return nil, gone, sqlerr.New(sqlerr.InsufficientPrivilege, "must be a member of the role whose process is being terminated or member of pg_signal_backend")
	}
	return target, gone, nil
}

// notProcess warns, as PostgreSQL does, that pid is no session's (when
// err, the refusal, is nil).
func (ss *session) notProcess(pid int64, err error) {
	if err == nil {
		ss.client.Notice(pgwire.Notice{Severity: "WARNING", Code: "01000", Message: fmt.Sprintf("PID %d is not a PostgreSQL server process", pid)})
	}
}

// cancelBackend is pg_cancel_backend(pid): the target's running statement
// fails with 57014, through pgwire's cancellation of its request.
func (ss *session) cancelBackend(pid int64) (bool, error) {
	target, _, err := ss.signalTarget(pid, signalCancel)
	if target == nil || err != nil {
		ss.notProcess(pid, err)
		return false, err
	}
	target.backend.Cancel()
	return true, nil
}

// terminateBackend is pg_terminate_backend(pid [, timeout]): the target's
// connection ends with FATAL 57P01. With a positive timeout (milliseconds)
// it waits for the session to be gone and returns false with a WARNING
// when it is not by then, as PostgreSQL does.
func (ss *session) terminateBackend(ctx context.Context, pid, timeoutMS int64) (bool, error) {
	if timeoutMS < 0 {
		return false, sqlerr.New(sqlerr.InvalidParameterValue, `"timeout" must not be negative`)
	}
	target, gone, err := ss.signalTarget(pid, signalTerminate)
	if target == nil || err != nil {
		ss.notProcess(pid, err)
		return false, err
	}
	target.backend.Terminate()
	if timeoutMS == 0 || target == ss {
		return true, nil
	}
	deadline := time.NewTimer(time.Duration(timeoutMS) * time.Millisecond)
	defer deadline.Stop()
	for {
		select {
		case <-gone:
		case <-deadline.C:
			ss.client.Notice(pgwire.Notice{Severity: "WARNING", Code: "01000",
				Message: fmt.Sprintf("backend with PID %d did not terminate within %d milliseconds", pid, timeoutMS)})
			return false, nil
		case <-ctx.Done():
			return false, context.Cause(ctx)
		}
		var now *session
		now, gone = ss.s.sessions.get(pid)
		if now != target {
			return true, nil
		}
	}
}

// activityRows are pg_stat_activity's: one row per live session. A
// non-superuser sees only the identity of other users' sessions, with
// '<insufficient privilege>' as their query, as PostgreSQL shows them.
func activityRows(sc *sysCtx) [][]any {
	var out [][]any
	for _, other := range sc.ss.s.sessions.list() {
		row := []any{userOID(other.db.ID), other.db.Name, other.pid(), nil, userOID(other.user.ID), other.user.Name,
			other.setting("application_name")}
		if !sc.ss.seesActivityOf(other) {
			// client_addr .. state, backend_xid, backend_xmin, query_id,
			// query, backend_type.
			row = append(row, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, "<insufficient privilege>", nil)
			out = append(out, row)
			continue
		}
		a := other.backend.Activity()
		var addr, port any
		switch ra := other.remote.(type) {
		case *net.TCPAddr:
			addr, port = ra.IP.String(), int64(ra.Port)
		case *net.UnixAddr:
			port = int64(-1) // as PostgreSQL shows a Unix-socket client
		}
		var waitType, wait any
		if a.State != "active" {
			waitType, wait = "Client", "ClientRead"
		}
		row = append(row, addr, nil, port, other.started, timeOrNil(a.XactStart), timeOrNil(a.QueryStart),
			timeOrNil(a.StateChange), waitType, wait, a.State, nil, nil, nil, a.Query, "client backend")
		out = append(out, row)
	}
	return out
}

func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// showProcessListColumns are RisingWave's SHOW PROCESSLIST's (without its
// Worker Id: Runnel has one frontend).
var showProcessListColumns = []pgwire.Column{{Name: "Id", Type: types.Varchar}, {Name: "User", Type: types.Varchar},
	{Name: "Host", Type: types.Varchar}, {Name: "Database", Type: types.Varchar}, {Name: "Time", Type: types.Varchar},
	{Name: "Info", Type: types.Varchar}}

// showProcessList is RisingWave's SHOW PROCESSLIST: every live session,
// with the running time ("12ms") and text of the statement it runs now
// (NULL when idle). Another user's statement shows to a non-superuser as
// '<insufficient privilege>', as pg_stat_activity does.
func (ss *session) showProcessList() pgwire.Result {
	now := time.Now()
	var rows []types.Row
	for _, other := range ss.s.sessions.list() {
		host := ""
		if other.remote != nil {
			host = other.remote.String()
		}
		row := types.Row{types.DVarchar(fmt.Sprint(other.pid())), types.DVarchar(other.user.Name), types.DVarchar(host),
			types.DVarchar(other.db.Name), {}, {}}
		if a := other.backend.Activity(); a.State == "active" {
			row[4] = types.DVarchar(fmt.Sprintf("%dms", now.Sub(a.QueryStart).Milliseconds()))
			info := a.Query
			if !ss.seesActivityOf(other) {
				info = "<insufficient privilege>"
			}
			row[5] = types.DVarchar(info)
		}
		rows = append(rows, row)
	}
	return pgwire.Result{Columns: showProcessListColumns, Rows: pgwire.SliceRows(rows), Tag: "SHOW"}
}

// kill is RisingWave's KILL process_id: it cancels the statement that
// session runs, as pg_cancel_backend does (same rights); a process id that
// is no session's is an error.
func (ss *session) kill(pid int64) (pgwire.Result, error) {
	target, _, err := ss.signalTarget(pid, signalCancel)
	if err != nil {
		return pgwire.Result{}, err
	}
	if target == nil {
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.UndefinedObject, "session not found: no process with id %d", pid)
	}
	target.backend.Cancel()
	return pgwire.Result{Tag: "KILL"}, nil
}
