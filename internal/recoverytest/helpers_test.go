package recoverytest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/server"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/testutil/wiretest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// stmtTimeout bounds every statement: a statement that hangs is a bug
// worth a clear failure rather than a test-binary timeout.
const stmtTimeout = 60 * time.Second

// serverLogger discards the server's log unless RUNNEL_RECOVERY_LOG is set
// (then warnings and errors go to stderr: actor failures, recoveries).
func serverLogger() *slog.Logger {
	if os.Getenv("RUNNEL_RECOVERY_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// testServer is a real Runnel server on a loopback port (server.Open +
// Serve), stopped when the test ends.
type testServer struct {
	srv  *server.Server
	addr string
}

func startServer(t testing.TB, cfgs ...func(*server.Config)) (*testServer, server.Internals) {
	t.Helper()
	cfg := server.Config{
		DataDir:         t.TempDir(),
		BarrierInterval: 50 * time.Millisecond,
		Parallelism:     2,
		Logger:          serverLogger(),
	}
	for _, fn := range cfgs {
		fn(&cfg)
	}
	srv, err := server.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open server: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		closed := make(chan struct{})
		go func() { srv.Close(); <-done; close(closed) }()
		select {
		case <-closed:
		case <-time.After(30 * time.Second):
			t.Errorf("server did not stop within 30s")
		}
	})
	return &testServer{srv: srv, addr: ln.Addr().String()}, srv.Internals()
}

func (s *testServer) url() string {
	return fmt.Sprintf("postgres://root@%s/dev?sslmode=disable", s.addr)
}

// Connect opens a session that is closed when the test ends.
func (s *testServer) Connect(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.url())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// sqlstate is the SQLSTATE of a server error, or "".
func sqlstate(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func execErr(conn *pgx.Conn, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), stmtTimeout)
	defer cancel()
	_, err := conn.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	return err
}

func mustExec(t testing.TB, conn *pgx.Conn, sql string) {
	t.Helper()
	if err := execErr(conn, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// queryText renders rows as the server's text output, "|"-joined, sorted
// (views and tables are sets).
func queryText(conn *pgx.Conn, sql string) ([]string, error) {
	out, err := wiretest.TryQueryText(conn, sql)
	if err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

func mustQuery(t testing.TB, conn *pgx.Conn, sql string) []string {
	t.Helper()
	rows, err := queryText(conn, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return rows
}

// diffRows describes how two sorted row sets differ (at most a few rows
// of each side).
func diffRows(got, want []string) string {
	var missing, extra []string
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j == len(want) || (i < len(got) && got[i] < want[j]):
			extra = append(extra, got[i])
			i++
		case i == len(got) || want[j] < got[i]:
			missing = append(missing, want[j])
			j++
		default:
			i++
			j++
		}
	}
	cut := func(s []string) []string {
		if len(s) > 5 {
			return append(s[:5:5], fmt.Sprintf("... (%d more)", len(s)-5))
		}
		return s
	}
	return fmt.Sprintf("%d rows, want %d; extra %q; missing %q", len(got), len(want), cut(extra), cut(missing))
}

// lifecycle records, in order, the events the test hooks report: actor
// starts and exits (stream.SetActorHook), state-table unregistrations
// (storage.Engine.SetUnregisterHook), and the test's own marks. It tracks
// the live actors of every job so that an unregistration can be checked
// against them when it happens (I3).
type lifecycle struct {
	mu     sync.Mutex
	events []string
	live   map[string]map[stream.ActorID]bool // by job
	// owners maps a state table to the job whose actors may touch it.
	owners map[storage.TableID]string
	// violations are unregistrations of a table while an actor of its
	// job was alive.
	violations []string
	unregs     map[storage.TableID]int // index of the unregister event
}

func newLifecycle() *lifecycle {
	return &lifecycle{live: map[string]map[stream.ActorID]bool{}, owners: map[storage.TableID]string{}, unregs: map[storage.TableID]int{}}
}

// install sets the hooks; they are removed when the test ends.
func (l *lifecycle) install(t testing.TB, in server.Internals) {
	removeActor := stream.SetActorHook(l.actor)
	removeUnreg := in.Store.SetUnregisterHook(l.unregister)
	t.Cleanup(func() { removeActor(); removeUnreg() })
	// Actors running before the hook was installed are unknown to it:
	// seed them from the manager's registry.
	l.mu.Lock()
	for _, a := range in.Actors.Actors() {
		if l.live[a.Job] == nil {
			l.live[a.Job] = map[stream.ActorID]bool{}
		}
		l.live[a.Job][a.ID] = true
	}
	l.mu.Unlock()
}

func (l *lifecycle) actor(ev stream.ActorEvent, id stream.ActorID, job string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.live[job] == nil {
		l.live[job] = map[stream.ActorID]bool{}
	}
	if ev == stream.ActorStarted {
		l.live[job][id] = true
	} else {
		delete(l.live[job], id)
	}
	l.events = append(l.events, fmt.Sprintf("actor %d of %s: %s", id, job, ev))
}

func (l *lifecycle) unregister(ids []storage.TableID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, fmt.Sprintf("unregister %v", ids))
	for _, id := range ids {
		l.unregs[id] = len(l.events) - 1
		job, ok := l.owners[id]
		if !ok {
			continue
		}
		if n := len(l.live[job]); n > 0 {
			l.violations = append(l.violations, fmt.Sprintf("state table %d of %s unregistered while %d of its actors were running (I3)", id, job, n))
		}
	}
}

// own declares that tables belong to job.
func (l *lifecycle) own(job string, ids []storage.TableID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		l.owners[id] = job
	}
}

