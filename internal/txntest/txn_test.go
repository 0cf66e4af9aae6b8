package txntest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const (
	numSessions = 3
	// blockedAfter: a PostgreSQL statement not done by then waits for a
	// lock; the schedule goes on with the other sessions.
	blockedAfter = 150 * time.Millisecond
	stmtTimeout  = 30 * time.Second
)

func envInt(t *testing.T, name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s=%q: %v", name, v, err)
		}
		return n
	}
	return def
}

// outcome is a statement's answer as text: its rows or tag, or its SQLSTATE.
type outcome struct {
	text string
	code string
}

func (o outcome) String() string {
	if o.code != "" {
		return "ERROR " + o.code
	}
	return o.text
}

func run(conn *pgx.Conn, sql string) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), stmtTimeout)
	defer cancel()
	rows, err := conn.Query(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return errOutcome(err)
	}
	var out []string
	for rows.Next() {
		var parts []string
		for _, v := range rows.RawValues() {
			if v == nil {
				parts = append(parts, "NULL")
			} else {
				parts = append(parts, string(v))
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return errOutcome(err)
	}
	return outcome{text: rows.CommandTag().String() + " " + strings.Join(out, ",")}
}

func errOutcome(err error) outcome {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return outcome{code: pe.Code}
	}
	return outcome{code: "non-SQL error: " + err.Error()}
}

// session is one client, connected to both systems.
type session struct {
	id     int
	rw, pg *pgx.Conn
	inTx   bool
	// doomed: PostgreSQL failed this block at a statement on a write
	// conflict that Runnel reports at COMMIT; Runnel's later statements
	// of the block are not compared and its COMMIT must fail with 40001.
	doomed   string
	rwFailed bool         // a statement of a doomed block failed in Runnel too
	pending  *pendingStmt // sent to PostgreSQL, not finished yet
	stmts    int          // statements of the open block so far
}

type pendingStmt struct {
	sql  string
	done chan outcome
}

// schedule is one seeded run.
type schedule struct {
	t        *testing.T
	rng      *rand.Rand
	sessions []*session
	nextKey  int
	deleted  map[int]bool // keys ever targeted by a DELETE: never inserted again
	log      []string
	commits  int
	aborts   int
	doomed   int
}

func (s *schedule) logf(format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf(format, args...))
}

func (s *schedule) fail(format string, args ...any) {
	s.t.Helper()
	tail := s.log
	if len(tail) > 60 {
		tail = tail[len(tail)-60:]
	}
	s.t.Fatalf("%s\nlast statements:\n%s", fmt.Sprintf(format, args...), strings.Join(tail, "\n"))
}

// TestConcurrentBlocksDifferential runs RUNNEL_TXN_CASES seeded schedules
// (default 4) of RUNNEL_TXN_STEPS statements (default 80).
func TestConcurrentBlocksDifferential(t *testing.T) {
	cases := envInt(t, "RUNNEL_TXN_CASES", 4)
	steps := envInt(t, "RUNNEL_TXN_STEPS", 80)
	base := int64(envInt(t, "RUNNEL_TEST_SEED", int(time.Now().UnixNano()%1e9)))
	rw := servertest.Start(t, servertest.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	total := schedule{}
	for c := 0; c < cases; c++ {
		seed := base + int64(c)
		ok := t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			t.Logf("seed %d (RUNNEL_TEST_SEED=%d RUNNEL_TXN_CASES=1 replays it)", seed, seed)
			s := runSchedule(t, rw, seed, steps)
			total.commits += s.commits
			total.aborts += s.aborts
			total.doomed += s.doomed
		})
		if !ok {
			break
		}
	}
	t.Logf("%d blocks committed, %d rolled back or failed, %d failed at PostgreSQL's statement and at Runnel's COMMIT", total.commits, total.aborts, total.doomed)
}

