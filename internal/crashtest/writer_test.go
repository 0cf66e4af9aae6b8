package crashtest

import (
	"context"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// keySpan separates the key ranges of the writers: writer w owns ids in
// [w*keySpan, (w+1)*keySpan).
const keySpan = 1_000_000_000

// statementLimit bounds one statement: a statement that hangs (the server
// neither answers nor dies) fails the test instead of the test timing out.
const statementLimit = 30 * time.Second

// missingAcct is an acct id (offset inside a writer's range) never
// allocated, so ev rows pointing at it never join.
const missingAcct = keySpan - 1

type acctRow struct {
	grp    int
	amount int64
}

type evRow struct {
	acct int64
	qty  int
}

// change is one statement's effect on the rows it touches: absent rows are
// nil. An in-flight change must be found wholly before or wholly after.
type change struct {
	sql                   string
	acctBefore, acctAfter map[int64]*acctRow
	evBefore, evAfter     map[int64]*evRow
	wantRows              int64
}

// writer owns a key range of acct and ev and an exact model of its rows.
type writer struct {
	id      int
	rng     *rand.Rand
	nextKey int64
	acct    map[int64]acctRow
	ev      map[int64]evRow
	pending *change // the statement in flight when the server went away
	acked   int     // statements acknowledged so far
}

func newWriter(id int, seed int64) *writer {
	return &writer{id: id, rng: rand.New(rand.NewSource(seed)), nextKey: 1,
		acct: map[int64]acctRow{}, ev: map[int64]evRow{}}
}

func (w *writer) freshKey() int64 {
	k := int64(w.id)*keySpan + w.nextKey
	w.nextKey++
	return k
}

func (w *writer) randomAcct() (int64, bool) {
	if len(w.acct) == 0 {
		return 0, false
	}
	keys := slices.Sorted(maps.Keys(w.acct))
	return keys[w.rng.Intn(len(keys))], true
}

func (w *writer) randomEv() (int64, bool) {
	if len(w.ev) == 0 {
		return 0, false
	}
	keys := slices.Sorted(maps.Keys(w.ev))
	return keys[w.rng.Intn(len(keys))], true
}

func ptr[T any](v T) *T { return &v }

// next picks the next statement from the model.
func (w *writer) next() *change {
	c := &change{acctBefore: map[int64]*acctRow{}, acctAfter: map[int64]*acctRow{},
		evBefore: map[int64]*evRow{}, evAfter: map[int64]*evRow{}}
	r := w.rng.Intn(100)
	switch {
	case r < 30 || len(w.acct) == 0: // multi-row insert of fresh accounts
		n := 1 + w.rng.Intn(4)
		if w.rng.Intn(10) == 0 {
			// Large enough for the bulk insert path (frontend
			// bulkInsertMinRows): a SIGKILL must not leave it half applied.
			n = 64 + w.rng.Intn(200)
		}
		var vals []string
		for range n {
			k := w.freshKey()
			row := acctRow{grp: w.rng.Intn(8), amount: w.rng.Int63n(1000) - 200}
			vals = append(vals, fmt.Sprintf("(%d, %d, %d, %d)", k, row.grp, row.amount, w.id))
			c.acctBefore[k], c.acctAfter[k] = nil, ptr(row)
		}
		c.sql = "INSERT INTO acct (id, grp, amount, writer) VALUES " + strings.Join(vals, ", ")
		c.wantRows = int64(n)
	case r < 55: // multi-row insert of events, some pointing nowhere
		n := 1 + w.rng.Intn(3)
		var vals []string
		for range n {
			k := w.freshKey()
			a, _ := w.randomAcct()
			if w.rng.Intn(8) == 0 {
				a = int64(w.id)*keySpan + missingAcct
			}
			row := evRow{acct: a, qty: w.rng.Intn(10)}
			vals = append(vals, fmt.Sprintf("(%d, %d, %d)", k, row.acct, row.qty))
			c.evBefore[k], c.evAfter[k] = nil, ptr(row)
		}
		c.sql = "INSERT INTO ev (id, acct_id, qty) VALUES " + strings.Join(vals, ", ")
		c.wantRows = int64(n)
	case r < 70: // move one account to another group
		k, _ := w.randomAcct()
		old := w.acct[k]
		row := acctRow{grp: w.rng.Intn(8), amount: w.rng.Int63n(1000) - 200}
		c.sql = fmt.Sprintf("UPDATE acct SET grp = %d, amount = %d WHERE id = %d", row.grp, row.amount, k)
		c.acctBefore[k], c.acctAfter[k] = ptr(old), ptr(row)
		c.wantRows = 1
	case r < 80: // multi-row update
		m, d := 2+w.rng.Intn(4), 1+w.rng.Int63n(50)
		rem := w.rng.Intn(m)
		for k, old := range w.acct {
			if k%int64(m) == int64(rem) {
				c.acctBefore[k] = ptr(old)
				c.acctAfter[k] = &acctRow{grp: old.grp, amount: old.amount + d}
			}
		}
		c.sql = fmt.Sprintf("UPDATE acct SET amount = amount + %d WHERE writer = %d AND id %% %d = %d", d, w.id, m, rem)
		c.wantRows = int64(len(c.acctAfter))
	case r < 88: // delete one account
		k, _ := w.randomAcct()
		c.sql = fmt.Sprintf("DELETE FROM acct WHERE id = %d", k)
		c.acctBefore[k], c.acctAfter[k] = ptr(w.acct[k]), nil
		c.wantRows = 1
	case r < 95: // delete every event of one account (multi-row)
		a, ok := w.randomAcct()
		if !ok || w.rng.Intn(4) == 0 {
			a = int64(w.id)*keySpan + missingAcct
		}
		for k, old := range w.ev {
			if old.acct == a {
				c.evBefore[k], c.evAfter[k] = ptr(old), nil
			}
		}
		c.sql = fmt.Sprintf("DELETE FROM ev WHERE acct_id = %d", a)
		c.wantRows = int64(len(c.evBefore))
	default: // update one event
		k, ok := w.randomEv()
		if !ok {
			return w.next()
		}
		old := w.ev[k]
		c.sql = fmt.Sprintf("UPDATE ev SET qty = qty + 1 WHERE id = %d", k)
		c.evBefore[k], c.evAfter[k] = ptr(old), &evRow{acct: old.acct, qty: old.qty + 1}
		c.wantRows = 1
	}
	return c
}

// apply makes the model take c's after-state.
func (w *writer) apply(c *change) {
	for k, r := range c.acctAfter {
		if r == nil {
			delete(w.acct, k)
		} else {
			w.acct[k] = *r
		}
	}
	for k, r := range c.evAfter {
		if r == nil {
			delete(w.ev, k)
		} else {
			w.ev[k] = *r
		}
	}
}

// run issues statements on a session to url until stop is set. An error
// while dying is set (the server is being killed) leaves the statement
// pending; any other error fails the test.
func (w *writer) run(t *testing.T, url string, stop, dying *atomic.Bool) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		if !dying.Load() {
			t.Errorf("writer %d: connect: %v", w.id, err)
		}
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SET implicit_flush = true"); err != nil {
		if !dying.Load() {
			t.Errorf("writer %d: SET implicit_flush: %v", w.id, err)
		}
		return
	}
	for !stop.Load() {
		c := w.next()
		sctx, cancel := context.WithTimeout(ctx, statementLimit)
		tag, err := conn.Exec(sctx, c.sql)
		hung := sctx.Err() != nil
		cancel()
		if err != nil {
			w.pending = c
			if hung {
				t.Errorf("writer %d: %s: no answer within %v", w.id, c.sql, statementLimit)
			} else if !dying.Load() {
				t.Errorf("writer %d: %s: %v", w.id, c.sql, err)
			}
			return
		}
		if got := tag.RowsAffected(); got != c.wantRows {
			t.Errorf("writer %d: %s: %d rows affected; want %d", w.id, c.sql, got, c.wantRows)
		}
		w.apply(c)
		w.acked++
	}
}

