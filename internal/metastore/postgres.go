package metastore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// openPostgres opens a PostgreSQL metastore.
//
// A metastore commit is what makes an epoch committed, so it is what FLUSH
// acknowledges (I7): every connection therefore runs with
// synchronous_commit on at least. A server (or database, or role) whose
// default is "off" acknowledges commits that a crash of PostgreSQL can
// lose; Runnel's version would then run ahead of the durable one, and the
// rows of the lost epochs would be gone although FLUSH said otherwise.
// Stronger settings (remote_write, remote_apply) and "local" (durable on
// the primary) are left as they are.
func openPostgres(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("metastore: open %s: %w", redact(url), err)
	}
	db := stdlib.OpenDB(*cfg, stdlib.OptionAfterConnect(ensureDurableCommit))
	return finishOpen(ctx, db, Postgres, url)
}

// ensureDurableCommit turns synchronous_commit on for a connection whose
// default leaves it off.
func ensureDurableCommit(ctx context.Context, conn *pgx.Conn) error {
	var mode string
	if err := conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&mode); err != nil {
		return fmt.Errorf("metastore: read synchronous_commit: %w", err)
	}
	if mode != "off" {
		return nil
	}
	if _, err := conn.Exec(ctx, "SET synchronous_commit = on"); err != nil {
		return fmt.Errorf("metastore: set synchronous_commit: %w", err)
	}
	return nil
}
