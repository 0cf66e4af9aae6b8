package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/cluster"
	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/testutil/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var bg = context.Background()

// clock is a node's clock that a test moves by hand.
type clock struct{ off atomic.Int64 }

func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *clock) advance(d time.Duration) { c.off.Add(int64(d)) }

// store names one metadata store that two nodes open separately (as two
// processes would), on each backend.
type store struct {
	name string
	url  func(t *testing.T) string
	// pausePoint is where a leader's commit is held. On PostgreSQL it is
	// inside the transaction, just before the fence and COMMIT; SQLite's
	// write transaction would hold the database's write lock there (and
	// no other process could take over), so it is before BEGIN.
	pausePoint string
}

var stores = []store{
	{name: "sqlite", url: func(t *testing.T) string { return filepath.Join(t.TempDir(), "meta.db") }, pausePoint: metastore.PointBegin},
	{name: "postgres", url: func(t *testing.T) string { return pgtest.NewDatabase(t) }, pausePoint: metastore.PointBeforeCommit},
}

func open(t *testing.T, url string) *metastore.DB {
	t.Helper()
	db, err := metastore.Open(bg, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := cluster.Migrate(bg, db); err != nil {
		t.Fatal(err)
	}
	return db
}

// ttl is long: the tests move the nodes' clocks by hand, and a loaded
// machine must not let a lease lapse by itself between two steps.
const ttl = time.Minute

func newLeader(db *metastore.DB, holder string, c *clock) *cluster.Leader {
	return cluster.NewLeader(cluster.LeaderConfig{DB: db, Holder: holder, TTL: ttl, Clock: c.now})
}

// nodes are two nodes on one store, A leading (term 1), B a standby.
type nodes struct {
	dbA, dbB       *metastore.DB
	a, b           *cluster.Leader
	clockA, clockB clock
}

func twoNodes(t *testing.T, url string) *nodes {
	t.Helper()
	n := &nodes{dbA: open(t, url), dbB: open(t, url)}
	n.a, n.b = newLeader(n.dbA, "node-a", &n.clockA), newLeader(n.dbB, "node-b", &n.clockB)
	if took, _, err := n.a.TryAcquire(bg, false); err != nil || !took {
		t.Fatalf("A acquire: took=%v err=%v", took, err)
	}
	return n
}

// pauser holds the transactions of one store at a fault point while armed.
type pauser struct {
	armed   atomic.Bool
	paused  chan struct{}
	release chan struct{}
}

func pauseAt(db *metastore.DB, point string) *pauser {
	p := &pauser{paused: make(chan struct{}), release: make(chan struct{})}
	db.SetFaultHook(func(pt string) error {
		if pt == point && p.armed.CompareAndSwap(true, false) {
			close(p.paused)
			<-p.release
		}
		return nil
	})
	return p
}

// TestPausedLeaderCannotCommit is the fencing story of issue 16 on both
// metastores, with the real catalog and storage engine: leader A is held
// at its commit point past its lease; standby B takes over (term 2); A
// resumes and its commit — a catalog change, then a version delta — is
// refused with ErrFenced, definitely not committed, and A knows it lost
// (I1/I2: only one writer of the catalog and the version). Without the
// fence A's commits would land after B's takeover.
func TestPausedLeaderCannotCommit(t *testing.T) {
	for _, st := range stores {
		for _, paused := range []string{"catalog", "version"} {
			t.Run(st.name+"/"+paused, func(t *testing.T) { pausedLeader(t, st, paused) })
		}
	}
}

func pausedLeader(t *testing.T, st store, paused string) {
	n := twoNodes(t, st.url(t))
	dbA, dbB, a, b, clockB := n.dbA, n.dbB, n.a, n.b, &n.clockB
	if a.Term() != 1 {
		t.Fatalf("A's term = %d, want 1", a.Term())
	}
	dbA.SetFence(a.Fence)
	catA, err := catalog.Open(bg, dbA)
	if err != nil {
		t.Fatal(err)
	}
	objects := objstore.NewMem()
	engA, err := storage.Open(bg, storage.Options{Store: objects, Meta: dbA, DisableAutoCompaction: true, GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer engA.Close()
	if _, err := catA.CreateDatabase(bg, "before", "root"); err != nil {
		t.Fatalf("leader's catalog commit: %v", err)
	}
	if err := engA.RegisterTables(bg, 1); err != nil {
		t.Fatal(err)
	}
	if err := engA.Ingest(1, 1, []storage.KV{{Key: []byte("k1"), Value: []byte("v1")}}); err != nil {
		t.Fatal(err)
	}
	if err := engA.Commit(bg, 1); err != nil {
		t.Fatalf("leader's version commit: %v", err)
	}

	// B, a standby, cannot take over while A's lease runs.
	if took, li, err := b.TryAcquire(bg, false); err != nil || took || li.Term != 1 || li.Holder != "node-a" {
		t.Fatalf("B acquired a live lease: took=%v lease=%+v err=%v", took, li, err)
	}

	// A's catalog commit or version delta is held at its commit
	// point; A's lease lapses (B's clock passes it); B takes over.
	if err := engA.Ingest(2, 1, []storage.KV{{Key: []byte("k2"), Value: []byte("v2")}}); err != nil {
		t.Fatal(err)
	}
	p := pauseAt(dbA, st.pausePoint)
	p.armed.Store(true)
	done := make(chan error, 1)
	go func() {
		if paused == "catalog" {
			_, err := catA.CreateDatabase(bg, "late", "root")
			done <- err
		} else {
			done <- engA.Commit(bg, 2)
		}
	}()
	<-p.paused
	clockB.advance(ttl + time.Second)
	if took, li, err := b.TryAcquire(bg, false); err != nil || !took || li.Term != 2 {
		t.Fatalf("B did not take over the lapsed lease: took=%v lease=%+v err=%v", took, li, err)
	}
	dbB.SetFence(b.Fence)
	close(p.release)
	err = <-done
	if !errors.Is(err, cluster.ErrFenced) || !metastore.IsDefinitelyNotCommitted(err) {
		t.Fatalf("paused leader's %s commit: err = %v, want ErrFenced, not committed", paused, err)
	}
	t.Logf("refused: %v", err)
	select {
	case <-a.Lost():
	default:
		t.Fatal("A does not know it lost the leadership")
	}
	if a.Term() != 0 {
		t.Fatalf("A's term after losing = %d", a.Term())
	}

	// A stepped down: no later commit of either kind sneaks through.
	if _, err := catA.CreateDatabase(bg, "later", "root"); !errors.Is(err, cluster.ErrNotLeader) {
		t.Fatalf("old leader's later catalog commit: err = %v, want ErrNotLeader", err)
	}
	if err := engA.Commit(bg, 2); !errors.Is(err, cluster.ErrNotLeader) && !errors.Is(err, cluster.ErrFenced) {
		t.Fatalf("old leader's later version commit: err = %v, want refused", err)
	}
	if err := a.Renew(bg); !errors.Is(err, cluster.ErrNotLeader) {
		t.Fatalf("old leader renewed: %v", err)
	}

	// B sees only what A committed while it led, and commits.
	catB, err := catalog.Open(bg, dbB)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := catB.DatabaseByName("before"); err != nil {
		t.Fatalf("A's committed database is missing: %v", err)
	}
	for _, name := range []string{"late", "later"} {
		if _, err := catB.DatabaseByName(name); err == nil {
			t.Fatalf("A's refused commit (database %s) is visible", name)
		}
	}
	engB, err := storage.Open(bg, storage.Options{Store: objects, Meta: dbB, DisableAutoCompaction: true, GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer engB.Close()
	if got := engB.CommittedEpoch(); got != 1 {
		t.Fatalf("committed epoch seen by the new leader = %d, want 1", got)
	}
	if _, err := catB.CreateDatabase(bg, "after", "root"); err != nil {
		t.Fatalf("new leader's commit: %v", err)
	}
}

// TestLeaseRenewalAndForce: a renewed lease keeps a standby out; a
// forced acquire (role all) takes over a live lease, and the renewal of
// the superseded leader is refused.
func TestLeaseRenewalAndForce(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			n := twoNodes(t, st.url(t))
			dbA, a, b, clockA, clockB := n.dbA, n.a, n.b, &n.clockA, &n.clockB
			clockA.advance(ttl / 2)
			clockB.advance(ttl + ttl/4) // past the first lease, within the renewed one
			if err := a.Renew(bg); err != nil {
				t.Fatal(err)
			}
			if took, _, err := b.TryAcquire(bg, false); err != nil || took {
				t.Fatalf("B took a renewed lease: took=%v err=%v", took, err)
			}
			if took, li, err := b.TryAcquire(bg, true); err != nil || !took || li.Term != 2 {
				t.Fatalf("forced acquire: took=%v lease=%+v err=%v", took, li, err)
			}
			err := a.Renew(bg)
			var fe *cluster.FencedError
			if !errors.As(err, &fe) || fe.Mine != 1 || fe.Current != 2 || fe.Holder != "node-b" {
				t.Fatalf("superseded renewal: %v", err)
			}
			li, err := cluster.Info(bg, dbA)
			if err != nil || li.Term != 2 || li.Holder != "node-b" {
				t.Fatalf("Info = %+v, %v", li, err)
			}
			// A contends again as a standby and gets term 3 once B's lease lapses.
			if took, _, err := a.TryAcquire(bg, false); err != nil || took {
				t.Fatalf("A took B's live lease: took=%v err=%v", took, err)
			}
			clockA.advance(3 * ttl)
			if took, li, err := a.TryAcquire(bg, false); err != nil || !took || li.Term != 3 {
				t.Fatalf("A re-acquire: took=%v lease=%+v err=%v", took, li, err)
			}
		})
	}
}

// TestConcurrentCampaignsOneWinner: nodes racing for a fresh store end
// with one leader per term.
func TestConcurrentCampaignsOneWinner(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			url := st.url(t)
			const n = 4
			leaders := make([]*cluster.Leader, n)
			errs := make(chan error, n)
			var c clock
			for i := range leaders {
				leaders[i] = newLeader(open(t, url), fmt.Sprintf("node-%d", i), &c)
			}
			for _, l := range leaders {
				go func() {
					// One attempt each, all at once: a loser either sees the
					// winner's live lease or (PostgreSQL) fails to insert
					// the same first term row.
					took, _, err := l.TryAcquire(bg, false)
					if err != nil && took {
						err = fmt.Errorf("took the lease and failed: %w", err)
					} else {
						err = nil
					}
					errs <- err
				}()
			}
			for range leaders {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			winners := 0
			for _, l := range leaders {
				if l.Term() != 0 {
					winners++
					if l.Term() != 1 {
						t.Errorf("winner's term %d, want 1", l.Term())
					}
				}
			}
			if winners != 1 {
				t.Fatalf("%d leaders, want 1", winners)
			}
		})
	}
}

