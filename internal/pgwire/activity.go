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
}

// maxActivityQuery bounds the query text kept per connection.
const maxActivityQuery = 4096

func (c *conn) setActivity(query string) time.Time {
	if len(query) > maxActivityQuery {
		query = query[:maxActivityQuery]
	}
	now := time.Now()
	c.act.Store(&activity{query: query, start: now, active: true})
	return now
}

func (c *conn) endActivity() {
	if a := c.act.Load(); a != nil && a.active {
		c.act.Store(&activity{query: a.query, start: a.start})
	}
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

// connActivity holds the fields conn keeps for Sessions.
type connActivity struct {
	info atomic.Pointer[connInfo]
	act  atomic.Pointer[activity]
}
