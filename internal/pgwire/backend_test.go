package pgwire

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The Backend handle NewSession gets: the pid of BackendKeyData, the
// connection's state as pg_stat_activity shows it, and the cancel and
// terminate signals (pg_cancel_backend, pg_terminate_backend).
func TestBackendActivityAndSignals(t *testing.T) {
	eng := newFakeEngine()
	eng.sleeping = make(chan struct{}, 1)
	eng.backends = make(chan Backend, 3)
	ts := startServer(t, DefaultConfig(), eng)
	ctx := testCtx(t)
	simple := pgx.QueryExecModeSimpleProtocol

	c := ts.connect(t, "")
	b := <-eng.backends
	if b == nil || b.PID() != c.PgConn().PID() {
		t.Fatalf("backend pid = %v; BackendKeyData pid %d", b, c.PgConn().PID())
	}
	a := b.Activity()
	if a.State != "idle" || a.Query != "" || !a.QueryStart.IsZero() || a.StateChange.IsZero() || !a.XactStart.IsZero() {
		t.Fatalf("fresh session: %+v", a)
	}
	state := func(want, query string) Activity {
		t.Helper()
		a := b.Activity()
		if a.State != want || a.Query != query {
			t.Fatalf("activity = %+v; want state %q, query %q", a, want, query)
		}
		return a
	}
	if _, err := c.Exec(ctx, "SELECT 1", simple); err != nil {
		t.Fatal(err)
	}
	a = state("idle", "SELECT 1")
	if a.QueryStart.IsZero() || a.StateChange.Before(a.QueryStart) || !a.XactStart.IsZero() {
		t.Fatalf("after SELECT 1: %+v", a)
	}
	if _, err := c.Exec(ctx, "BEGIN", simple); err != nil {
		t.Fatal(err)
	}
	begun := state("idle in transaction", "BEGIN")
	if !begun.XactStart.Equal(begun.QueryStart) {
		t.Fatalf("xact_start %v; want the BEGIN's start %v", begun.XactStart, begun.QueryStart)
	}
	if _, err := c.Exec(ctx, "SELECT 2", simple); err != nil {
		t.Fatal(err)
	}
	if a := state("idle in transaction", "SELECT 2"); !a.XactStart.Equal(begun.XactStart) {
		t.Fatalf("xact_start moved within the block: %+v", a)
	}
	if _, err := c.Exec(ctx, "EOFERR", simple); err == nil {
		t.Fatal("EOFERR succeeded")
	}
	state("idle in transaction (aborted)", "EOFERR")
	if _, err := c.Exec(ctx, "ROLLBACK", simple); err != nil {
		t.Fatal(err)
	}
	if a := state("idle", "ROLLBACK"); !a.XactStart.IsZero() {
		t.Fatalf("xact_start after ROLLBACK: %+v", a)
	}
	// The extended protocol too.
	if _, err := c.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	state("idle in transaction", "BEGIN")
	if _, err := c.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	state("idle", "COMMIT")

	// A running statement is active, and Cancel cancels it with 57014;
	// the session goes on.
	errc := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, "SELECT pg_sleep(60)", simple)
		errc <- err
	}()
	<-eng.sleeping
	if a := state("active", "SELECT pg_sleep(60)"); !a.StateChange.Equal(a.QueryStart) || !a.XactStart.Equal(a.QueryStart) {
		t.Fatalf("running: %+v", a)
	}
	b.Cancel()
	if err := <-errc; pgCode(err) != "57014" {
		t.Fatalf("cancelled statement: %v; want 57014", err)
	}
	if _, err := c.Exec(ctx, "SELECT 3", simple); err != nil {
		t.Fatalf("after Cancel: %v", err)
	}
	b.Cancel() // idle: nothing happens
	if _, err := c.Exec(ctx, "SELECT 4"); err != nil {
		t.Fatalf("after an idle Cancel: %v", err)
	}

	// Terminate ends an idle connection: its next statement fails.
	idle := ts.connect(t, "")
	bi := <-eng.backends
	bi.Terminate()
	_, err := idle.Exec(ctx, "SELECT 5", simple)
	if err == nil {
		t.Fatal("terminated idle connection still runs statements")
	}
	if code := pgCode(err); code != "" && code != "57P01" {
		t.Fatalf("terminated idle connection: %v; want 57P01 or a closed connection", err)
	}
	// ... and a busy one with FATAL 57P01 in place of its result.
	busy := ts.connect(t, "")
	bb := <-eng.backends
	go func() {
		_, err := busy.Exec(ctx, "SELECT pg_sleep(60)")
		errc <- err
	}()
	<-eng.sleeping
	start := time.Now()
	bb.Terminate()
	if err := <-errc; pgCode(err) != "57P01" {
		t.Fatalf("terminated statement: %v; want 57P01", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("terminate took %v", d)
	}
	if !busy.IsClosed() {
		if _, err := busy.Exec(ctx, "SELECT 6"); err == nil {
			t.Fatal("terminated busy connection still runs statements")
		}
	}
	// The others are gone from the server's sessions; c stays.
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := ts.srv.Sessions()
		if len(s) == 1 && s[0].PID == c.PgConn().PID() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sessions after terminate: %+v", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := c.Exec(ctx, "SELECT 7"); err != nil {
		t.Fatal(err)
	}
}
