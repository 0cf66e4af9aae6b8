package overwindowtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/server"
	owexec "github.com/runneldb/runnel/internal/stream/exec"
	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/types"
)

// logCapture is a slog handler keeping every record as one line of text
// (message and attributes).
type logCapture struct {
	mu    sync.Mutex
	lines []string
	attrs []slog.Attr
}

func (l *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (l *logCapture) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	for _, a := range l.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	l.mu.Lock()
	l.lines = append(l.lines, b.String())
	l.mu.Unlock()
	return nil
}

func (l *logCapture) WithAttrs(as []slog.Attr) slog.Handler {
	l.mu.Lock()
	defer l.mu.Unlock()
	return &logCaptureView{l, append(append([]slog.Attr(nil), l.attrs...), as...)}
}

func (l *logCapture) WithGroup(string) slog.Handler { return l }

// logCaptureView shares its parent's lines with extra attributes.
type logCaptureView struct {
	root  *logCapture
	attrs []slog.Attr
}

func (v *logCaptureView) Enabled(context.Context, slog.Level) bool { return true }
func (v *logCaptureView) Handle(ctx context.Context, r slog.Record) error {
	r.AddAttrs(v.attrs...)
	return v.root.Handle(ctx, r)
}
func (v *logCaptureView) WithAttrs(as []slog.Attr) slog.Handler {
	return &logCaptureView{v.root, append(append([]slog.Attr(nil), v.attrs...), as...)}
}
func (v *logCaptureView) WithGroup(string) slog.Handler { return v }

// find returns the first line containing every one of subs.
func (l *logCapture) find(subs ...string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(line, s)
		}
		if ok {
			return line, true
		}
	}
	return "", false
}

func startLoggedServer(t *testing.T, logs *logCapture) string {
	t.Helper()
	srv, err := server.Open(context.Background(), server.Config{
		DataDir:         t.TempDir(),
		BarrierInterval: 50 * time.Millisecond,
		Parallelism:     2,
		Logger:          slog.New(logs),
	})
	if err != nil {
		t.Fatalf("open server: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return fmt.Sprintf("postgres://root@%s/dev?sslmode=disable", ln.Addr())
}

// TestGhostDeleteStrict plays an upstream that deletes a row the window
// executor never saw (I6) through a running server: the executor's actor
// fails with an error naming the state table, the partition key and the
// row key; recovery rebuilds the view; the server stays up, FLUSH reports
// the write whose epoch was rolled back (40001) and, retried, it lands;
// the view then equals PostgreSQL's answer.
func TestGhostDeleteStrict(t *testing.T) { testGhostDelete(t, true) }

// TestGhostDeleteNonStrict: with ALTER SYSTEM SET
// streaming_strict_consistency = false (before the view is created), the
// same ghost delete is logged with the same context and ignored: no actor
// fails, FLUSH succeeds the first time and the view stays right.
func TestGhostDeleteNonStrict(t *testing.T) { testGhostDelete(t, false) }

func testGhostDelete(t *testing.T, strict bool) {
	logs := &logCapture{}
	pg := connect(t, pgtest.NewDatabase(t))
	rw := connect(t, startLoggedServer(t, logs))
	if !strict {
		exec(t, rw, `ALTER SYSTEM SET streaming_strict_consistency = false`)
	}
	both(t, rw, pg, `CREATE TABLE t (p INT, o INT, v INT, PRIMARY KEY (o))`)
	both(t, rw, pg, `INSERT INTO t SELECT i % 4, i, i % 9 FROM generate_series(1, 200) g(i)`)
	const view = `SELECT p, o, v, sum(v) OVER (PARTITION BY p ORDER BY o) AS s,
	  row_number() OVER (PARTITION BY p ORDER BY o) AS rn,
	  lag(v) OVER (PARTITION BY p ORDER BY o) AS lg FROM t`
	exec(t, rw, `CREATE MATERIALIZED VIEW mv AS `+view)
	exec(t, rw, `FLUSH`)
	check := func(step string) {
		t.Helper()
		compare(t, step, query(t, rw, `SELECT * FROM mv ORDER BY o`), query(t, pg, view+` ORDER BY o`))
	}
	check("before the ghost delete")

	// The next chunk reaching a window executor gets, after its rows, a
	// delete of a row in the same partition with an order key (and pk)
	// nobody inserted.
	var fired atomic.Bool
	var ghostPartition atomic.Int64
	remove := owexec.SetOverWindowInputHook(func(executor string, c *types.Chunk) *types.Chunk {
		if c.Len() == 0 || !fired.CompareAndSwap(false, true) {
			return c
		}
		ghost := append(types.Row(nil), c.Rows[0]...)
		ghostPartition.Store(ghost[0].Int())
		ghost[1] = types.DInt32(-12345)
		out := &types.Chunk{}
		for i := range c.Rows {
			out.Append(c.Ops[i], c.Rows[i])
		}
		out.Append(types.OpDelete, ghost)
		return out
	})
	defer remove()
	exec(t, pg, `INSERT INTO t VALUES (1, 5000, 3)`)
	// Strict: the epoch holding the insert fails to commit (the actor
	// fails at its barrier); the server recovers and FLUSH reports the
	// session's lost write (40001). Insert again until a FLUSH succeeds
	// (the hook fires once).
	deadline := time.Now().Add(60 * time.Second)
	var errs []string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := rw.Exec(ctx, `INSERT INTO t VALUES (1, 5000, 3)`, pgx.QueryExecModeSimpleProtocol)
		var pe *pgconn.PgError
		if err == nil || (errors.As(err, &pe) && pe.Code == "23505") {
			_, err = rw.Exec(ctx, `FLUSH`, pgx.QueryExecModeSimpleProtocol)
		}
		cancel()
		if err == nil {
			break
		}
		errs = append(errs, err.Error())
		if time.Now().After(deadline) {
			t.Fatalf("the insert never landed after the ghost delete: %v", errs)
		}
	}
	if !fired.Load() {
		t.Fatal("the ghost delete was never injected")
	}
	t.Logf("errors before the insert landed: %v", errs)
	what := "actor failed"
	if !strict {
		what = "tolerating inconsistent input"
		if len(errs) > 0 {
			t.Errorf("non-strict: the ghost delete made statements fail: %v", errs)
		}
		if line, ok := logs.find("actor failed"); ok {
			t.Errorf("non-strict: an actor failed: %s", line)
		}
	} else if len(errs) == 0 {
		t.Errorf("strict: FLUSH did not report the write lost to the recovery")
	}
	line, ok := logs.find(what, "inconsistent stream", "delete of a row the partition does not hold")
	if !ok {
		t.Fatalf("no %q logged for the ghost delete", what)
	}
	t.Logf("logged: %s", line)
	for _, want := range []string{
		"mv: OverWindow (state table",                        // the state table (named after its view)
		fmt.Sprintf("partition (%d)", ghostPartition.Load()), // the partition key
		"key (1, -12345",                                     // the row key
	} {
		if !strings.Contains(line, want) {
			t.Errorf("the log line %q does not name %q", line, want)
		}
	}
	if _, ok := logs.find("recover"); ok != strict {
		t.Errorf("strict %v: recovery logged: %v", strict, ok)
	}
	// The server is up and the view right, and keeps being maintained.
	check("after the ghost delete")
	both(t, rw, pg, `UPDATE t SET p = 2, v = 0 WHERE o = 5000`)
	both(t, rw, pg, `DELETE FROM t WHERE o IN (1, 2, 3, 4)`)
	exec(t, rw, `FLUSH`)
	check("after more changes")
}
