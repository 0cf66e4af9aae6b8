package cluster

import (
	"context"
	"strconv"
	"time"

	"github.com/runneldb/runnel/internal/metastore"
)

// migrations is the cluster component's schema.
var migrations = []metastore.Migration{
	{Version: 1, Name: "meta leadership term and lease, worker nodes", SQL: `
CREATE TABLE cluster_meta_term (
	id INTEGER PRIMARY KEY,
	term {{BIGINT}} NOT NULL,
	holder {{TEXT}} NOT NULL,
	since_ms {{BIGINT}} NOT NULL
);
CREATE TABLE cluster_meta_lease (
	id INTEGER PRIMARY KEY,
	term {{BIGINT}} NOT NULL,
	expires_ms {{BIGINT}} NOT NULL
);
CREATE TABLE cluster_worker_node (
	id {{BIGINT}} PRIMARY KEY,
	host {{TEXT}} NOT NULL,
	port INTEGER NOT NULL,
	roles {{TEXT}} NOT NULL,
	state {{TEXT}} NOT NULL,
	parallelism INTEGER NOT NULL,
	started_at_ms {{BIGINT}} NOT NULL,
	heartbeat_ms {{BIGINT}} NOT NULL,
	expires_ms {{BIGINT}} NOT NULL
)`},
}

// Migrations are the cluster component's schema steps (a backup restores
// them with the tables' rows).
func Migrations() []metastore.Migration { return append([]metastore.Migration(nil), migrations...) }

// Migrate creates or upgrades the cluster tables.
func Migrate(ctx context.Context, db *metastore.DB) error {
	return db.Migrate(ctx, "cluster", migrations)
}

// lockSuffix is the row-lock clause of a SELECT on PostgreSQL (SQLite has
// none: its write transactions hold the database's write lock).
func lockSuffix(d metastore.Dialect, clause string) string {
	if d == metastore.Postgres {
		return " " + clause
	}
	return ""
}

func toMS(t time.Time) int64 { return t.UnixMilli() }

func fromMS(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// boundIdle limits, on PostgreSQL, how long this transaction may sit idle
// with its row locks: a process stopped inside it (SIGSTOP, a paused VM)
// has its session ended by the server after d, which releases the locks
// that a takeover or another node's heartbeat waits for. Nothing it did
// commits then (the COMMIT never arrives). SQLite has no such setting.
func boundIdle(ctx context.Context, tx *metastore.Tx, d time.Duration) error {
	if tx.Dialect() != metastore.Postgres {
		return nil
	}
	var v string
	return tx.QueryRow(ctx, `SELECT set_config('idle_in_transaction_session_timeout', $1, true)`, idleSetting(d)).Scan(&v)
}

func idleSetting(d time.Duration) string {
	return strconv.FormatInt(max(d.Milliseconds(), 1), 10)
}