// resolve decides a pending statement from the recovered rows: it must be
// wholly applied or wholly absent. The model takes the outcome.
func (w *writer) resolve(t *testing.T, acct map[int64]acctRow, ev map[int64]evRow) (applied bool) {
	c := w.pending
	if c == nil {
		return false
	}
	w.pending = nil
	before := matches(c.acctBefore, acct) && matches(c.evBefore, ev)
	after := matches(c.acctAfter, acct) && matches(c.evAfter, ev)
	switch {
	case after && !before:
		w.apply(c)
		return true
	case before:
		return false // also covers statements that touch no row
	default:
		t.Errorf("writer %d: statement in flight at the crash is partially applied: %s\n  acct before %s after %s\n  ev before %s after %s\n  recovered acct %s ev %s",
			w.id, c.sql, fmtRows(c.acctBefore), fmtRows(c.acctAfter), fmtRows(c.evBefore), fmtRows(c.evAfter),
			fmtObserved(c.acctAfter, acct), fmtObserved(c.evAfter, ev))
		// Adopt what is there so later iterations check from the truth.
		for k := range c.acctAfter {
			if r, ok := acct[k]; ok {
				w.acct[k] = r
			} else {
				delete(w.acct, k)
			}
		}
		for k := range c.evAfter {
			if r, ok := ev[k]; ok {
				w.ev[k] = r
			} else {
				delete(w.ev, k)
			}
		}
		return false
	}
}

