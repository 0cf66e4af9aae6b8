package metastore

import (
	"context"
	"errors"
	"testing"
)

// TestFenceRefusesCommit: an installed fence runs in every transaction
// after fn, on the same transaction; its refusal rolls back (definitely
// not committed, the fence's error unchanged), and UnfencedTx skips it.
func TestFenceRefusesCommit(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB) {
		if err := db.Migrate(bg, "test", kvSteps); err != nil {
			t.Fatal(err)
		}
		errNo := errors.New("fenced for the test")
		var sawRow bool
		db.SetFence(func(ctx context.Context, tx *Tx) error {
			// The fence sees fn's writes: it runs inside the transaction.
			sawRow = false
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM kv WHERE k = 'k1'`).Scan(&n); err != nil {
				return err
			}
			sawRow = n == 1
			return errNo
		})
		err := db.Tx(bg, insertKV("k1"))
		if !errors.Is(err, errNo) || !IsDefinitelyNotCommitted(err) {
			t.Fatalf("fenced Tx: err = %v, want the fence's error, not committed", err)
		}
		if !sawRow {
			t.Fatal("the fence did not run inside the transaction")
		}
		if n := count(t, db, `SELECT count(*) FROM kv`); n != 0 {
			t.Fatalf("a refused transaction left %d rows", n)
		}
		if err := db.UnfencedTx(bg, insertKV("k2")); err != nil {
			t.Fatalf("UnfencedTx: %v", err)
		}
		db.SetFence(nil)
		if err := db.Tx(bg, insertKV("k1")); err != nil {
			t.Fatalf("Tx after the fence was removed: %v", err)
		}
		if n := count(t, db, `SELECT count(*) FROM kv`); n != 2 {
			t.Fatalf("%d rows, want 2", n)
		}
	})
}
