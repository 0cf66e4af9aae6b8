package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

var (
	sharedMu  sync.Mutex
	shared    *Cluster
	sharedErr error
	// logical is the second shared cluster, with LogicalSettings (CDC
	// tests); the plain one keeps the defaults its other users expect.
	logical    *Cluster
	logicalErr error
	dbSeq      atomic.Int64
)

// Shared returns the test binary's shared cluster, starting it on first use.
// If the PostgreSQL binaries are missing the test is skipped, or failed when
// CI=true. A failure to start is remembered and reported to every later
// caller without retrying.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	return sharedCluster(t, &shared, &sharedErr, nil)
}

// SharedLogical is Shared for a cluster started with LogicalSettings
// (wal_level=logical), for change-data-capture tests.
func SharedLogical(t testing.TB) *Cluster {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	return sharedCluster(t, &logical, &logicalErr, LogicalSettings)
}

func sharedCluster(t testing.TB, c **Cluster, cerr *error, settings map[string]string) *Cluster {
	t.Helper()
	if *c == nil && *cerr == nil {
		*c, *cerr = startCluster("", settings)
	}
	if *cerr != nil {
		if errors.Is(*cerr, ErrNoBinaries) && os.Getenv("CI") != "true" {
			t.Skipf("pgtest: %v", *cerr)
		}
		t.Fatalf("pgtest: %v", *cerr)
	}
	return *c
}

// Start returns a URL for the shared cluster's "postgres" database. Tests that
// create objects should prefer NewDatabase, which isolates them.
func Start(t testing.TB) string {
	t.Helper()
	return Shared(t).URL("postgres")
}

// NewDatabase creates a fresh, empty database in the shared cluster and
// returns its URL; the database is dropped (its sessions terminated) when the
// test ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	return NewDatabaseIn(t, Shared(t))
}

// NewLogicalDatabase is NewDatabase in the SharedLogical cluster.
func NewLogicalDatabase(t testing.TB) string {
	t.Helper()
	return NewDatabaseIn(t, SharedLogical(t))
}

// NewDatabaseIn is NewDatabase in cluster c.
func NewDatabaseIn(t testing.TB, c *Cluster) string {
	t.Helper()
	name := databaseName(t.Name(), dbSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := adminExec(ctx, c, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := adminExec(ctx, c, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return c.URL(name)
}

func adminExec(ctx context.Context, c *Cluster, sql string) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// databaseName derives a readable, unique identifier (≤ 63 bytes) from a
// test name.
func databaseName(testName string, seq int64) string {
	var b strings.Builder
	for _, r := range strings.ToLower(testName) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	base := b.String()
	if len(base) > 40 {
		base = base[:40]
	}
	return fmt.Sprintf("t%d_%s", seq, base)
}

// StopShared stops the shared cluster if one was started. Main calls it;
// packages with their own TestMain call it after m.Run.
func StopShared() error {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	var err error
	if shared != nil {
		err = shared.Stop()
		shared, sharedErr = nil, errors.New("pgtest: shared cluster already stopped")
	}
	if logical != nil {
		if lerr := logical.Stop(); err == nil {
			err = lerr
		}
		logical, logicalErr = nil, errors.New("pgtest: shared cluster already stopped")
	}
	return err
}

// Main is a TestMain body: it runs the tests, stops the shared cluster and
// exits with the tests' status.
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	if err := StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// GoleakOptions lists the goroutines pgtest keeps for the life of the test
// binary (the locked spawner thread, and a waiter per running cluster), for
// packages that combine pgtest with goleak.VerifyTestMain.
func GoleakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("github.com/runneldb/runnel/internal/testutil/pgtest.startOnLockedThread.func1.1"),
		goleak.IgnoreAnyFunction("github.com/runneldb/runnel/internal/testutil/pgtest.(*Cluster).start.func1"),
	}
}
