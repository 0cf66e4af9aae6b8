package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/sink"
	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/types"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func seed(t *testing.T) uint64 {
	t.Helper()
	s := uint64(time.Now().UnixNano())
	if v := os.Getenv("RUNNEL_TEST_SEED"); v != "" {
		var err error
		if s, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("RUNNEL_TEST_SEED: %v", err)
		}
	}
	t.Logf("seed %d (RUNNEL_TEST_SEED=%d replays)", s, s)
	return s
}

// targetOf returns a sink target on a fresh database and a connection to
// that database for checks.
func targetOf(t *testing.T, cfg *sink.Config, ddl ...string) (sink.Target, *pgx.Conn) {
	t.Helper()
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	pg, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close(context.Background()) })
	for _, q := range ddl {
		if _, err := pg.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	pc, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Options["connector"] = "jdbc"
	cfg.Options["jdbc.url"] = fmt.Sprintf("jdbc:postgresql://%s:%d/%s?user=%s", pc.Host, pc.Port, pc.Database, pc.User)
	tg, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tg.Close() })
	return tg, pg
}

func rows(t *testing.T, pg *pgx.Conn, q string) []string {
	t.Helper()
	rs, err := pg.Query(context.Background(), q, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
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
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestUpsertEpochsMatchModel drives an upsert target directly: seeded
// epochs of many small batches over few keys (so a key changes again in a
// later batch of the same epoch, which applies the stage first, and the
// stage's key bound is hit), deletes of present and absent keys, columns
// that go in binary as they are (bigint), binary through the stage (a
// numeric and a varchar with type modifiers) and as text (a timestamp into
// a text column), NULLs; some epochs rolled back, some delivered again (the
// progress row makes them no-ops: I8). After every commit the target
// equals a model that applies the changes in order. Both apply paths run:
// MERGE and, as on PostgreSQL before 15, DELETE + INSERT ... ON CONFLICT.
//
// With plain columns (every type the target's, no modifier) batches of
// new keys are COPYed into the target itself after a probe (txn.exists):
// that variant runs too, with mostly inserts so that the probe finds no
// key often.
func TestUpsertEpochsMatchModel(t *testing.T) {
	for _, merge := range []bool{true, false} {
		for _, v := range []struct{ plain, textKey bool }{{false, false}, {true, false}, {true, true}} {
			plain, textKey := v.plain, v.textKey
			t.Run(fmt.Sprintf("merge=%v,plain=%v,textKey=%v", merge, plain, textKey), func(t *testing.T) {
				// Small bounds: the stage is applied early, and rows are
				// sent in many COPYs, one in flight while more are added.
				useMerge, maxStagedKeys, copyChunk, maxCandRows = merge, 16, 300, 24
				defer func() { useMerge, maxStagedKeys, copyChunk, maxCandRows = true, 256<<10, 4<<20, 64<<10 }()
				testUpsertEpochs(t, rand.New(rand.NewPCG(seed(t), 7)), plain, textKey)
			})
		}
	}
}

// textKey: the key is a text column (the probe's generic path; an
// integer key takes its int8[] path).
func testUpsertEpochs(t *testing.T, r *rand.Rand, plain, textKey bool) {
	ctx := context.Background()
	cfg := &sink.Config{
		Name: "up", Type: sink.TypeUpsert, Key: []int{0}, Options: map[string]string{"table.name": "tgt"},
		Columns: []sink.Column{{Name: "k", Type: types.Int32}, {Name: "n", Type: types.Numeric}, {Name: "s", Type: types.Varchar}, {Name: "ts", Type: types.Timestamp}, {Name: "b", Type: types.Int64}},
	}
	ddl := "CREATE TABLE tgt (k int PRIMARY KEY, n numeric(12,2), s varchar(8), ts text, b bigint, extra text DEFAULT 'x')"
	if plain {
		ddl = "CREATE TABLE tgt (k int PRIMARY KEY, n numeric, s text, ts timestamp, b bigint, extra text DEFAULT 'x')"
	}
	if textKey {
		cfg.Columns[0].Type = types.Text
		ddl = strings.Replace(ddl, "k int", "k text", 1)
	}
	tg, pg := targetOf(t, cfg, ddl)
	has, err := tg.Open(ctx)
	if err != nil || has != 0 {
		t.Fatalf("Open: %d, %v", has, err)
	}
	x := tg.(*target)
	if plain && (x.direct || !x.plain) {
		t.Fatalf("plain columns: direct %v, plain %v", x.direct, x.plain)
	}
	if !plain && (x.direct || x.plain || !x.cols[1].binary || x.cols[1].plain || !x.cols[2].binary || x.cols[3].binary || !x.cols[4].plain) {
		t.Fatalf("column paths: %+v", x.cols)
	}
	keys, deletes := 40, 3
	if plain {
		keys, deletes = 400, 12
	}
	model := map[int32]string{}
	value := func(k int32) (types.Row, string) {
		row := types.Row{types.DInt32(k), types.NullDatum, types.NullDatum, types.NullDatum, types.NullDatum}
		if textKey {
			row[0] = types.DVarchar(strconv.Itoa(int(k)))
		}
		txt := []string{strconv.Itoa(int(k)), "NULL", "NULL", "NULL", "NULL"}
		if r.IntN(5) > 0 {
			cents := r.Int64N(2_000_000) - 1_000_000
			d := apd.New(cents, -2)
			row[1], txt[1] = types.DNumeric(d), d.Text('f')
		}
		if r.IntN(5) > 0 {
			s := strings.Repeat(string(rune('a'+r.IntN(26))), r.IntN(9))
			row[2], txt[2] = types.DVarchar(s), s
		}
		if r.IntN(5) > 0 {
			row[3] = types.DTimestamp(r.Int64N(4e15))
			txt[3] = types.FormatText(row[3], types.Timestamp, nil)
		}
		if r.IntN(5) > 0 {
			b := r.Int64() - r.Int64()
			row[4], txt[4] = types.DInt64(b), strconv.FormatInt(b, 10)
		}
		return row, strings.Join(txt, "|") + "|x"
	}
	epoch := uint64(0)
	for round := 0; round < 30; round++ {
		prev := epoch
		epoch += uint64(1 + r.IntN(3))
		e := epoch
		redeliver := prev > 0 && r.IntN(6) == 0
		if redeliver {
			e = 1 + r.Uint64N(prev)
			epoch = prev // this round delivers nothing new
		}
		txn, err := tg.Begin(ctx, e)
		if err != nil {
			t.Fatalf("Begin %d: %v", e, err)
		}
		next := map[int32]string{}
		for k, v := range model {
			next[k] = v
		}
		for b := 0; b < 1+r.IntN(6); b++ {
			var changes []sink.Change
			for i := 0; i < 1+r.IntN(40); i++ {
				k := int32(r.IntN(keys))
				if r.IntN(deletes) == 0 {
					row, _ := value(k)
					changes = append(changes, sink.Change{Op: types.OpDelete, Row: row})
					delete(next, k)
					continue
				}
				row, txt := value(k)
				op := types.OpInsert
				if _, ok := next[k]; ok {
					op = types.OpUpdateInsert
				}
				changes = append(changes, sink.Change{Op: op, Row: row})
				next[k] = txt
			}
			if err := txn.Write(ctx, changes); err != nil {
				t.Fatalf("epoch %d: Write: %v", e, err)
			}
		}
		if !redeliver && r.IntN(5) == 0 {
			txn.Rollback()
			epoch = prev
		} else {
			if err := txn.Commit(ctx); err != nil {
				t.Fatalf("epoch %d: Commit: %v", e, err)
			}
			if !redeliver {
				model = next
			}
		}
		var want []string
		for _, v := range model {
			want = append(want, v)
		}
		slices.Sort(want)
		got := rows(t, pg, "SELECT k, n, s, ts, b, extra FROM tgt")
		if !slices.Equal(got, want) {
			t.Fatalf("round %d (epoch %d, redeliver %v): target\n%s\nwant\n%s", round, e, redeliver, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	if plain && x.probedIn == 0 {
		t.Fatal("no upsert batch went into the target directly")
	}
	// Reopened, the target reports the last committed epoch.
	if err := tg.Close(); err != nil {
		t.Fatal(err)
	}
	if has, err := tg.Open(ctx); err != nil || has != epoch {
		t.Fatalf("reopened: has %d, %v; want %d", has, err, epoch)
	}
}

// TestAppendOnlyPaths: an append-only sink whose columns all have the
// target's types COPYs into the target itself; one with a type modifier
// (or a cast) goes through the stage. Both keep every insert, drop the
// deletes, and deliver nothing for an epoch rolled back.
func TestAppendOnlyPaths(t *testing.T) {
	ctx := context.Background()
	copyChunk = 20_000 // several COPYs per epoch
	defer func() { copyChunk = 4 << 20 }()
	for _, tc := range []struct {
		ddl    string
		direct bool
	}{
		{"CREATE TABLE app (k bigint, s text)", true},
		{"CREATE TABLE app (k numeric(20,0), s varchar(4))", false},
	} {
		cfg := &sink.Config{Name: "app", Type: sink.TypeAppendOnly, Options: map[string]string{"table.name": "app"},
			Columns: []sink.Column{{Name: "k", Type: types.Int64}, {Name: "s", Type: types.Varchar}}}
		tg, pg := targetOf(t, cfg, tc.ddl)
		if _, err := tg.Open(ctx); err != nil {
			t.Fatal(err)
		}
		if d := tg.(*target).direct; d != tc.direct {
			t.Fatalf("%s: direct %v, want %v", tc.ddl, d, tc.direct)
		}
		var want []string
		for e := uint64(1); e <= 5; e++ {
			txn, err := tg.Begin(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			var add []string
			n := 5000
			if e == 5 {
				n = 3 // a small epoch: one INSERT with the rows as parameters (commitSmall)
			}
			for b := 0; b < 3; b++ {
				var changes []sink.Change
				for i := 0; i < n; i++ {
					k := int64(e)*100_000 + int64(b)*10_000 + int64(i)
					changes = append(changes, sink.Change{Op: types.OpInsert, Row: types.Row{types.DInt64(k), types.DVarchar("v")}},
						sink.Change{Op: types.OpDelete, Row: types.Row{types.DInt64(k), types.DVarchar("v")}})
					add = append(add, fmt.Sprintf("%d|v", k))
				}
				if err := txn.Write(ctx, changes); err != nil {
					t.Fatal(err)
				}
			}
			if e == 3 {
				txn.Rollback()
				continue
			}
			if err := txn.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			want = append(want, add...)
		}
		slices.Sort(want)
		if got := rows(t, pg, "SELECT k, s FROM app"); !slices.Equal(got, want) {
			t.Fatalf("%s: %d rows, want %d", tc.ddl, len(got), len(want))
		}
	}
}

// TestRowsReachTargetInKeyOrder: changes handed over in a shuffled order
// (as Runnel's log holds them, grouped by vnode) reach the target in the
// order of its key, which makes PostgreSQL's heap and index writes
// sequential (sortKey). Checked through the rows' physical order (ctid):
// a COPY appends rows in the order it reads them, and the new versions of
// updated rows go where the updates put them, in turn. Upsert sinks on
// both apply paths (MERGE, ON CONFLICT) with their new keys COPYed
// straight into the target (plain columns) or staged (a modifier), and an
// append-only sink into a table with a primary key; each epoch spans
// several COPY chunks.
func TestRowsReachTargetInKeyOrder(t *testing.T) {
	ctx := context.Background()
	copyChunk = 40_000
	defer func() { copyChunk = 4 << 20 }()
	r := rand.New(rand.NewPCG(seed(t), 11))
	const n = 5000
	cols := []sink.Column{{Name: "k", Type: types.Int64}, {Name: "v", Type: types.Int64}}
	for _, tc := range []struct {
		name, ddl string
		upsert    bool
		merge     bool
		direct    bool // new keys are COPYed into the target itself
	}{
		{"upsert plain merge", "CREATE TABLE tgt (k bigint PRIMARY KEY, v bigint)", true, true, true},
		{"upsert staged merge", "CREATE TABLE tgt (k bigint PRIMARY KEY, v numeric(20,0))", true, true, false},
		{"upsert staged on conflict", "CREATE TABLE tgt (k bigint PRIMARY KEY, v numeric(20,0))", true, false, false},
		{"append-only", "CREATE TABLE tgt (v bigint, k bigint PRIMARY KEY)", false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			useMerge = tc.merge
			defer func() { useMerge = true }()
			cfg := &sink.Config{Name: "s", Type: sink.TypeAppendOnly, Columns: cols, Options: map[string]string{"table.name": "tgt"}}
			if tc.upsert {
				cfg.Type, cfg.Key = sink.TypeUpsert, []int{0}
			}
			tg, pg := targetOf(t, cfg, tc.ddl)
			if _, err := tg.Open(ctx); err != nil {
				t.Fatal(err)
			}
			deliver := func(epoch uint64, op types.Op, v int64) {
				t.Helper()
				changes := make([]sink.Change, n)
				for i, k := range r.Perm(n) {
					changes[i] = sink.Change{Op: op, Row: types.Row{types.DInt64(int64(k)), types.DInt64(int64(k) + v)}}
				}
				txn, err := tg.Begin(ctx, epoch)
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i < n; i += 700 {
					if err := txn.Write(ctx, changes[i:min(i+700, n)]); err != nil {
						t.Fatal(err)
					}
				}
				if err := txn.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				// descents counts the rows whose key is below the one
				// before (~n/2 when shuffled).
				var c, descents int
				if err := pg.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE k < prev) FROM
					(SELECT k, lag(k) OVER (ORDER BY ctid) AS prev FROM tgt WHERE v = k + $1) o`, v).Scan(&c, &descents); err != nil {
					t.Fatal(err)
				}
				// COPYed into the target itself, the rows are in order
				// per chunk (one descent between two chunks at most);
				// applied from the stage, in order.
				limit := 0
				if epoch == 1 && tc.direct {
					limit = n * 26 / copyChunk // 26 bytes per row
				}
				if c != n || descents > limit {
					t.Fatalf("epoch %d: %d rows with v = k + %d, %d out of key order; want %d, at most %d", epoch, c, v, descents, n, limit)
				}
			}
			deliver(1, types.OpInsert, 0)
			if tc.upsert {
				deliver(2, types.OpUpdateInsert, 1)
			}
		})
	}
}

// TestNewKeysProbedTogether: an upsert epoch of new keys handed over in
// the worker's batches is probed once per maxCandRows rows, not once per
// batch (each probe is a round trip that waits for the COPY in flight),
// and its rows still go into the target itself; an epoch updating those
// keys goes through the stage without a probe (its changes are updates).
func TestNewKeysProbedTogether(t *testing.T) {
	ctx := context.Background()
	maxCandRows = 8192
	defer func() { maxCandRows = 64 << 10 }()
	cfg := &sink.Config{Name: "s", Type: sink.TypeUpsert, Key: []int{0}, Options: map[string]string{"table.name": "tgt"},
		Columns: []sink.Column{{Name: "k", Type: types.Int64}, {Name: "v", Type: types.Int64}}}
	tg, pg := targetOf(t, cfg, "CREATE TABLE tgt (k bigint PRIMARY KEY, v bigint)")
	if _, err := tg.Open(ctx); err != nil {
		t.Fatal(err)
	}
	x := tg.(*target)
	const n = 20_000
	deliver := func(epoch uint64, ops ...types.Op) {
		t.Helper()
		var changes []sink.Change
		for k := int64(0); k < n; k++ {
			for _, op := range ops {
				changes = append(changes, sink.Change{Op: op, Row: types.Row{types.DInt64(k), types.DInt64(k + int64(epoch))}})
			}
		}
		txn, err := tg.Begin(ctx, epoch)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(changes); i += 4096 {
			if err := txn.Write(ctx, changes[i:min(i+4096, len(changes))]); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		var c int
		if err := pg.QueryRow(ctx, "SELECT count(*) FROM tgt WHERE v = k + $1", int64(epoch)).Scan(&c); err != nil || c != n {
			t.Fatalf("epoch %d: %d rows with v = k + %d (%v), want %d", epoch, c, epoch, err, n)
		}
	}
	deliver(1, types.OpInsert)
	// 20,000 rows in batches of 4,096: gathered until 8,192, three groups.
	if x.probes != 3 || x.probedIn != 3 {
		t.Fatalf("new keys: %d probes, %d groups COPYed into the target; want 3 and 3", x.probes, x.probedIn)
	}
	deliver(2, types.OpUpdateDelete, types.OpUpdateInsert)
	if x.probes != 3 || x.probedIn != 3 {
		t.Fatalf("updates: %d probes in all, %d groups COPYed into the target; want 3 and 3", x.probes, x.probedIn)
	}
}

// TestFailedCommitRollsBack: an epoch whose apply statement fails in the
// commit's round trip (the apply, the progress row and COMMIT are sent
// together) leaves the target and its progress row as they were, and the
// connection ready for the next epoch (I8: the rows and the progress row
// commit together or not at all). Both ways in: staged (the error comes
// from the MERGE in the commit's pipeline) and COPYed into the target
// (the error comes from the COPY).
func TestFailedCommitRollsBack(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		ddl  string
		rows int64
	}{
		{"CREATE TABLE tgt (k bigint PRIMARY KEY, v numeric(20,0) CHECK (v < 1000))", 1},
		{"CREATE TABLE tgt (k bigint PRIMARY KEY, v bigint CHECK (v < 1000))", 1},
		{"CREATE TABLE tgt (k bigint PRIMARY KEY, v numeric(20,0) CHECK (v < 1000))", 100},
		{"CREATE TABLE tgt (k bigint PRIMARY KEY, v bigint CHECK (v < 1000))", 100},
	} {
		ddl := tc.ddl
		cfg := &sink.Config{Name: "s", Type: sink.TypeUpsert, Key: []int{0}, Options: map[string]string{"table.name": "tgt"},
			Columns: []sink.Column{{Name: "k", Type: types.Int64}, {Name: "v", Type: types.Int64}}}
		tg, pg := targetOf(t, cfg, ddl)
		if _, err := tg.Open(ctx); err != nil {
			t.Fatal(err)
		}
		deliver := func(epoch uint64, v int64) error {
			txn, err := tg.Begin(ctx, epoch)
			if err != nil {
				t.Fatal(err)
			}
			var changes []sink.Change
			for i := int64(0); i < tc.rows; i++ {
				changes = append(changes, sink.Change{Op: types.OpInsert, Row: types.Row{types.DInt64(int64(epoch)*1000 + i), types.DInt64(v)}})
			}
			if err := txn.Write(ctx, changes); err != nil {
				txn.Rollback()
				return err
			}
			return txn.Commit(ctx)
		}
		if err := deliver(1, 1); err != nil {
			t.Fatalf("%s: epoch 1: %v", ddl, err)
		}
		if err := deliver(2, 5000); err == nil || !strings.Contains(err.Error(), "check constraint") {
			t.Fatalf("%s: epoch 2 violating the check: %v, want its error", ddl, err)
		}
		if err := deliver(2, 2); err != nil {
			t.Fatalf("%s: epoch 2 again: %v", ddl, err)
		}
		if got := rows(t, pg, "SELECT count(*), sum(v) FROM tgt"); !slices.Equal(got, []string{fmt.Sprintf("%d|%d", 2*tc.rows, 3*tc.rows)}) {
			t.Fatalf("%s: target %v", ddl, got)
		}
		if got := rows(t, pg, "SELECT epoch FROM "+ProgressTable); !slices.Equal(got, []string{"2"}) {
			t.Fatalf("%s: progress %v", ddl, got)
		}
		_ = tg.Close()
	}
}
