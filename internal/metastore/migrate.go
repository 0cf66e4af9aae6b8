package metastore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Migration is one numbered schema step of a component.
type Migration struct {
	// Version numbers a component's steps 1, 2, 3, …: strictly increasing,
	// gaps allowed. Never renumber or edit an applied step; add a new one.
	Version int
	// Name says what the step does (recorded, for people).
	Name string
	// SQL is run on both dialects unless the dialect's own text below is
	// set. It may hold several statements separated by semicolons and use
	// the {{…}} type placeholders of ExpandSQL.
	SQL      string
	SQLite   string
	Postgres string
}

func (m Migration) text(d Dialect) string {
	switch {
	case d == SQLite && m.SQLite != "":
		return m.SQLite
	case d == Postgres && m.Postgres != "":
		return m.Postgres
	}
	return m.SQL
}

// migrationsTable records applied steps.
const migrationsTable = "runnel_schema_migrations"

// migrationLockKey is the PostgreSQL advisory lock that serialises
// migrators in different processes (an arbitrary constant: "runnelmg").
const migrationLockKey int64 = 0x72756e6e656c6d67

var placeholderRE = regexp.MustCompile(`\{\{([A-Z_]+)\}\}`)

// dialectTypes maps each placeholder to its SQLite and PostgreSQL text.
var dialectTypes = map[string][2]string{
	"BLOB":    {"BLOB", "BYTEA"},
	"BIGINT":  {"BIGINT", "BIGINT"},
	"TEXT":    {"TEXT", "TEXT"},
	"BOOLEAN": {"INTEGER", "BOOLEAN"},
	"DOUBLE":  {"REAL", "DOUBLE PRECISION"},
}

// ExpandSQL replaces the type placeholders in q for dialect d:
//
//	{{BLOB}}     SQLite BLOB      PostgreSQL BYTEA
//	{{BIGINT}}   BIGINT           BIGINT
//	{{TEXT}}     TEXT             TEXT
//	{{BOOLEAN}}  INTEGER          BOOLEAN
//	{{DOUBLE}}   REAL             DOUBLE PRECISION
//
// An unknown placeholder is an error.
func ExpandSQL(d Dialect, q string) (string, error) {
	var bad string
	out := placeholderRE.ReplaceAllStringFunc(q, func(m string) string {
		name := m[2 : len(m)-2]
		t, ok := dialectTypes[name]
		if !ok {
			bad = m
			return m
		}
		if d == Postgres {
			return t[1]
		}
		return t[0]
	})
	if bad != "" {
		return "", fmt.Errorf("metastore: unknown placeholder %s (known: BLOB, BIGINT, TEXT, BOOLEAN, DOUBLE)", bad)
	}
	return out, nil
}

// Migrate brings component's schema up to the last of steps. Each step not
// yet recorded in runnel_schema_migrations runs in its own transaction with
// its record, under a lock shared by all migrators, so concurrent starters
// apply it exactly once; calling Migrate again is a no-op. It fails if an
// applied step's text has changed since (checksum) or the database holds a
// step newer than any in steps (a downgrade).
func (d *DB) Migrate(ctx context.Context, component string, steps []Migration) error {
	if component == "" {
		return fmt.Errorf("metastore: migrate: empty component name")
	}
	type prepared struct {
		Migration
		sql, sum string
	}
	var plan []prepared
	last := 0
	for _, m := range steps {
		if m.Version <= last {
			return fmt.Errorf("metastore: migrate %s: version %d after %d; versions must increase", component, m.Version, last)
		}
		last = m.Version
		text := m.text(d.dialect)
		if text == "" {
			return fmt.Errorf("metastore: migrate %s: step %d (%s) has no SQL for %s", component, m.Version, m.Name, d.dialect)
		}
		q, err := ExpandSQL(d.dialect, text)
		if err != nil {
			return fmt.Errorf("metastore: migrate %s step %d: %w", component, m.Version, err)
		}
		h := sha256.Sum256([]byte(q))
		plan = append(plan, prepared{Migration: m, sql: q, sum: hex.EncodeToString(h[:8])})
	}
	if err := d.Tx(ctx, func(tx *Tx) error {
		if err := tx.lockMigrations(ctx); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+migrationsTable+` (
			component TEXT NOT NULL,
			version BIGINT NOT NULL,
			name TEXT NOT NULL,
			checksum TEXT NOT NULL,
			applied_ms BIGINT NOT NULL,
			PRIMARY KEY (component, version))`)
		if err != nil {
			return err
		}
		var newest sql.NullInt64
		if err := tx.QueryRow(ctx, `SELECT MAX(version) FROM `+migrationsTable+` WHERE component = $1`, component).Scan(&newest); err != nil {
			return err
		}
		if newest.Valid && newest.Int64 > int64(last) {
			return fmt.Errorf("database schema of %s is at version %d, newer than this binary knows (%d): a newer runnel wrote it; run that version or a newer one", component, newest.Int64, last)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("metastore: migrate %s: %w", component, err)
	}
	for _, m := range plan {
		err := d.Tx(ctx, func(tx *Tx) error {
			if err := tx.lockMigrations(ctx); err != nil {
				return err
			}
			var sum string
			err := tx.QueryRow(ctx, `SELECT checksum FROM `+migrationsTable+` WHERE component = $1 AND version = $2`, component, m.Version).Scan(&sum)
			switch {
			case err == nil:
				if sum != m.sum {
					return fmt.Errorf("step %d (%s) was applied with different SQL (checksum %s, now %s); never edit an applied migration, add a new step", m.Version, m.Name, sum, m.sum)
				}
				return nil
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
			// Run unbound: the step's text may contain "$" (PL/pgSQL
			// bodies) and takes no parameters.
			if _, err := tx.tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("step %d (%s): %w", m.Version, m.Name, err)
			}
			_, err = tx.Exec(ctx, `INSERT INTO `+migrationsTable+` (component, version, name, checksum, applied_ms) VALUES ($1, $2, $3, $4, $5)`,
				component, m.Version, m.Name, m.sum, time.Now().UnixMilli())
			return err
		})
		if err != nil {
			return fmt.Errorf("metastore: migrate %s: %w", component, err)
		}
	}
	return nil
}

// lockMigrations serialises migrators: on PostgreSQL with a transaction-
// scoped advisory lock; SQLite's BEGIN IMMEDIATE already holds the write
// lock.
func (t *Tx) lockMigrations(ctx context.Context) error {
	if t.dialect != Postgres {
		return nil
	}
	_, err := t.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLockKey)
	return err
}

// AppliedMigration is a row of runnel_schema_migrations.
type AppliedMigration struct {
	Component string
	Version   int
	Name      string
	Checksum  string
	AppliedAt time.Time
}

// AppliedMigrations lists the recorded steps of component ("" = all), in
// component and version order.
func (d *DB) AppliedMigrations(ctx context.Context, component string) ([]AppliedMigration, error) {
	rows, err := d.Query(ctx, `SELECT component, version, name, checksum, applied_ms FROM `+migrationsTable+`
		WHERE $1 = '' OR component = $1 ORDER BY component, version`, component)
	if err != nil {
		return nil, fmt.Errorf("metastore: list migrations: %w", err)
	}
	defer rows.Close()
	var out []AppliedMigration
	for rows.Next() {
		var a AppliedMigration
		var ms int64
		if err := rows.Scan(&a.Component, &a.Version, &a.Name, &a.Checksum, &ms); err != nil {
			return nil, fmt.Errorf("metastore: list migrations: %w", err)
		}
		a.AppliedAt = time.UnixMilli(ms)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("metastore: list migrations: %w", err)
	}
	return out, nil
}