// TestStoppedBetweenCheckAndCommit (PostgreSQL): a leader stopped right
// after its fence check holds the term row's share lock, which a
// takeover waits for. The check bounds the transaction's idle time to
// the lease, so the server ends the stopped leader's session, the
// standby takes over within about a lease, and the stopped commit never
// lands. Without the bound the takeover would wait as long as the
// process stays stopped.
func TestStoppedBetweenCheckAndCommit(t *testing.T) {
	url := pgtest.NewDatabase(t)
	dbA, dbB := open(t, url), open(t, url)
	var clockA, clockB clock
	const short = 500 * time.Millisecond
	a := cluster.NewLeader(cluster.LeaderConfig{DB: dbA, Holder: "node-a", TTL: short, Clock: clockA.now})
	b := cluster.NewLeader(cluster.LeaderConfig{DB: dbB, Holder: "node-b", TTL: short, Clock: clockB.now})
	if took, _, err := a.TryAcquire(bg, false); err != nil || !took {
		t.Fatalf("A acquire: took=%v err=%v", took, err)
	}
	dbA.SetFence(a.Fence)
	catA, err := catalog.Open(bg, dbA)
	if err != nil {
		t.Fatal(err)
	}
	p := pauseAt(dbA, metastore.PointFenced)
	p.armed.Store(true)
	done := make(chan error, 1)
	go func() {
		_, err := catA.CreateDatabase(bg, "late", "root")
		done <- err
	}()
	<-p.paused
	clockB.advance(time.Minute)
	start := time.Now()
	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	took, li, err := b.TryAcquire(ctx, false)
	if err != nil || !took || li.Term != 2 {
		t.Fatalf("takeover past a stopped leader: took=%v lease=%+v err=%v", took, li, err)
	}
	t.Logf("takeover waited %v for the stopped leader's session to end", time.Since(start))
	close(p.release)
	if err := <-done; err == nil {
		t.Fatal("the stopped leader's commit succeeded after the takeover")
	}
	catB, err := catalog.Open(bg, dbB)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := catB.DatabaseByName("late"); err == nil {
		t.Fatal("the stopped leader's commit is visible")
	}
}
