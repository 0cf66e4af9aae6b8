package metastore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var bg = context.Background()

// eachBackend runs fn against a fresh SQLite file and a fresh PostgreSQL
// database.
func eachBackend(t *testing.T, fn func(t *testing.T, db *DB)) {
	t.Run("sqlite", func(t *testing.T) {
		fn(t, openTestSQLite(t, filepath.Join(t.TempDir(), "meta.db"), sqliteBusyTimeout))
	})
	t.Run("postgres", func(t *testing.T) {
		db, err := Open(bg, pgtest.NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		fn(t, db)
	})
}

func openTestSQLite(t *testing.T, path string, busy time.Duration) *DB {
	t.Helper()
	db, err := openSQLite(bg, path, busy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func count(t *testing.T, db *DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(bg, q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

var kvSteps = []Migration{
	{Version: 1, Name: "kv", SQL: `CREATE TABLE kv (k {{TEXT}} PRIMARY KEY, v {{BLOB}} NOT NULL, n {{BIGINT}} NOT NULL DEFAULT 0)`},
	{Version: 2, Name: "counter", SQL: `CREATE TABLE applied (step {{BIGINT}} NOT NULL); INSERT INTO applied VALUES (2)`},
}

func TestMigrateAppliesOnceAndIsIdempotent(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB) {
		for i := 0; i < 3; i++ {
			if err := db.Migrate(bg, "kvtest", kvSteps); err != nil {
				t.Fatalf("Migrate run %d: %v", i, err)
			}
		}
		// Step 2 holds two statements and ran exactly once.
		if n := count(t, db, `SELECT count(*) FROM applied`); n != 1 {
			t.Fatalf("step 2 ran %d times; want 1", n)
		}
		// {{BLOB}} became a column that round-trips arbitrary bytes.
		blob := []byte{0, 1, 2, 0xff, 0xfe, 'x'}
		if _, err := db.Exec(bg, `INSERT INTO kv (k, v) VALUES ($1, $2)`, "a", blob); err != nil {
			t.Fatal(err)
		}
		var got []byte
		if err := db.QueryRow(bg, `SELECT v FROM kv WHERE k = $1`, "a").Scan(&got); err != nil || !bytes.Equal(got, blob) {
			t.Fatalf("blob round trip = %v, %v; want %v", got, err, blob)
		}
		// A later binary adds a step: only it runs.
		more := append(append([]Migration(nil), kvSteps...),
			Migration{Version: 5, Name: "more", SQL: `INSERT INTO applied VALUES (5)`})
		if err := db.Migrate(bg, "kvtest", more); err != nil {
			t.Fatal(err)
		}
		if err := db.Migrate(bg, "kvtest", more); err != nil {
			t.Fatal(err)
		}
		if n := count(t, db, `SELECT count(*) FROM applied`); n != 2 {
			t.Fatalf("applied has %d rows; want 2 (steps 2 and 5 once each)", n)
		}
		applied, err := db.AppliedMigrations(bg, "kvtest")
		if err != nil {
			t.Fatal(err)
		}
		var vs []string
		for _, a := range applied {
			vs = append(vs, fmt.Sprintf("%d:%s", a.Version, a.Name))
		}
		if strings.Join(vs, " ") != "1:kv 2:counter 5:more" {
			t.Fatalf("recorded steps = %v", vs)
		}
	})
}

func TestMigratePerDialectText(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB) {
		steps := []Migration{{
			Version:  1,
			Name:     "which",
			SQLite:   `CREATE TABLE which (d TEXT); INSERT INTO which VALUES ('sqlite')`,
			Postgres: `CREATE TABLE which (d TEXT); INSERT INTO which VALUES ('postgres')`,
		}}
		if err := db.Migrate(bg, "dialect", steps); err != nil {
			t.Fatal(err)
		}
		var d string
		if err := db.QueryRow(bg, `SELECT d FROM which`).Scan(&d); err != nil || d != db.Dialect().String() {
			t.Fatalf("ran the %q text on %s (%v)", d, db.Dialect(), err)
		}
		// A step with no text for this dialect is refused.
		only := Migration{Version: 2, Name: "other only"}
		if db.Dialect() == Postgres {
			only.SQLite = `SELECT 1`
		} else {
			only.Postgres = `SELECT 1`
		}
		if err := db.Migrate(bg, "dialect", append(steps, only)); err == nil || !strings.Contains(err.Error(), "no SQL") {
			t.Fatalf("step without SQL for %s: %v; want an error", db.Dialect(), err)
		}
	})
}

func TestMigrateFailedStepRollsBackAndStops(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB) {
		steps := []Migration{
			{Version: 1, Name: "good", SQL: `CREATE TABLE good (x {{BIGINT}})`},
			{Version: 2, Name: "half", SQL: `CREATE TABLE half (x {{BIGINT}}); INSERT INTO no_such_table VALUES (1)`},
			{Version: 3, Name: "never", SQL: `CREATE TABLE never (x {{BIGINT}})`},
		}
		err := db.Migrate(bg, "fail", steps)
		if err == nil || !strings.Contains(err.Error(), "step 2 (half)") {
			t.Fatalf("Migrate = %v; want a failure naming step 2", err)
		}
		// Step 1 stays applied; step 2's first statement was rolled back;
		// step 3 never ran.
		if n := count(t, db, `SELECT count(*) FROM good`); n != 0 {
			t.Fatal("table good unreadable")
		}
		for _, tbl := range []string{"half", "never"} {
			if _, err := db.Exec(bg, `SELECT count(*) FROM `+tbl); err == nil {
				t.Fatalf("table %s exists after the failed migration", tbl)
			}
		}
		applied, _ := db.AppliedMigrations(bg, "fail")
		if len(applied) != 1 || applied[0].Version != 1 {
			t.Fatalf("recorded %+v; want only step 1", applied)
		}
		// Fixed step 2 (never applied, so editing it is fine) completes.
		steps[1].SQL = `CREATE TABLE half (x {{BIGINT}})`
		if err := db.Migrate(bg, "fail", steps); err != nil {
			t.Fatal(err)
		}
	})
}

