package difftest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"os"
	"slices"
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

// stmtTimeout bounds one statement on either side; a statement that hangs
// is a bug worth a clear failure rather than a test-binary timeout.
const stmtTimeout = 60 * time.Second

// runnel is a Runnel server on a loopback port with its own data directory.
type runnel struct{ *servertest.Server }

func startRunnel(t testing.TB) *runnel {
	t.Helper()
	return &runnel{servertest.Start(t, servertest.WithLogger(serverLogger()))}
}

// serverLogger discards the server's log unless RUNNEL_DIFF_LOG is set
// (then warnings and errors go to stderr: actor failures, recoveries).
func serverLogger() *slog.Logger {
	if os.Getenv("RUNNEL_DIFF_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func (r *runnel) url() string { return r.URL() }

func connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	return servertest.Connect(t, url)
}

// pair is one Runnel session and one PostgreSQL session that receive the
// same statements. trace records every statement sent, for reproductions.
type pair struct {
	t     testing.TB
	rw    *pgx.Conn
	pg    *pgx.Conn
	trace []string
}

func newPair(t testing.TB) *pair {
	t.Helper()
	pgURL := pgtest.NewDatabase(t)
	r := startRunnel(t)
	p := &pair{t: t, rw: connect(t, r.url()), pg: connect(t, pgURL)}
	return p
}

// result is a query's answer rendered as canonical text rows, or its error.
type result struct {
	rows []string
	err  error
}

func (r result) code() string { return sqlstate(r.err) }

func sqlstate(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	if err != nil {
		return "non-SQL error: " + err.Error()
	}
	return ""
}

// canon controls how a column's values are normalised before comparison.
type canon struct {
	// sortList marks columns holding string_agg(x, ',') without ORDER BY:
	// their element order is unspecified, so elements are sorted.
	sortList map[int]bool
}

// query runs sql in the simple protocol (text results) and renders rows.
func query(conn *pgx.Conn, sql string, c canon) result {
	ctx, cancel := context.WithTimeout(context.Background(), stmtTimeout)
	defer cancel()
	rows, err := conn.Query(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return result{err: err}
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		raw := rows.RawValues()
		parts := make([]string, len(raw))
		for i, v := range raw {
			if v == nil {
				parts[i] = "NULL"
				continue
			}
			s := canonValue(string(v))
			if c.sortList[i] {
				els := strings.Split(s, ",")
				slices.Sort(els)
				s = strings.Join(els, ",")
			}
			parts[i] = s
		}
		out = append(out, strings.Join(parts, " | "))
	}
	if err := rows.Err(); err != nil {
		return result{err: err}
	}
	return result{rows: out}
}

// canonValue rounds decimal numbers to 10 fractional digits and drops
// trailing zeros: PostgreSQL chooses result scales of avg and division by
// rules Runnel is not required to copy digit for digit, but the values
// must agree.
func canonValue(s string) string {
	if !strings.Contains(s, ".") || !looksDecimal(s) {
		return s
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return s
	}
	out := r.FloatString(10)
	out = strings.TrimRight(out, "0")
	out = strings.TrimSuffix(out, ".")
	if out == "-0" {
		out = "0"
	}
	return out
}

func looksDecimal(s string) bool {
	if s == "" {
		return false
	}
	dot := false
	for i, c := range s {
		switch {
		case c >= '0' && c <= '9':
		case c == '-' && i == 0:
		case c == '.' && !dot:
			dot = true
		default:
			return false
		}
	}
	return true
}

// exec runs one statement on a connection with a timeout.
func execOn(conn *pgx.Conn, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), stmtTimeout)
	defer cancel()
	_, err := conn.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	return err
}

// both sends a statement to both systems. It fails the test when one side
// accepts what the other refuses or when the SQLSTATEs differ; a 0A000 from
// Runnel is reported as unsupported (second result true) without failing.
func (p *pair) both(sql string) (unsupported bool) {
	p.t.Helper()
	p.trace = append(p.trace, sql+";")
	pgErr := execOn(p.pg, sql)
	rwErr := execOn(p.rw, sql)
	if sqlstate(rwErr) == "0A000" && pgErr == nil {
		return true
	}
	if sqlstate(pgErr) != sqlstate(rwErr) {
		p.t.Fatalf("statement outcome differs:\n  %s\n  postgres: %v\n  runnel:   %v\n%s", sql, pgErr, rwErr, p.replay())
	}
	return false
}

// mustBoth is both for statements Runnel must support.
func (p *pair) mustBoth(sql string) {
	p.t.Helper()
	if p.both(sql) {
		p.t.Fatalf("runnel refuses with 0A000 what postgres accepts:\n  %s\n%s", sql, p.replay())
	}
}

// flush makes everything written so far visible in Runnel.
func (p *pair) flush() {
	p.t.Helper()
	p.trace = append(p.trace, "FLUSH; -- runnel only")
	if err := execOn(p.rw, "FLUSH"); err != nil {
		p.t.Fatalf("FLUSH: %v\n%s", err, p.replay())
	}
}

// replay renders the statements sent so far (the last few hundred) and
// writes all of them to a file whose name it includes.
func (p *pair) replay() string {
	const keep = 400
	tr := p.trace
	file := ""
	if f, err := os.CreateTemp("", "difftest-*.sql"); err == nil {
		_, _ = f.WriteString(strings.Join(tr, "\n") + "\n")
		f.Close()
		file = "-- full trace: " + f.Name() + "\n"
	}
	prefix := ""
	if len(tr) > keep {
		prefix = fmt.Sprintf("-- (%d earlier statements omitted)\n", len(tr)-keep)
		tr = tr[len(tr)-keep:]
	}
	return file + "-- statements so far:\n" + prefix + strings.Join(tr, "\n")
}

// sameMultiset reports whether a and b hold the same rows with the same
// multiplicities, and a diff (rows only in one side) when not.
func sameMultiset(a, b []string) (bool, string) {
	count := map[string]int{}
	for _, r := range a {
		count[r]++
	}
	for _, r := range b {
		count[r]--
	}
	var onlyA, onlyB []string
	for r, n := range count {
		for ; n > 0; n-- {
			onlyA = append(onlyA, r)
		}
		for ; n < 0; n++ {
			onlyB = append(onlyB, r)
		}
	}
	if len(onlyA) == 0 && len(onlyB) == 0 {
		return true, ""
	}
	slices.Sort(onlyA)
	slices.Sort(onlyB)
	return false, fmt.Sprintf("rows only in postgres (%d): %s\nrows only in runnel (%d): %s",
		len(onlyA), clip(onlyA), len(onlyB), clip(onlyB))
}

func clip(rows []string) string {
	const max = 20
	if len(rows) > max {
		return fmt.Sprintf("%q … (+%d)", rows[:max], len(rows)-max)
	}
	return fmt.Sprintf("%q", rows)
}

// seeds returns the seeds of the cases to run: RUNNEL_TEST_SEED alone if
// set, else n (or RUNNEL_DIFF_CASES) seeds derived from the clock.
func seeds(t testing.TB, n int) []int64 {
	t.Helper()
	if s := os.Getenv("RUNNEL_TEST_SEED"); s != "" {
		seed, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("RUNNEL_TEST_SEED=%q: %v", s, err)
		}
		return []int64{seed}
	}
	if s := os.Getenv("RUNNEL_DIFF_CASES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			t.Fatalf("RUNNEL_DIFF_CASES=%q: want a positive integer", s)
		}
		n = v
	}
	base := time.Now().UnixNano()
	out := make([]int64, n)
	for i := range out {
		out[i] = base + int64(i)*7919
	}
	return out
}
