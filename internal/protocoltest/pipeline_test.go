package protocoltest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// pipelineStep is one request queued in a pipeline.
type pipelineStep struct {
	prepare    string // statement name: SendPrepare(prepare, sql)
	sql        string // SendQueryParams(sql) unless prepare or prepared is set
	prepared   string // SendQueryPrepared(prepared, args)
	args       []string
	deallocate string
	sync       bool // SendPipelineSync
}

// runPipeline sends every step in one pipeline (one network flush) and
// returns a transcript of what came back, one line per result.
func runPipeline(ctx context.Context, c *pgconn.PgConn, steps []pipelineStep) string {
	p := c.StartPipeline(ctx)
	syncs := 0
	for _, s := range steps {
		var args [][]byte
		for _, a := range s.args {
			args = append(args, []byte(a))
		}
		switch {
		case s.sync:
			p.SendPipelineSync()
			syncs++
		case s.deallocate != "":
			p.SendDeallocate(s.deallocate)
		case s.prepare != "":
			p.SendPrepare(s.prepare, s.sql, nil)
		case s.prepared != "":
			p.SendQueryPrepared(s.prepared, args, nil, nil)
		default:
			p.SendQueryParams(s.sql, args, nil, nil, nil)
		}
	}
	var b strings.Builder
	if err := p.Flush(); err != nil {
		fmt.Fprintf(&b, "flush: %v\n", err)
	}
	// Read until every Sync has been answered; pgconn returns an error
	// for each request the server skipped after an error.
	for seen := 0; seen < syncs; {
		res, err := p.GetResults()
		switch r := res.(type) {
		case nil:
			if err == nil {
				fmt.Fprintf(&b, "end of results before the last sync\n")
				seen = syncs
				continue
			}
			fmt.Fprintf(&b, "error %s\n", sqlstate(err))
		case *pgconn.StatementDescription:
			fmt.Fprintf(&b, "prepared %s params=%v fields=%d\n", r.Name, r.ParamOIDs, len(r.Fields))
		case *pgconn.ResultReader:
			b.WriteString(renderResult(r.Read()))
		case *pgconn.PipelineSync:
			fmt.Fprintf(&b, "sync (tx status %c)\n", c.TxStatus())
			seen++
		case *pgconn.CloseComplete:
			b.WriteString("closed\n")
		default:
			fmt.Fprintf(&b, "unexpected %T\n", r)
		}
	}
	if err := p.Close(); err != nil {
		fmt.Fprintf(&b, "close: %s\n", sqlstate(err))
	}
	return b.String()
}

// TestPipelineErrorRecovery sends pipelines in which a request fails in
// the middle: the server must answer everything before the error, skip
// everything up to the next Sync, answer that Sync, and carry on with the
// requests after it. The transcripts must equal PostgreSQL's.
func TestPipelineErrorRecovery(t *testing.T) {
	p := newPair(t)
	ctx := testCtx(t)
	p.exec(t, "CREATE TABLE pl (k int PRIMARY KEY, v text)")
	servertest.Exec(t, p.rw, "SET RW_IMPLICIT_FLUSH TO true")

	cases := []struct {
		name  string
		steps []pipelineStep
	}{
		{"execution error", []pipelineStep{
			{sql: "SELECT 1"},
			{sync: true},
			{sql: "INSERT INTO pl VALUES (1, 'one')"},
			{sync: true},
			{sql: "SELECT 2"},
			{sql: "SELECT 1/0"},
			{sql: "SELECT 3"}, // skipped
			{sql: "INSERT INTO pl VALUES (99, 'never')"}, // skipped
			{sync: true},
			{sql: "SELECT k, v FROM pl ORDER BY k"},
			{sync: true},
		}},
		{"parse error", []pipelineStep{
			{prepare: "good", sql: "SELECT k FROM pl WHERE k = $1"},
			{prepare: "bad", sql: "SELEC 1"},
			{prepared: "good", args: []string{"1"}}, // skipped
			{sync: true},
			{prepared: "good", args: []string{"1"}}, // the statement before the error exists
			{sync: true},
		}},
		{"bind error", []pipelineStep{
			{prepare: "byk", sql: "SELECT v FROM pl WHERE k = $1"},
			{prepared: "byk", args: []string{"not a number"}},
			{prepared: "byk", args: []string{"1"}}, // skipped
			{sync: true},
			{prepared: "byk", args: []string{"1"}},
			{deallocate: "byk"},
			{sync: true},
			{prepared: "byk", args: []string{"1"}}, // gone
			{sync: true},
		}},
		{"unique violation", []pipelineStep{
			{sql: "INSERT INTO pl VALUES (1, 'again')"},
			{sql: "SELECT 4"}, // skipped
			{sync: true},
			{sql: "INSERT INTO pl VALUES (2, 'two')"},
			{sync: true},
			{sql: "SELECT k, v FROM pl ORDER BY k"},
			{sync: true},
		}},
		{"missing table", []pipelineStep{
			{sql: "SELECT * FROM no_such_table"},
			{sync: true},
			{sql: "SELECT count(*) FROM pl"},
			{sync: true},
		}},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			got := runPipeline(ctx, p.rw.PgConn(), tc.steps)
			want := runPipeline(ctx, p.pg.PgConn(), tc.steps)
			t.Logf("transcript:\n%s", got)
			if got != want {
				t.Errorf("transcripts differ, %s\nrunnel:\n%s\npostgresql:\n%s", diffLines(got, want), got, want)
			}
			// The session is fine afterwards, in both protocols.
			for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
				var n int
				if err := p.rw.QueryRow(ctx, "SELECT count(*) FROM pl", mode).Scan(&n); err != nil {
					t.Fatalf("after the pipeline (%v): %v", mode, err)
				}
			}
		})
	}
}