func TestMigrateRefusesEditedStepAndDowngrade(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB) {
		if err := db.Migrate(bg, "guard", kvSteps); err != nil {
			t.Fatal(err)
		}
		edited := append([]Migration(nil), kvSteps...)
		edited[0].SQL = strings.Replace(edited[0].SQL, "n {{BIGINT}}", "m {{BIGINT}}", 1)
		if err := db.Migrate(bg, "guard", edited); err == nil || !strings.Contains(err.Error(), "different SQL") {
			t.Fatalf("Migrate with an edited applied step = %v; want a checksum error", err)
		}
		if err := db.Migrate(bg, "guard", kvSteps[:1]); err == nil || !strings.Contains(err.Error(), "newer than this binary") {
			t.Fatalf("Migrate with fewer steps than applied = %v; want a downgrade error", err)
		}
		// Components are independent: the same versions under another name
		// apply afresh.
		other := []Migration{{Version: 1, Name: "t", SQL: `CREATE TABLE other_component (x {{BIGINT}})`}}
		if err := db.Migrate(bg, "other", other); err != nil {
			t.Fatal(err)
		}
	})
}

func TestMigrateRejectsBadSteps(t *testing.T) {
	db := openTestSQLite(t, filepath.Join(t.TempDir(), "m.db"), sqliteBusyTimeout)
	for name, steps := range map[string][]Migration{
		"zero version":    {{Version: 0, SQL: "SELECT 1"}},
		"not increasing":  {{Version: 2, SQL: "SELECT 1"}, {Version: 2, SQL: "SELECT 1"}},
		"empty SQL":       {{Version: 1}},
		"bad placeholder": {{Version: 1, SQL: "CREATE TABLE x (a {{BLOBB}})"}},
	} {
		if err := db.Migrate(bg, "bad", steps); err == nil {
			t.Errorf("%s: Migrate succeeded; want an error", name)
		}
	}
	if err := db.Migrate(bg, "", nil); err == nil {
		t.Error("empty component accepted")
	}
}

