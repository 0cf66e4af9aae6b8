package pgcdc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/connector"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// Column is one column of the Runnel table a CDC table feeds: its name
// matches the upstream column it takes its values from.
type Column struct {
	Name string
	Type types.Type
	// CommitTime marks the column of INCLUDE timestamp: the upstream
	// transaction's commit time (the Unix epoch for rows of the initial
	// snapshot, which no one transaction wrote), never read upstream.
	CommitTime bool
}

// OptIncludeTimestamp names the INCLUDE timestamp column (the binder
// stores INCLUDE clauses as include.<kind> options).
const OptIncludeTimestamp = "include.timestamp"

// SpecColumns are the columns of a CDC table's spec, the INCLUDE
// timestamp column marked. Other INCLUDE kinds are Kafka's and refused.
func SpecColumns(spec connector.Spec) ([]Column, error) {
	for k := range spec.Options {
		if strings.HasPrefix(k, "include.") && k != OptIncludeTimestamp {
			return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "postgres-cdc: INCLUDE %s is a Kafka column; a CDC table can INCLUDE timestamp (the upstream commit time)", strings.TrimPrefix(k, "include."))
		}
	}
	commit := spec.Options[OptIncludeTimestamp]
	cols := make([]Column, len(spec.Columns))
	for i, c := range spec.Columns {
		cols[i] = Column{Name: c.Name, Type: c.Type, CommitTime: commit != "" && c.Name == commit}
	}
	return cols, nil
}

// connect opens a connection (a replication one when replication).
func connect(ctx context.Context, c Config, replication bool) (*pgconn.PgConn, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	conn, err := pgconn.Connect(ctx, c.connURL(replication))
	if err != nil {
		return nil, unreachable(c, err)
	}
	return conn, nil
}

// connectTimeout bounds a connection attempt, startup included.
const connectTimeout = 15 * time.Second

// unreachable wraps a connection failure as 08000 naming the server.
func unreachable(c Config, err error) error {
	// The cause (refused, TLS refused, authentication failed) goes to the
	// client as the DETAIL; pgconn's text names host, user and database,
	// never the password.
	return sqlerr.Wrap(err, sqlerr.ConnectionException, "postgres-cdc: cannot connect to "+c.Redacted()).WithDetail("%v", err)
}

// exec runs one simple-protocol statement and returns its text rows.
func exec(ctx context.Context, conn *pgconn.PgConn, sql string) ([][]string, error) {
	res, err := conn.Exec(ctx, sql).ReadAll()
	if err != nil {
		return nil, err
	}
	var rows [][]string
	for _, r := range res {
		for _, row := range r.Rows {
			out := make([]string, len(row))
			for i, v := range row {
				out[i] = string(v)
			}
			rows = append(rows, out)
		}
	}
	return rows, nil
}

// UpstreamTable describes the upstream table as PostgreSQL's catalog has it.
type UpstreamTable struct {
	Columns []string // in attnum order
	Types   []string // format_type of each column
	// Key are the replica identity's columns: the primary key's (DEFAULT),
	// an index's (USING INDEX), every column (FULL), none (NOTHING).
	Key []string
	// Identity is pg_class.relreplident: d, f, i or n.
	Identity string
}

// DescribeUpstream reads the upstream table's columns and replica identity.
func DescribeUpstream(ctx context.Context, c Config) (*UpstreamTable, error) {
	conn, err := connect(ctx, c, false)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	return describe(ctx, conn, c)
}