// TestBatchErrorRecovery runs a pgx Batch (a pipeline with one Sync at the
// end) whose middle query fails: the queries before it succeed, the ones
// after it fail, and the session works afterwards.
func TestBatchErrorRecovery(t *testing.T) {
	srv := servertest.Start(t)
	ctx := testCtx(t)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec} {
		cfg, err := pgx.ParseConfig(srv.URL())
		if err != nil {
			t.Fatal(err)
		}
		cfg.DefaultQueryExecMode = mode
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		batch := &pgx.Batch{}
		batch.Queue("SELECT $1::int", 7)
		batch.Queue("SELECT 1/0")
		batch.Queue("SELECT 2")
		br := conn.SendBatch(ctx, batch)
		var n int
		if err := br.QueryRow().Scan(&n); err != nil || n != 7 {
			t.Fatalf("mode %v: first query: %d %v", mode, n, err)
		}
		if _, err := br.Exec(); sqlstate(err) != "22012" {
			t.Fatalf("mode %v: failing query: %v; want SQLSTATE 22012", mode, err)
		}
		if _, err := br.Exec(); err == nil {
			t.Fatalf("mode %v: query after the error succeeded", mode)
		}
		if err := br.Close(); err != nil && sqlstate(err) != "22012" {
			t.Fatalf("mode %v: close batch: %v", mode, err)
		}
		if err := conn.QueryRow(ctx, "SELECT $1::int + 1", 41).Scan(&n); err != nil || n != 42 {
			t.Fatalf("mode %v: after the batch: %d %v", mode, n, err)
		}
		if conn.PgConn().TxStatus() != 'I' {
			t.Fatalf("mode %v: transaction status %c after the batch; want I", mode, conn.PgConn().TxStatus())
		}
	}
}

// TestTransactionStatus checks the transaction status byte of every
// ReadyForQuery through a BEGIN / error / ROLLBACK cycle, in the simple
// and the extended protocol, against PostgreSQL.
func TestTransactionStatus(t *testing.T) {
	p := newPair(t)
	ctx := testCtx(t)
	script := []string{
		"SELECT 1", "BEGIN", "SELECT 1", "COMMIT",
		"BEGIN", "SELECT 1/0", "SELECT 1", "COMMIT",
		"START TRANSACTION", "SELECT 1/0", "ROLLBACK", "SELECT 1",
		"BEGIN", "ROLLBACK", "COMMIT", "ROLLBACK",
	}
	for _, extended := range []bool{false, true} {
		transcript := func(c *pgconn.PgConn) string {
			var b strings.Builder
			for _, sql := range script {
				var err error
				if extended {
					err = c.ExecParams(ctx, sql, nil, nil, nil, nil).Read().Err
				} else {
					_, err = c.Exec(ctx, sql).ReadAll()
				}
				fmt.Fprintf(&b, "%-20s status %c error %q\n", sql, c.TxStatus(), sqlstate(err))
			}
			return b.String()
		}
		got, want := transcript(p.rw.PgConn()), transcript(p.pg.PgConn())
		t.Logf("extended=%v:\n%s", extended, got)
		if got != want {
			t.Errorf("extended=%v: %s\nrunnel:\n%s\npostgresql:\n%s", extended, diffLines(got, want), got, want)
		}
	}
}