// TestMigrateConcurrentMigrators starts several migrators on separate
// connections at once; each step must apply exactly once.
func TestMigrateConcurrentMigrators(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) { testConcurrentMigrators(t, backend) })
	}
}

func testConcurrentMigrators(t *testing.T, backend string) {
	{
		url := filepath.Join(t.TempDir(), "race.db")
		if backend == "postgres" {
			url = pgtest.NewDatabase(t)
		}
		steps := []Migration{
			{Version: 1, Name: "t", SQL: `CREATE TABLE runs (x BIGINT)`},
			{Version: 2, Name: "once", SQL: `INSERT INTO runs VALUES (1)`},
		}
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			db, err := Open(bg, url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				errs[i] = db.Migrate(bg, "race", steps)
			}(i)
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("migrator %d: %v", i, err)
			}
		}
		db, _ := Open(bg, url)
		defer db.Close()
		if n := count(t, db, `SELECT count(*) FROM runs`); n != 1 {
			t.Fatalf("step 2 applied %d times; want 1", n)
		}
	}
}

func TestExpandSQL(t *testing.T) {
	q := `CREATE TABLE t (a {{BLOB}}, b {{BIGINT}}, c {{TEXT}}, d {{BOOLEAN}}, e {{DOUBLE}})`
	for d, want := range map[Dialect]string{
		SQLite:   `CREATE TABLE t (a BLOB, b BIGINT, c TEXT, d INTEGER, e REAL)`,
		Postgres: `CREATE TABLE t (a BYTEA, b BIGINT, c TEXT, d BOOLEAN, e DOUBLE PRECISION)`,
	} {
		got, err := ExpandSQL(d, q)
		if err != nil || got != want {
			t.Errorf("ExpandSQL(%s) = %q, %v; want %q", d, got, err, want)
		}
	}
	if _, err := ExpandSQL(SQLite, "{{NOPE}}"); err == nil {
		t.Error("unknown placeholder accepted")
	}
}

func TestPlaceholdersInExec(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB) {
		if _, err := db.Exec(bg, `CREATE TABLE IF NOT EXISTS direct (k {{BIGINT}} PRIMARY KEY, v {{BLOB}})`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(bg, `INSERT INTO direct VALUES ($1, $2)`, 1, []byte{9}); err != nil {
			t.Fatal(err)
		}
	})
}

func setupKV(t *testing.T, db *DB) {
	t.Helper()
	if err := db.Migrate(bg, "kv", kvSteps); err != nil {
		t.Fatal(err)
	}
}

func kvCount(t *testing.T, db *DB, k string) int {
	return count(t, db, `SELECT count(*) FROM kv WHERE k = $1`, k)
}

func insertKV(k string) func(tx *Tx) error {
	return func(tx *Tx) error {
		_, err := tx.Exec(bg, `INSERT INTO kv (k, v) VALUES ($1, $2)`, k, []byte("v"))
		return err
	}
}

