package pgcdc

import (
	"context"
	"fmt"
	"math/rand"
	"net/url"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/panics"
	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/types"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// seed returns RUNNEL_TEST_SEED or a fresh seed, logged for replay.
func seed(t *testing.T) int64 {
	s := time.Now().UnixNano()
	if v := os.Getenv("RUNNEL_TEST_SEED"); v != "" {
		s, _ = strconv.ParseInt(v, 10, 64)
	}
	t.Logf("seed %d (RUNNEL_TEST_SEED=%d replays)", s, s)
	return s
}

// upstream is a fresh database in the logical cluster, with the Config
// pointing at one of its tables.
type upstream struct {
	t    *testing.T
	conn *pgx.Conn
	cfg  Config
}

func newUpstream(t *testing.T, table, slot string) *upstream {
	t.Helper()
	u, err := url.Parse(pgtest.NewLogicalDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	cfg := Config{Host: u.Hostname(), Port: port, User: u.User.Username(), Database: strings.TrimPrefix(u.Path, "/"),
		Schema: "public", Table: table, Slot: slot, Publication: "rw_publication", CreatePublication: true}
	conn, err := pgx.Connect(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The slot would keep the database from being dropped.
		DropSlot(context.Background(), cfg, slot)
		conn.Close(context.Background())
	})
	return &upstream{t: t, conn: conn, cfg: cfg}
}

func (u *upstream) exec(sql string, args ...any) {
	u.t.Helper()
	if _, err := u.conn.Exec(context.Background(), sql, args...); err != nil {
		u.t.Fatalf("%s: %v", sql, err)
	}
}

// rows returns the upstream table as sorted text lines.
func (u *upstream) rows(cols []Column) []string {
	u.t.Helper()
	rs, err := u.conn.Query(context.Background(), "SELECT "+selectList(cols)+" FROM "+u.cfg.QualifiedTable(), pgx.QueryResultFormats{pgx.TextFormatCode})
	if err != nil {
		u.t.Fatal(err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var parts []string
		for _, v := range rs.RawValues() {
			if v == nil {
				parts = append(parts, "NULL")
			} else {
				parts = append(parts, string(v))
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rs.Err(); err != nil {
		u.t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// model is what a Runnel CDC table does with batches: rows by primary key,
// changes applied in order, committed in epochs (a restart goes back to
// the last commit).
type model struct {
	cols      []Column
	pk        []int
	rows      map[string]types.Row
	committed map[string]types.Row
	state     *State // committed state
	pending   State
}

func newModel(cols []Column, pk []int) *model {
	return &model{cols: cols, pk: pk, rows: map[string]types.Row{}, committed: map[string]types.Row{}}
}

func (m *model) key(r types.Row) string {
	var b strings.Builder
	for _, k := range m.pk {
		b.WriteString(types.FormatText(r[k], m.cols[k].Type, nil))
		b.WriteByte(0)
	}
	return b.String()
}

func (m *model) apply(b Batch) {
	for _, c := range b.Changes {
		switch c.Op {
		case OpTruncate:
			m.rows = map[string]types.Row{}
		case OpDelete:
			delete(m.rows, m.key(c.Row))
		case OpUpsert:
			row := append(types.Row(nil), c.Row...)
			old := m.rows[m.key(row)]
			if c.Old != nil {
				old = m.rows[m.key(c.Old)]
				delete(m.rows, m.key(c.Old))
			}
			if c.Keep != nil {
				for i, k := range c.Keep {
					if k {
						row[i] = types.NullDatum
						if old != nil {
							row[i] = old[i]
						}
					}
				}
			}
			m.rows[m.key(row)] = row
		}
	}
	m.pending = b.State
}

// commit is an epoch commit: it returns the state to acknowledge.
func (m *model) commit() State {
	m.committed = map[string]types.Row{}
	for k, r := range m.rows {
		m.committed[k] = r
	}
	s := m.pending
	m.state = &s
	return s
}

// rollback is a recovery: back to the last commit, rows and position. The
// position matters: a caller that waits for the model to reach an LSN must
// not count batches the recovery threw away (before this was reset, a
// restart after applying, uncommitted, a transaction up to the round's
// target ended the round at once with that transaction's committed prefix
// only, which read as a reader that lost changes).
func (m *model) rollback() {
	m.rows = map[string]types.Row{}
	for k, r := range m.committed {
		m.rows[k] = r
	}
	m.pending = State{}
	if m.state != nil {
		m.pending = *m.state
	}
}

func (m *model) lines() []string {
	var out []string
	for _, r := range m.rows {
		var parts []string
		for i, d := range r {
			if d.IsNull() {
				parts = append(parts, "NULL")
			} else {
				parts = append(parts, types.FormatText(d, m.cols[i].Type, nil))
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	sort.Strings(out)
	return out
}

// drain applies batches until the model's position reaches lsn (or the
// deadline passes).
func drain(t *testing.T, r *Reader, m *model, until pglogrepl.LSN) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for m.pending.Phase != PhaseStream || m.pending.LSN < until {
		b, err := r.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for LSN %s (at %s): %v; status %+v", until, m.pending, err, r.Status())
		}
		m.apply(b)
	}
}

func (u *upstream) currentLSN() pglogrepl.LSN {
	u.t.Helper()
	var s string
	if err := u.conn.QueryRow(context.Background(), "SELECT pg_current_wal_insert_lsn()::text").Scan(&s); err != nil {
		u.t.Fatal(err)
	}
	l, _ := pglogrepl.ParseLSN(s)
	return l
}

func compare(t *testing.T, u *upstream, m *model, when string) {
	t.Helper()
	want, got := u.rows(m.cols), m.lines()
	if strings.Join(want, "\n") != strings.Join(got, "\n") {
		t.Fatalf("%s: Runnel table differs from upstream\nupstream (%d rows):\n%s\nrunnel (%d rows):\n%s", when, len(want),
			strings.Join(head(want), "\n"), len(got), strings.Join(head(got), "\n"))
	}
}

func head(s []string) []string {
	var out []string
	for i, l := range s {
		if i == 30 {
			return append(out, "...")
		}
		if len(l) > 100 {
			l = l[:100] + "..."
		}
		out = append(out, l)
	}
	return out
}

var testCols = []Column{{Name: "id", Type: types.Int32}, {Name: "k", Type: types.Int32}, {Name: "v", Type: types.Text}, {Name: "n", Type: types.Numeric}, {Name: "ts", Type: types.Timestamptz}}

func randomDML(u *upstream, rng *rand.Rand, n int) {
	for range n {
		id := rng.Intn(300)
		switch rng.Intn(4) {
		case 0, 1:
			u.exec(`INSERT INTO t VALUES ($1, $2, $3, $4, now() - $5 * interval '1 second') ON CONFLICT (id) DO UPDATE SET k = EXCLUDED.k, v = EXCLUDED.v`,
				id, rng.Intn(100), fmt.Sprintf("v%d", rng.Intn(1000)), fmt.Sprintf("%d.%d", rng.Intn(1000), rng.Intn(100)), rng.Intn(100000))
		case 2:
			u.exec(`UPDATE t SET k = k + 1, n = n * 2 WHERE id % 7 = $1`, rng.Intn(7))
		case 3:
			u.exec(`DELETE FROM t WHERE id = $1`, id)
		}
		if rng.Intn(20) == 0 {
			// A key change: the old key's row must disappear.
			u.exec(`UPDATE t SET id = id + 1000 WHERE id = $1 AND NOT EXISTS (SELECT FROM t WHERE id = $1 + 1000)`, id)
		}
	}
}

// TestSnapshotThenStreamRandomDML: random DML before, during and after the
// snapshot, with restarts (back to the last commit, as a recovery) at
// random batches, including in the middle of the snapshot; after every
// round the model of the Runnel table equals the upstream table, and the
// slot's confirmed_flush_lsn never passes the committed state (I8).
func TestSnapshotThenStreamRandomDML(t *testing.T) {
	rng := rand.New(rand.NewSource(seed(t)))
	u := newUpstream(t, "t", "runnel_test_slot")
	u.exec(`CREATE TABLE t (id int PRIMARY KEY, k int, v text, n numeric, ts timestamptz)`)
	u.exec(`INSERT INTO t SELECT i, i % 10, 'v' || i, i * 1.5, '2024-01-01'::timestamptz + i * interval '1 hour' FROM generate_series(1, 500) i`)
	pk := []int{0}
	if err := Check(context.Background(), u.cfg, testCols, pk); err != nil {
		t.Fatal(err)
	}
	m := newModel(testCols, pk)
	opt := Options{MaxBatch: 32, StatusInterval: 50 * time.Millisecond, Name: "t"}
	r := Start(u.cfg, testCols, pk, nil, opt)
	defer func() { r.Close() }()

	// During the snapshot: take one batch, then change the table.
	b, err := r.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m.apply(b)
	if b.State.Phase != PhaseSnapshot || b.Changes[0].Op != OpTruncate {
		t.Fatalf("first batch: state %s, first op %s; want a snapshot batch starting with truncate", b.State, b.Changes[0].Op)
	}
	randomDML(u, rng, 40)
	restarts := 0
	rounds := 4
	if v, err := strconv.Atoi(os.Getenv("RUNNEL_CDC_ROUNDS")); err == nil {
		rounds = v
	}
	for round := range rounds {
		randomDML(u, rng, 20+rng.Intn(40))
		target := u.currentLSN()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		for m.pending.Phase != PhaseStream || m.pending.LSN < target {
			b, err := r.Next(ctx)
			if err != nil {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Fatalf("round %d: %v (status %+v)\n%s", round, err, r.Status(), buf)
			}
			m.apply(b)
			switch rng.Intn(30) {
			case 0, 1, 2:
				st := m.commit()
				r.Committed(st)
			case 3:
				// A recovery: the uncommitted batches are lost, the reader
				// restarts from the committed state.
				r.Close()
				m.rollback()
				if os.Getenv("RUNNEL_CDC_DEBUG") != "" {
					fmt.Fprintf(os.Stderr, "RESTART from %v\n", m.state)
				}
				r = Start(u.cfg, testCols, pk, m.state, opt)
				restarts++
				if rng.Intn(2) == 0 {
					randomDML(u, rng, 5)
					target = u.currentLSN()
				}
			}
		}
		cancel()
		compare(t, u, m, fmt.Sprintf("round %d", round))
		checkSlotBehind(t, u, m)
	}
	t.Logf("%d restarts, %d snapshot rows, %d changes", restarts, r.SnapshotRows.Load(), r.Changes.Load())
}

// checkSlotBehind: I8, the slot never confirms more than was committed.
func checkSlotBehind(t *testing.T, u *upstream, m *model) {
	t.Helper()
	s, err := Slot(context.Background(), u.cfg, u.cfg.Slot)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Exists {
		t.Fatalf("slot %s is gone", u.cfg.Slot)
	}
	var committed pglogrepl.LSN
	if m.state != nil && m.state.Phase == PhaseStream {
		committed = m.state.LSN
	}
	if committed > 0 && s.ConfirmedFlushLSN > committed {
		t.Fatalf("slot confirmed_flush_lsn %s passed the committed state %s (I8)", s.ConfirmedFlushLSN, committed)
	}
}

// TestAckOnlyAfterCommit: while the epoch holding changes is not committed,
// the slot's confirmed_flush_lsn does not move, however long the reader
// runs; once committed, it reaches the committed LSN.
func TestAckOnlyAfterCommit(t *testing.T) {
	u := newUpstream(t, "t", "runnel_ack_slot")
	u.exec(`CREATE TABLE t (id int PRIMARY KEY, k int, v text, n numeric, ts timestamptz)`)
	pk := []int{0}
	m := newModel(testCols, pk)
	r := Start(u.cfg, testCols, pk, nil, Options{StatusInterval: 20 * time.Millisecond, Name: "t"})
	defer r.Close()
	drain(t, r, m, 0)
	first := m.commit()
	r.Committed(first)
	waitConfirmed(t, u, first.LSN)
	u.exec(`INSERT INTO t SELECT i, i, 'x', 1, now() FROM generate_series(1, 100) i`)
	drain(t, r, m, u.currentLSN())
	before, _ := Slot(context.Background(), u.cfg, u.cfg.Slot)
	// Held: nothing committed; many status intervals pass.
	time.Sleep(300 * time.Millisecond)
	held, _ := Slot(context.Background(), u.cfg, u.cfg.Slot)
	if held.ConfirmedFlushLSN > m.state.LSN || held.ConfirmedFlushLSN != before.ConfirmedFlushLSN {
		t.Fatalf("confirmed_flush_lsn moved to %s while the changes up to %s were not committed (committed %s)", held.ConfirmedFlushLSN, m.pending.LSN, m.state.LSN)
	}
	st := m.commit()
	r.Committed(st)
	waitConfirmed(t, u, st.LSN)
	compare(t, u, m, "after commit")
}

func waitConfirmed(t *testing.T, u *upstream, lsn pglogrepl.LSN) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := Slot(context.Background(), u.cfg, u.cfg.Slot)
		if err != nil {
			t.Fatal(err)
		}
		if s.ConfirmedFlushLSN == lsn {
			return
		}
		if s.ConfirmedFlushLSN > lsn {
			t.Fatalf("confirmed_flush_lsn %s passed the committed %s", s.ConfirmedFlushLSN, lsn)
		}
		if time.Now().After(deadline) {
			t.Fatalf("confirmed_flush_lsn %s did not reach the committed %s", s.ConfirmedFlushLSN, lsn)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestIdleTableAdvancesOnKeepalive: writes to another table move the idle
// table's state (and, once committed, the slot), so it pins no WAL.
func TestIdleTableAdvancesOnKeepalive(t *testing.T) {
	u := newUpstream(t, "t", "runnel_idle_slot")
	u.exec(`CREATE TABLE t (id int PRIMARY KEY, k int, v text, n numeric, ts timestamptz)`)
	u.exec(`CREATE TABLE other (x int)`)
	pk := []int{0}
	m := newModel(testCols, pk)
	r := Start(u.cfg, testCols, pk, nil, Options{StatusInterval: 20 * time.Millisecond, Name: "t"})
	defer r.Close()
	drain(t, r, m, 0)
	start := m.pending.LSN
	u.exec(`INSERT INTO other SELECT generate_series(1, 10000)`)
	target := u.currentLSN()
	drain(t, r, m, target)
	if len(m.rows) != 0 {
		t.Fatalf("rows of another table arrived: %v", m.lines())
	}
	st := m.commit()
	r.Committed(st)
	waitConfirmed(t, u, st.LSN)
	if st.LSN <= start {
		t.Fatalf("state did not move past %s", start)
	}
}

// TestToastAndReplicaIdentity: an UPDATE that leaves a TOASTed column
// unchanged keeps its stored value, under REPLICA IDENTITY DEFAULT and
// FULL; deletes carry the key under both.
func TestToastAndReplicaIdentity(t *testing.T) {
	for _, identity := range []string{"DEFAULT", "FULL"} {
		t.Run(identity, func(t *testing.T) {
			u := newUpstream(t, "big", "runnel_toast_"+strings.ToLower(identity))
			u.exec(`CREATE TABLE big (id int PRIMARY KEY, k int, doc text)`)
			u.exec(`ALTER TABLE big REPLICA IDENTITY ` + identity)
			cols := []Column{{Name: "id", Type: types.Int32}, {Name: "k", Type: types.Int32}, {Name: "doc", Type: types.Text}}
			pk := []int{0}
			m := newModel(cols, pk)
			r := Start(u.cfg, cols, pk, nil, Options{StatusInterval: 20 * time.Millisecond, Name: "big"})
			defer r.Close()
			drain(t, r, m, 0)
			// Incompressible 20 kB values are stored out of line.
			u.exec(`INSERT INTO big SELECT i, 0, (SELECT string_agg(md5(random()::text || j), '') FROM generate_series(1, 600) j) FROM generate_series(1, 5) i`)
			u.exec(`UPDATE big SET k = k + 1`)
			u.exec(`UPDATE big SET id = id + 10 WHERE id = 1`)
			u.exec(`DELETE FROM big WHERE id = 2`)
			drain(t, r, m, u.currentLSN())
			compare(t, u, m, "after TOAST updates")
		})
	}
}

// TestUpstreamColumnAdded: a column added upstream is reported in the
// status, and the table keeps streaming its own columns.
func TestUpstreamColumnAdded(t *testing.T) {
	u := newUpstream(t, "t", "runnel_addcol_slot")
	u.exec(`CREATE TABLE t (id int PRIMARY KEY, k int, v text, n numeric, ts timestamptz)`)
	pk := []int{0}
	m := newModel(testCols, pk)
	r := Start(u.cfg, testCols, pk, nil, Options{StatusInterval: 20 * time.Millisecond, Name: "t"})
	defer r.Close()
	drain(t, r, m, 0)
	u.exec(`INSERT INTO t VALUES (1, 1, 'a', 1, now())`)
	drain(t, r, m, u.currentLSN())
	u.exec(`ALTER TABLE t ADD COLUMN extra int`)
	u.exec(`INSERT INTO t VALUES (2, 2, 'b', 2, now(), 42)`)
	drain(t, r, m, u.currentLSN())
	compare(t, u, m, "after ADD COLUMN")
	notes := r.Status().Notices
	if len(notes) != 1 || !strings.Contains(notes[0], `column "extra" was added to upstream table public.t`) {
		t.Fatalf("notices %q; want one naming the added column", notes)
	}
}

// TestBadValuesBecomeNull: a value that does not fit the Runnel column's
// type is NULL and counted; a key that does not fit skips the row; nothing
// stalls.
func TestBadValuesBecomeNull(t *testing.T) {
	u := newUpstream(t, "t", "runnel_bad_slot")
	u.exec(`CREATE TABLE t (id text PRIMARY KEY, k text)`)
	cols := []Column{{Name: "id", Type: types.Int32}, {Name: "k", Type: types.Int16}}
	pk := []int{0}
	m := newModel(cols, pk)
	r := Start(u.cfg, cols, pk, nil, Options{StatusInterval: 20 * time.Millisecond, Name: "t"})
	defer r.Close()
	drain(t, r, m, 0)
	u.exec(`INSERT INTO t VALUES ('1', '5'), ('2', '99999'), ('x', '1'), ('3', 'abc')`)
	t.Logf("after insert %s; model at %s", u.currentLSN(), m.pending)
	drain(t, r, m, u.currentLSN())
	got := strings.Join(m.lines(), ",")
	if got != "1|5,2|NULL,3|NULL" {
		t.Fatalf("rows %s; want 1|5,2|NULL,3|NULL", got)
	}
	if r.BadValues.Load() != 3 || r.BadRows.Load() != 1 {
		t.Fatalf("bad values %d, bad rows %d; want 3, 1", r.BadValues.Load(), r.BadRows.Load())
	}
}

// TestUnreachableRetries: a reader whose upstream is down reports it in
// its status and retries; it never fails or blocks its caller.
func TestUnreachableRetries(t *testing.T) {
	cfg := Config{Host: "127.0.0.1", Port: 1, User: "x", Database: "x", Schema: "public", Table: "t", Slot: "s", Publication: "p"}
	r := Start(cfg, testCols, []int{0}, nil, Options{})
	defer r.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := r.Status()
		if s.Retries >= 2 && !s.Connected && strings.Contains(s.Err, "cannot connect") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %+v; want retries with a connection error", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSessionPanicRetries: a panic in a session (decoding the upstream's
// bytes runs on the reader's goroutine, outside any actor) is that
// session's failure, shown in the status and retried; without the recover
// in run this test binary dies (I9).
func TestSessionPanicRetries(t *testing.T) {
	defer panics.Arm(sessionSite, 1<<30)()
	cfg := Config{Host: "127.0.0.1", Port: 1, User: "x", Database: "x", Schema: "public", Table: "t", Slot: "s", Publication: "p"}
	r := Start(cfg, testCols, []int{0}, nil, Options{})
	defer r.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := r.Status()
		if s.Retries >= 2 && strings.Contains(s.Err, "pgcdc.session panicked") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %+v; want retries after the panics", s)
		}
		time.Sleep(20 * time.Millisecond) // polling a status, not ordering a race
	}
}

func TestStateRoundTrip(t *testing.T) {
	for _, s := range []State{{PhaseSnapshot, 0, "a"}, {PhaseStream, 0x1_0000_0042, "runnel_12"}} {
		got, err := DecodeState(s.Encode())
		if err != nil || got != s {
			t.Fatalf("round trip of %v: %v, %v", s, got, err)
		}
	}
	for _, b := range [][]byte{nil, {2}, {1, 9, 0, 0, 0, 0, 0, 0, 0, 0}} {
		if _, err := DecodeState(b); err == nil {
			t.Fatalf("DecodeState(%v) accepted", b)
		}
	}
}

func TestMalformedMessagesNeverPanic(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for range 2000 {
		b := make([]byte, rng.Intn(40))
		rng.Read(b)
		if len(b) > 0 {
			b[0] = "BCORYIUDTM"[rng.Intn(10)]
		}
		parseMessage(b) // must not panic
	}
}