func runSchedule(t *testing.T, rw *servertest.Server, seed int64, steps int) *schedule {
	pgURL := pgtest.NewDatabase(t)
	db := fmt.Sprintf("txn%d", seed)
	admin := servertest.Connect(t, rw.URL())
	servertest.Exec(t, admin, "CREATE DATABASE "+db)
	rwURL := strings.Replace(rw.URL(), "/dev?", "/"+db+"?", 1)
	s := &schedule{t: t, rng: rand.New(rand.NewSource(seed)), nextKey: 100, deleted: map[int]bool{}}
	setup := []string{
		"CREATE TABLE t1 (k INT PRIMARY KEY, v INT)",
		"CREATE TABLE t2 (k INT PRIMARY KEY, v INT)",
		"INSERT INTO t1 SELECT g, g * 10 FROM generate_series(1, 6) g",
		"INSERT INTO t2 SELECT g, g * 100 FROM generate_series(1, 6) g",
	}
	for i := 0; i < numSessions; i++ {
		ss := &session{id: i, rw: servertest.Connect(t, rwURL), pg: servertest.Connect(t, pgURL)}
		// Runnel: COMMIT returns once durable and visible, as in PostgreSQL.
		servertest.Exec(t, ss.rw, "SET implicit_flush = on")
		servertest.Exec(t, ss.pg, "SET deadlock_timeout = '100ms'")
		s.sessions = append(s.sessions, ss)
	}
	for _, q := range setup {
		servertest.Exec(t, s.sessions[0].rw, q)
		servertest.Exec(t, s.sessions[0].pg, q)
	}
	for step := 0; step < steps; step++ {
		s.settle()
		ss := s.pickReady()
		if ss == nil {
			time.Sleep(10 * time.Millisecond)
			step--
			continue
		}
		s.do(ss, s.next(ss))
	}
	// End every block: commit the ready ones until none is open.
	for deadline := time.Now().Add(time.Minute); ; {
		s.settle()
		open := false
		for _, ss := range s.sessions {
			if ss.inTx || ss.pending != nil {
				open = true
				if ss.pending == nil {
					s.do(ss, "COMMIT")
				}
			}
		}
		if !open {
			break
		}
		if time.Now().After(deadline) {
			s.fail("blocks did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, q := range []string{"SELECT k, v FROM t1 ORDER BY k", "SELECT k, v FROM t2 ORDER BY k"} {
		a, b := run(s.sessions[0].rw, q), run(s.sessions[0].pg, q)
		if a != b {
			s.fail("final %s:\nRunnel:     %v\nPostgreSQL: %v", q, a, b)
		}
	}
	return s
}

// pickReady returns a random session with no statement waiting in
// PostgreSQL, or nil.
func (s *schedule) pickReady() *session {
	var ready []*session
	for _, ss := range s.sessions {
		if ss.pending == nil {
			ready = append(ready, ss)
		}
	}
	if len(ready) == 0 {
		return nil
	}
	return ready[s.rng.Intn(len(ready))]
}

// settle finishes the statements PostgreSQL has answered meanwhile.
func (s *schedule) settle() {
	for _, ss := range s.sessions {
		if p := ss.pending; p != nil {
			select {
			case pg := <-p.done:
				ss.pending = nil
				s.finish(ss, p.sql, pg)
			default:
			}
		}
	}
}

// do sends sql to PostgreSQL; if it finishes promptly it runs on Runnel
// at once, else when PostgreSQL has answered (settle).
func (s *schedule) do(ss *session, sql string) {
	p := &pendingStmt{sql: sql, done: make(chan outcome, 1)}
	go func() { p.done <- run(ss.pg, sql) }()
	select {
	case pg := <-p.done:
		s.finish(ss, sql, pg)
	case <-time.After(blockedAfter):
		s.logf("s%d: %s -- waits in PostgreSQL", ss.id, sql)
		ss.pending = p
	}
}

func isConflict(code string) bool { return code == "40001" || code == "40P01" || code == "23505" }

// finish runs sql on Runnel and compares.
func (s *schedule) finish(ss *session, sql string, pg outcome) {
	up := strings.ToUpper(sql)
	isBegin, isCommit, isRollback := strings.HasPrefix(up, "BEGIN"), up == "COMMIT", up == "ROLLBACK"
	if ss.doomed != "" && !isCommit && !isRollback {
		rw := run(ss.rw, sql)
		s.logf("s%d: %s -- Runnel %v (block failed in PostgreSQL: %s)", ss.id, sql, rw, ss.doomed)
		if rw.code != "" {
			ss.rwFailed = true // Runnel's block is aborted too: its COMMIT answers ROLLBACK
		}
		return
	}
	if ss.doomed != "" && isCommit {
		rw := run(ss.rw, sql)
		s.logf("s%d: COMMIT -- Runnel %v, PostgreSQL %v", ss.id, rw, pg)
		if rw.code != "40001" && !(ss.rwFailed && strings.HasPrefix(rw.text, "ROLLBACK")) {
			s.fail("s%d: COMMIT of a block PostgreSQL failed with %s: Runnel %v, want ERROR 40001", ss.id, ss.doomed, rw)
		}
		ss.inTx, ss.doomed, ss.rwFailed = false, "", false
		s.doomed++
		s.aborts++
		return
	}
	rw := run(ss.rw, sql)
	s.logf("s%d: %s -- Runnel %v, PostgreSQL %v", ss.id, sql, rw, pg)
	switch {
	case rw == pg:
	case ss.inTx && rw.code == "" && isConflict(pg.code) && !isBegin:
		// PostgreSQL fails the later writer at its statement.
		if pg.code == "40P01" {
			// A deadlock victim: PostgreSQL chose it; roll it back on both.
			run(ss.pg, "ROLLBACK")
			r := run(ss.rw, "ROLLBACK")
			s.logf("s%d: ROLLBACK (deadlock victim) -- Runnel %v", ss.id, r)
			ss.inTx = false
			s.aborts++
			return
		}
		ss.doomed = pg.code
		return
	default:
		s.fail("s%d: %s:\nRunnel:     %v\nPostgreSQL: %v", ss.id, sql, rw, pg)
	}
	switch {
	case isBegin:
		ss.inTx, ss.stmts = true, 0
	case isCommit || isRollback:
		ss.doomed, ss.rwFailed = "", false
		if ss.inTx {
			if strings.HasPrefix(rw.text, "COMMIT") {
				s.commits++
			} else {
				s.aborts++
			}
		}
		ss.inTx = false
	}
}

// next generates the session's next statement.
func (s *schedule) next(ss *session) string {
	r := s.rng
	tbl := []string{"t1", "t2"}[r.Intn(2)]
	key := func() int {
		if r.Intn(4) == 0 {
			return 1 + r.Intn(8) // sometimes a key that is not there
		}
		return 1 + r.Intn(6)
	}
	if !ss.inTx {
		switch r.Intn(10) {
		case 0:
			return fmt.Sprintf("UPDATE %s SET v = v + %d WHERE k = %d", tbl, 1+r.Intn(9), key())
		case 1:
			return fmt.Sprintf("SELECT k, v FROM %s ORDER BY k", tbl)
		case 2:
			return fmt.Sprintf("INSERT INTO %s VALUES (%d, 1)", tbl, s.insertKey())
		}
		return "BEGIN ISOLATION LEVEL REPEATABLE READ"
	}
	ss.stmts++
	if ss.stmts == 1 {
		// The snapshot: both systems take it at the block's first statement.
		return fmt.Sprintf("SELECT count(*), sum(v) FROM %s", tbl)
	}
	switch n := r.Intn(100); {
	case n < 22:
		return fmt.Sprintf("UPDATE %s SET v = v + %d WHERE k = %d", tbl, 1+r.Intn(9), key())
	case n < 27:
		return fmt.Sprintf("UPDATE %s SET v = v * 2 WHERE v %% 3 = %d", tbl, r.Intn(3))
	case n < 37:
		return fmt.Sprintf("INSERT INTO %s VALUES (%d, %d)", tbl, s.insertKey(), r.Intn(50))
	case n < 40:
		// An initial key, never deleted: a duplicate in both systems.
		if k := 1 + r.Intn(3); !s.deleted[k] {
			return fmt.Sprintf("INSERT INTO %s VALUES (%d, 0)", tbl, k)
		}
		return fmt.Sprintf("INSERT INTO %s VALUES (%d, 0)", tbl, s.insertKey())
	case n < 46:
		k := key()
		s.deleted[k] = true
		return fmt.Sprintf("DELETE FROM %s WHERE k = %d", tbl, k)
	case n < 50:
		other := map[string]string{"t1": "t2", "t2": "t1"}[tbl]
		return fmt.Sprintf("UPDATE %s SET v = v + (SELECT coalesce(sum(v), 0) %% 7 FROM %s) WHERE k = %d", tbl, other, key())
	case n < 65:
		return fmt.Sprintf("SELECT k, v FROM %s ORDER BY k", tbl)
	case n < 70:
		return "SELECT (SELECT sum(v) FROM t1) + (SELECT sum(v) FROM t2)"
	case n < 73:
		return fmt.Sprintf("SELECT v / (k - %d) FROM %s WHERE k = %d", key(), tbl, key())
	case n < 85:
		return "COMMIT"
	}
	return "ROLLBACK"
}

// insertKey returns a key never deleted: usually a fresh one, sometimes
// the last fresh one again (a duplicate across sessions).
func (s *schedule) insertKey() int {
	if s.rng.Intn(3) == 0 && s.nextKey > 100 {
		return s.nextKey - 1
	}
	s.nextKey++
	return s.nextKey - 1
}