// TestTxOutcomeClassification covers every way a Tx can fail and checks
// both the verdict and what really persisted.
func TestTxOutcomeClassification(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB) {
		setupKV(t, db)
		if err := db.Tx(bg, insertKV("dup")); err != nil {
			t.Fatal(err)
		}
		myErr := errors.New("fn says no")
		for _, c := range []struct {
			name      string
			hook      func(point string) error
			fn        func(tx *Tx) error
			cancel    bool // cancel the context after fn ran
			definite  bool
			persisted bool
		}{
			{name: "fn error", fn: func(tx *Tx) error { insertKV("k1")(tx); return myErr }, definite: true},
			{name: "constraint violation in fn", fn: func(tx *Tx) error {
				if err := insertKV("k2")(tx); err != nil {
					return err
				}
				return insertKV("dup")(tx)
			}, definite: true},
			{name: "begin fails", hook: failAt(PointBegin), fn: insertKV("k3"), definite: true},
			{name: "fails before commit", hook: failAt(PointBeforeCommit), fn: insertKV("k4"), definite: true},
			{name: "context ends before commit", fn: insertKV("k5"), cancel: true, definite: true},
			{name: "ack lost after commit", hook: failAt(PointAfterCommit), fn: insertKV("k6"), definite: false, persisted: true},
			{name: "ambiguous commit that did not land", hook: func(p string) error {
				if p == PointBeforeCommit {
					return fmt.Errorf("connection reset: %w", ErrAmbiguousCommit)
				}
				return nil
			}, fn: insertKV("k7"), definite: false, persisted: false},
		} {
			t.Run(c.name, func(t *testing.T) {
				db.SetFaultHook(c.hook)
				defer db.SetFaultHook(nil)
				ctx := bg
				fn := c.fn
				if c.cancel {
					cctx, cancel := context.WithCancel(bg)
					defer cancel()
					ctx = cctx
					inner := fn
					fn = func(tx *Tx) error { err := inner(tx); cancel(); return err }
				}
				err := db.Tx(ctx, fn)
				if err == nil {
					t.Fatal("Tx succeeded; want an error")
				}
				if got := IsDefinitelyNotCommitted(err); got != c.definite {
					t.Fatalf("IsDefinitelyNotCommitted(%v) = %v; want %v", err, got, c.definite)
				}
				if errors.Is(err, ErrAmbiguousCommit) == c.definite {
					t.Fatalf("errors.Is(%v, ErrAmbiguousCommit) = %v; want %v", err, !c.definite, !c.definite)
				}
				// Wrapping by the caller keeps the verdict.
				if IsDefinitelyNotCommitted(fmt.Errorf("ddl: %w", err)) != c.definite {
					t.Fatal("verdict lost through wrapping")
				}
				persisted := count(t, db, `SELECT count(*) FROM kv WHERE k IN ('k1','k2','k3','k4','k5','k6','k7')`) > 0
				if persisted != c.persisted {
					t.Fatalf("persisted = %v; want %v", persisted, c.persisted)
				}
				if _, err := db.Exec(bg, `DELETE FROM kv WHERE k <> 'dup'`); err != nil {
					t.Fatal(err)
				}
			})
		}
		// fn's own error keeps its identity and message.
		err := db.Tx(bg, func(tx *Tx) error { return myErr })
		if !errors.Is(err, myErr) || err.Error() != myErr.Error() {
			t.Fatalf("fn error came back as %q; want %q unchanged", err, myErr)
		}
		for _, e := range []error{nil, myErr, context.Canceled} {
			if IsDefinitelyNotCommitted(e) {
				t.Fatalf("IsDefinitelyNotCommitted(%v) = true for an error not from Tx", e)
			}
		}
	})
}

func failAt(point string) func(string) error {
	return func(p string) error {
		if p == point {
			return fmt.Errorf("injected at %s", p)
		}
		return nil
	}
}

// TestTxCommitRejectedByServerIsDefinite makes COMMIT itself fail on a
// deferred constraint: the server answered, so nothing persisted.
func TestTxCommitRejectedByServerIsDefinite(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB) {
		steps := []Migration{{Version: 1, Name: "fk", SQL: `CREATE TABLE parent (id {{BIGINT}} PRIMARY KEY);
			CREATE TABLE child (id {{BIGINT}} PRIMARY KEY, parent {{BIGINT}} NOT NULL REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)`}}
		if err := db.Migrate(bg, "fk", steps); err != nil {
			t.Fatal(err)
		}
		err := db.Tx(bg, func(tx *Tx) error {
			_, err := tx.Exec(bg, `INSERT INTO child VALUES (1, 42)`) // no parent 42: fails only at COMMIT
			return err
		})
		if err == nil {
			t.Fatal("Tx with a dangling deferred reference committed")
		}
		if !strings.Contains(err.Error(), "commit") {
			t.Fatalf("error %v did not come from COMMIT; the test no longer covers a rejected COMMIT", err)
		}
		if !IsDefinitelyNotCommitted(err) {
			t.Fatalf("COMMIT rejected by the server classified ambiguous: %v", err)
		}
		if n := count(t, db, `SELECT count(*) FROM child`); n != 0 {
			t.Fatalf("%d rows persisted after a rejected COMMIT", n)
		}
	})
}