func describe(ctx context.Context, conn *pgconn.PgConn, c Config) (*UpstreamTable, error) {
	rows, err := exec(ctx, conn, fmt.Sprintf(`SELECT c.relreplident::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = %s AND c.relname = %s AND c.relkind IN ('r', 'p')`, quoteLiteral(c.Schema), quoteLiteral(c.Table)))
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, sqlerr.Errorf(sqlerr.UndefinedTable, "postgres-cdc: upstream table %s does not exist in %s", c.TableName(), c.Redacted())
	}
	t := &UpstreamTable{Identity: rows[0][0]}
	rows, err = exec(ctx, conn, fmt.Sprintf(`SELECT a.attname, format_type(a.atttypid, a.atttypmod),
		COALESCE((SELECT true FROM pg_index i WHERE i.indrelid = a.attrelid AND a.attnum = ANY(i.indkey)
			AND CASE c.relreplident WHEN 'd' THEN i.indisprimary WHEN 'i' THEN i.indisreplident ELSE false END), false)
		FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
		WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
		quoteLiteral(c.QualifiedTable())))
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		t.Columns = append(t.Columns, r[0])
		t.Types = append(t.Types, r[1])
		if r[2] == "t" || t.Identity == "f" {
			t.Key = append(t.Key, r[0])
		}
	}
	return t, nil
}

// Ping connects and checks that the server has logical WAL (CREATE SOURCE).
func Ping(ctx context.Context, c Config) error {
	conn, err := connect(ctx, c, false)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return checkWalLevel(ctx, conn, c)
}

func checkWalLevel(ctx context.Context, conn *pgconn.PgConn, c Config) error {
	rows, err := exec(ctx, conn, "SHOW wal_level")
	if err != nil {
		return err
	}
	if len(rows) == 1 && rows[0][0] != "logical" {
		return sqlerr.Errorf(sqlerr.ObjectNotInPrerequisiteState, "postgres-cdc: %s has wal_level = %s; logical replication needs wal_level = logical", c.Redacted(), rows[0][0])
	}
	return nil
}

// Check verifies, at CREATE time, that the upstream can feed a Runnel table
// with these columns and primary key: logical WAL, the table exists, every
// Runnel column exists upstream, and deletes carry the primary key (the
// replica identity covers it). It also makes sure the publication exists
// (creating it, or adding the table, when publication.create.enable).
func Check(ctx context.Context, c Config, cols []Column, pk []int) error {
	conn, err := connect(ctx, c, false)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if err := checkWalLevel(ctx, conn, c); err != nil {
		return err
	}
	up, err := describe(ctx, conn, c)
	if err != nil {
		return err
	}
	if len(pk) == 0 {
		return sqlerr.Errorf(sqlerr.InvalidTableDefinition, "a postgres-cdc table needs a PRIMARY KEY (upstream %s)", c.TableName())
	}
	have := map[string]bool{}
	for _, n := range up.Columns {
		have[n] = true
	}
	// A column the upstream table does not have (yet) is allowed outside
	// the key: it is NULL until ALTER TABLE ... ADD COLUMN adds it
	// upstream, and fed from then on (decoder.relation maps by name).
	for i, col := range cols {
		if (col.CommitTime || !have[col.Name]) && slices.Contains(pk, i) {
			return sqlerr.Errorf(sqlerr.UndefinedColumn, "postgres-cdc: primary key column %q does not exist in upstream table %s", col.Name, c.TableName())
		}
	}
	key := map[string]bool{}
	for _, n := range up.Key {
		key[n] = true
	}
	for _, i := range pk {
		if !key[cols[i].Name] {
			return sqlerr.Errorf(sqlerr.InvalidTableDefinition,
				"postgres-cdc: primary key column %q is not in the replica identity of upstream table %s (identity %s, key columns %v): its deletes would not carry it; declare the upstream primary key or set REPLICA IDENTITY FULL",
				cols[i].Name, c.TableName(), identityName(up.Identity), up.Key)
		}
	}
	if c.Slot != "" {
		rows, err := exec(ctx, conn, "SELECT 1 FROM pg_replication_slots WHERE slot_name = "+quoteLiteral(c.Slot))
		if err != nil {
			return err
		}
		if len(rows) > 0 {
			return sqlerr.Errorf(sqlerr.DuplicateObject, "postgres-cdc: replication slot %q already exists in %s", c.Slot, c.Redacted())
		}
	}
	return ensurePublication(ctx, conn, c)
}

func identityName(id string) string {
	switch id {
	case "d":
		return "DEFAULT"
	case "f":
		return "FULL"
	case "i":
		return "USING INDEX"
	case "n":
		return "NOTHING"
	}
	return id
}

// ensurePublication makes the table part of the publication: creates the
// publication or adds the table when allowed, fails naming it otherwise.
// It must run before the slot is created: pgoutput decides membership with
// the catalog as of each change.
func ensurePublication(ctx context.Context, conn *pgconn.PgConn, c Config) error {
	rows, err := exec(ctx, conn, "SELECT puballtables FROM pg_publication WHERE pubname = "+quoteLiteral(c.Publication))
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		if !c.CreatePublication {
			return sqlerr.Errorf(sqlerr.UndefinedObject, "postgres-cdc: publication %q does not exist in %s (publication.create.enable is false)", c.Publication, c.Redacted())
		}
		_, err := exec(ctx, conn, fmt.Sprintf("CREATE PUBLICATION %s FOR TABLE %s", quoteIdent(c.Publication), c.QualifiedTable()))
		if err == nil || !isCode(err, "42710") { // a concurrent CREATE made it
			return err
		}
		rows = [][]string{{"f"}}
	}
	if rows[0][0] == "t" {
		return nil
	}
	rows, err = exec(ctx, conn, fmt.Sprintf("SELECT 1 FROM pg_publication_tables WHERE pubname = %s AND schemaname = %s AND tablename = %s",
		quoteLiteral(c.Publication), quoteLiteral(c.Schema), quoteLiteral(c.Table)))
	if err != nil || len(rows) > 0 {
		return err
	}
	if !c.CreatePublication {
		return sqlerr.Errorf(sqlerr.UndefinedObject, "postgres-cdc: publication %q does not include table %s (publication.create.enable is false)", c.Publication, c.TableName())
	}
	_, err = exec(ctx, conn, fmt.Sprintf("ALTER PUBLICATION %s ADD TABLE %s", quoteIdent(c.Publication), c.QualifiedTable()))
	if isCode(err, "42710") {
		return nil
	}
	return err
}

func isCode(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

// createSlot creates the logical slot on a replication connection and
// exports its snapshot: the snapshot is importable until conn runs its next
// command.
func createSlot(ctx context.Context, conn *pgconn.PgConn, slot string) (pglogrepl.LSN, string, error) {
	res, err := pglogrepl.CreateReplicationSlot(ctx, conn, slot, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: "EXPORT_SNAPSHOT"})
	if err != nil {
		return 0, "", fmt.Errorf("postgres-cdc: create replication slot %s: %w", slot, err)
	}
	lsn, err := pglogrepl.ParseLSN(res.ConsistentPoint)
	if err != nil {
		return 0, "", fmt.Errorf("postgres-cdc: slot %s consistent point %q: %w", slot, res.ConsistentPoint, err)
	}
	return lsn, res.SnapshotName, nil
}

// DropSlot drops the replication slot if it exists, ending the session
// that still streams from it (a Runnel reader being torn down). It is what
// DROP TABLE / DROP SOURCE run, so that a dropped table pins no WAL.
func DropSlot(ctx context.Context, c Config, slot string) error {
	if slot == "" {
		return nil
	}
	conn, err := connect(ctx, c, false)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return dropSlot(ctx, conn, slot)
}

func dropSlot(ctx context.Context, conn *pgconn.PgConn, slot string) error {
	lit := quoteLiteral(slot)
	for attempt := 0; ; attempt++ {
		_, err := exec(ctx, conn, fmt.Sprintf(`SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = %s AND active_pid IS NOT NULL;
			SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s`, lit, lit))
		// 55006: still active (the terminated walsender has not exited yet).
		if err == nil || !isCode(err, "55006") || attempt >= 100 {
			if err != nil {
				return fmt.Errorf("postgres-cdc: drop replication slot %s: %w", slot, err)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// SlotStatus is a slot's row in pg_replication_slots (for tests and
// introspection).
type SlotStatus struct {
	Exists            bool
	Active            bool
	ConfirmedFlushLSN pglogrepl.LSN
}

// Slot reads the slot's status.
func Slot(ctx context.Context, c Config, slot string) (SlotStatus, error) {
	conn, err := pgx.Connect(ctx, c.connURL(false))
	if err != nil {
		return SlotStatus{}, unreachable(c, err)
	}
	defer conn.Close(context.Background())
	var s SlotStatus
	var lsn *string
	err = conn.QueryRow(ctx, "SELECT active, confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&s.Active, &lsn)
	if errors.Is(err, pgx.ErrNoRows) {
		return SlotStatus{}, nil
	}
	if err != nil {
		return SlotStatus{}, err
	}
	s.Exists = true
	if lsn != nil {
		s.ConfirmedFlushLSN, err = pglogrepl.ParseLSN(*lsn)
	}
	return s, err
}

// selectList is the snapshot query's column list, in the Runnel table's
// order.
func selectList(cols []Column) string { return selectListOf(cols, nil) }

// selectListOf is selectList where only the columns in upstream (when not
// nil) exist upstream: the others are read as NULL.
func selectListOf(cols []Column, upstream []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = quoteIdent(c.Name)
		if c.CommitTime || upstream != nil && !slices.Contains(upstream, c.Name) {
			parts[i] = "NULL"
		}
	}
	return strings.Join(parts, ", ")
}