func matches[R comparable](want map[int64]*R, got map[int64]R) bool {
	for k, r := range want {
		g, ok := got[k]
		if (r == nil) == ok || (r != nil && *r != g) {
			return false
		}
	}
	return true
}

func fmtRows[R any](m map[int64]*R) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] == nil {
			parts = append(parts, fmt.Sprintf("%d:absent", k))
		} else {
			parts = append(parts, fmt.Sprintf("%d:%+v", k, *m[k]))
		}
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func fmtObserved[R any](keys map[int64]*R, got map[int64]R) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if r, ok := got[k]; ok {
			parts = append(parts, fmt.Sprintf("%d:%+v", k, r))
		} else {
			parts = append(parts, fmt.Sprintf("%d:absent", k))
		}
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// compareModel reports every difference between the writer's model and
// the recovered rows of its key range.
func (w *writer) compareModel(t *testing.T, acct map[int64]acctRow, ev map[int64]evRow) {
	lo, hi := int64(w.id)*keySpan, int64(w.id+1)*keySpan
	diffs := 0
	report := func(format string, args ...any) {
		diffs++
		if diffs <= 10 {
			t.Errorf("writer %d: "+format, append([]any{w.id}, args...)...)
		}
	}
	for k, want := range w.acct {
		if got, ok := acct[k]; !ok {
			report("acknowledged acct row %d %+v is missing after recovery", k, want)
		} else if got != want {
			report("acct row %d = %+v after recovery; want %+v", k, got, want)
		}
	}
	for k, got := range acct {
		if k >= lo && k < hi {
			if _, ok := w.acct[k]; !ok {
				report("acct row %d %+v present after recovery; never acknowledged or deleted", k, got)
			}
		}
	}
	for k, want := range w.ev {
		if got, ok := ev[k]; !ok {
			report("acknowledged ev row %d %+v is missing after recovery", k, want)
		} else if got != want {
			report("ev row %d = %+v after recovery; want %+v", k, got, want)
		}
	}
	for k, got := range ev {
		if k >= lo && k < hi {
			if _, ok := w.ev[k]; !ok {
				report("ev row %d %+v present after recovery; never acknowledged or deleted", k, got)
			}
		}
	}
	if diffs > 10 {
		t.Errorf("writer %d: ... %d differences in all", w.id, diffs)
	}
}