// TestTxBrokenConnectionAtCommitIsAmbiguous kills the PostgreSQL backend
// while the transaction waits to commit: the commit outcome is unknown.
func TestTxBrokenConnectionAtCommitIsAmbiguous(t *testing.T) {
	url := pgtest.NewDatabase(t)
	db, err := Open(bg, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	admin, err := Open(bg, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	setupKV(t, db)
	var pid int
	db.SetFaultHook(func(p string) error {
		if p == PointBeforeCommit {
			_, err := admin.Exec(bg, `SELECT pg_terminate_backend($1)`, pid)
			// Wait until the backend is gone so COMMIT meets a dead socket.
			for i := 0; i < 500 && count(t, admin, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid) > 0; i++ {
				time.Sleep(2 * time.Millisecond)
			}
			return err
		}
		return nil
	})
	err = db.Tx(bg, func(tx *Tx) error {
		if err := tx.QueryRow(bg, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			return err
		}
		return insertKV("lost")(tx)
	})
	db.SetFaultHook(nil)
	if err == nil {
		t.Fatal("commit on a terminated backend succeeded")
	}
	if IsDefinitelyNotCommitted(err) || !errors.Is(err, ErrAmbiguousCommit) {
		t.Fatalf("broken connection at COMMIT classified as definite: %v", err)
	}
}

// TestTxRetriesBusyBegin holds SQLite's write lock from another connection;
// Tx's BEGIN fails busy, is retried, and succeeds once the lock is gone.
func TestTxRetriesBusyBegin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	db := openTestSQLite(t, path, 50*time.Millisecond)
	setupKV(t, db)
	other := openTestSQLite(t, path, 50*time.Millisecond)
	locked := make(chan struct{})
	release := make(chan struct{})
	otherDone := make(chan error)
	go func() {
		otherDone <- other.Tx(bg, func(tx *Tx) error {
			if err := insertKV("other")(tx); err != nil {
				return err
			}
			close(locked)
			<-release
			return nil
		})
	}()
	<-locked
	begins := 0
	db.SetFaultHook(func(p string) error {
		if p == PointBegin {
			begins++
			if begins == 2 { // the first BEGIN met the lock; let it go now
				close(release)
				if err := <-otherDone; err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err := db.Tx(bg, insertKV("mine")); err != nil {
		t.Fatalf("Tx after a busy BEGIN: %v", err)
	}
	if begins != 2 {
		t.Fatalf("%d BEGIN attempts; want 2 (one busy, one retried)", begins)
	}
	if kvCount(t, db, "mine") != 1 || kvCount(t, db, "other") != 1 {
		t.Fatal("rows missing after the retried transaction")
	}
}

// TestTxRetryOnSerializationFailure raises a real 40001 from PostgreSQL in
// the first attempt: Tx gives up (fn is not known to be re-runnable),
// TxRetry runs fn again.
func TestTxRetryOnSerializationFailure(t *testing.T) {
	db, err := Open(bg, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	setupKV(t, db)
	attempts := 0
	fn := func(tx *Tx) error {
		attempts++
		if err := insertKV(fmt.Sprint("try", attempts))(tx); err != nil {
			return err
		}
		if attempts == 1 {
			_, err := tx.Exec(bg, `DO $x$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '40001'; END $x$`)
			return err
		}
		return nil
	}
	err = db.Tx(bg, fn)
	if err == nil || !IsDefinitelyNotCommitted(err) || attempts != 1 {
		t.Fatalf("Tx = %v after %d attempts; want the serialization failure, not retried", err, attempts)
	}
	attempts = 0
	if err := db.TxRetry(bg, 3, fn); err != nil {
		t.Fatalf("TxRetry = %v", err)
	}
	if attempts != 2 || kvCount(t, db, "try1") != 0 || kvCount(t, db, "try2") != 1 {
		t.Fatalf("attempts=%d try1=%d try2=%d; want 2, 0, 1", attempts, kvCount(t, db, "try1"), kvCount(t, db, "try2"))
	}
	// A non-transient error is never retried.
	attempts = 0
	err = db.TxRetry(bg, 3, func(tx *Tx) error { attempts++; return insertKV("try2")(tx) })
	if err == nil || attempts != 1 {
		t.Fatalf("TxRetry on a unique violation: %v after %d attempts; want 1 attempt", err, attempts)
	}
}

// Statements compiled by Prepare run inside transactions like any other:
// their effects commit or roll back with the transaction, a failing one
// reports its error, and the store still works after many transactions.
func TestPreparedStatementsInTx(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB) {
		setupKV(t, db)
		const ins = `INSERT INTO kv (k, v, n) VALUES ($1, $2, $3)`
		const get = `SELECT n FROM kv WHERE k = $1`
		if err := db.Prepare(bg, ins, get, ins); err != nil {
			t.Fatal(err)
		}
		if db.Dialect() == SQLite && (db.prepared(rebind(SQLite, ins)) == nil || db.prepared(rebind(SQLite, get)) == nil) {
			t.Fatal("SQLite: statements were not kept")
		}
		for i := range 50 {
			if err := db.Tx(bg, func(tx *Tx) error {
				if _, err := tx.Exec(bg, ins, fmt.Sprint(i), []byte("v"), i); err != nil {
					return err
				}
				var n int
				if err := tx.QueryRow(bg, get, fmt.Sprint(i)).Scan(&n); err != nil || n != i {
					return fmt.Errorf("read back %d: %d, %v", i, n, err)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		boom := errors.New("roll back")
		if err := db.Tx(bg, func(tx *Tx) error {
			if _, err := tx.Exec(bg, ins, "gone", []byte("v"), 1); err != nil {
				return err
			}
			return boom
		}); !errors.Is(err, boom) {
			t.Fatalf("rolled-back tx: %v", err)
		}
		err := db.Tx(bg, func(tx *Tx) error {
			_, err := tx.Exec(bg, ins, "7", []byte("v"), 1) // duplicate key
			return err
		})
		if err == nil || !IsDefinitelyNotCommitted(err) {
			t.Fatalf("duplicate key through a prepared statement: %v", err)
		}
		if got := count(t, db, `SELECT count(*) FROM kv`); got != 50 {
			t.Fatalf("%d rows, want 50", got)
		}
	})
}

// TestSQLitePathWithURICharacters: a data directory whose name holds
// characters with a meaning in a file: URI ('#', '?', '%', a space) keeps
// its metastore inside it. Before, "x#01/meta.db" opened the file "x"
// next to the directory — shared by every such directory, so a fresh
// server found another's catalog (TestDDLCrashPoints' subtest "…#01" failed
// with 42P07 on its first CREATE TABLE).
func TestSQLitePathWithURICharacters(t *testing.T) {
	parent := t.TempDir()
	for i, name := range []string{"run#01", "what?x=1", "100%", "a b&c"} {
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		db := openTestSQLite(t, filepath.Join(dir, "meta.db"), sqliteBusyTimeout)
		if _, err := db.Exec(bg, "CREATE TABLE mine (n INTEGER)"); err != nil {
			t.Fatalf("%s: a fresh metastore already has table mine (another directory's): %v", name, err)
		}
		if _, err := db.Exec(bg, "INSERT INTO mine VALUES (?)", i); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "meta.db")); err != nil {
			t.Fatalf("%s: the metastore is not in its directory: %v", name, err)
		}
	}
	ents, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 4 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("files beside the data directories: %v", names)
	}
}