func (l *lifecycle) mark(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, fmt.Sprintf(format, args...))
}

func (l *lifecycle) liveActors(job string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.live[job])
}

func (l *lifecycle) unregistered(id storage.TableID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.unregs[id]
	return ok
}

func (l *lifecycle) check(t testing.TB) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.violations) > 0 {
		t.Errorf("I3 violated:\n  %s\nevents:\n  %s", strings.Join(l.violations, "\n  "), strings.Join(l.events, "\n  "))
	}
}

func (l *lifecycle) dump() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.events, "\n  ")
}

// newTables returns the state tables registered in after but not before.
func newTables(before, after []storage.TableID) []storage.TableID {
	var out []storage.TableID
	for _, id := range after {
		if !slices.Contains(before, id) {
			out = append(out, id)
		}
	}
	return out
}

var sstLine = regexp.MustCompile(`^\s+(\S+)\s+.*\btables \[([0-9 ]*)\]`)

// objectsHolding lists the objects of the committed version that hold
// data of any of tables (from the operator's version description).
func objectsHolding(t testing.TB, in server.Internals, tables []storage.TableID) []string {
	t.Helper()
	// DescribeVersion reads the metastore outside the engine, so it can
	// meet a delta being written (it then reports the head and the deltas
	// out of step); read again.
	var text string
	var err error
	for range 10 {
		if text, err = storage.DescribeVersion(context.Background(), in.Meta); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("describe version: %v", err)
	}
	var out []string
	for _, line := range strings.Split(text, "\n") {
		m := sstLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, f := range strings.Fields(m[2]) {
			id, _ := strconv.ParseUint(f, 10, 64)
			if slices.Contains(tables, storage.TableID(id)) {
				out = append(out, m[1])
				break
			}
		}
	}
	return out
}

// collectDropped compacts until no SST of the version holds data of
// tables, runs GC, and checks that the objects that held their data are
// deleted and that every object is owned (I1).
func collectDropped(t testing.TB, in server.Internals, tables []storage.TableID, held []string) {
	t.Helper()
	ctx := context.Background()
	for i := 0; ; i++ {
		if len(objectsHolding(t, in, tables)) == 0 {
			break
		}
		if i == 20 {
			t.Fatalf("after %d compactions the version still holds data of dropped tables %v: %v", i, tables, objectsHolding(t, in, tables))
		}
		if _, err := in.Store.Compact(ctx, true); err != nil {
			t.Fatalf("compact: %v", err)
		}
	}
	if _, err := in.Store.RunGC(ctx); err != nil {
		t.Fatalf("gc: %v", err)
	}
	for _, key := range held {
		if _, err := in.Objects.Stat(ctx, key); err == nil {
			t.Errorf("object %s held data of dropped tables %v and still exists after compaction and GC", key, tables)
		}
	}
	rep, err := storage.Check(ctx, in.Objects, in.Meta, time.Hour)
	if err != nil {
		t.Fatalf("storage check: %v", err)
	}
	if !rep.OK() {
		t.Fatalf("storage check: %s", rep.Summary())
	}
}
