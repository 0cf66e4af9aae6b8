// Package postgres is the sink connector writing to a PostgreSQL table,
// registered as "postgres" and as "jdbc" (RisingWave's name for it, with
// jdbc.url = 'jdbc:postgresql://host:port/db?user=...&password=...').
//
// Each delivered epoch is one PostgreSQL transaction that carries the
// epoch's rows and records the epoch in a progress row of
// runnel_sink_progress in the target's schema. Open reads that row, so
// after any crash the worker delivers exactly the epochs the table lacks
// (I8, and I7 end to end: what Runnel acknowledged reaches the target once),
// and Begin re-checks it under FOR UPDATE.
//
// The rows travel by binary COPY (encode), the fastest way into
// PostgreSQL:
//
//   - an append-only sink whose columns all have the target's types COPYs
//     straight into the target table;
//   - otherwise the epoch's changes are COPYed into a temporary staging
//     table (one per connection, ON COMMIT DELETE ROWS, so it is empty
//     outside a delivery and a rollback takes its rows too) and applied by
//     set statements in the same transaction: an upsert sink's as one
//     DELETE ... USING stage for the keys whose last change is a delete and
//     one INSERT ... SELECT FROM stage ON CONFLICT (key) DO UPDATE for the
//     rest; an append-only sink's as one INSERT ... SELECT.
//
// The staging table holds each key at most once (the last change of each
// key wins, which is what an upsert means): a change whose key is already
// staged applies the stage first, so the target sees a key's changes in
// the stream's order. A value goes in binary when its Runnel type has the
// target column's binary form (same type, or text and varchar); otherwise
// as text, cast by PostgreSQL to the target type as a literal would be.
// Open reads the target columns' types from the catalog, so a missing
// table or column, or a key without a unique index, fails CREATE SINK with
// PostgreSQL's error.
package postgres

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/sink"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

func init() {
	known := func(k string) bool {
		switch k {
		case "jdbc.url", "table.name", "schema.name", "user", "password", "host", "port", "database", "table", "schema":
			return true
		}
		return false
	}
	sink.Register("postgres", sink.Connector{New: New, Known: known})
	sink.Register("jdbc", sink.Connector{New: New, Known: known})
}

// ProgressTable is the table, in the target table's schema, holding one
// row per sink: the last epoch delivered.
const ProgressTable = "runnel_sink_progress"

// connectTimeout bounds one connection attempt.
const connectTimeout = 10 * time.Second

type target struct {
	cfg    *sink.Config
	url    string
	schema string
	table  string
	key    string // the progress row's key

	conn *pgx.Conn
	// cols describes how each sink column reaches its target column
	// (read from the target's catalog by Open).
	cols []column
	// direct: COPY straight into the target (append-only, every column
	// binary with no type modifier); otherwise through the staging table.
	direct bool
	// plain: every column is plain (binary, no type modifier), so rows
	// can be COPYed into the target itself: always for an append-only
	// sink (direct), for an upsert sink's batches of new keys (txn.probe).
	plain bool
	// probedIn counts the upsert batches COPYed into the target itself,
	// probes the probes (tests check the path is taken, and how often).
	probedIn, probes int
	// merge: apply an upsert sink's stage with one MERGE (PostgreSQL 15
	// and later), else with DELETE ... USING and INSERT ... ON CONFLICT.
	merge bool
	// order holds the sink columns the target's rows are written in the
	// order of (see sortKey); nil: any order.
	order []int
	// bufs are the buffers of the next delivery (txnBuffers).
	bufs txnBuffers
}

// useMerge lets tests take the pre-15 path (DELETE and ON CONFLICT) on a
// newer server.
var useMerge = true

// column is one sink column's way into the target.
type column struct {
	name string
	// cast is the target column's type (format_type, modifier included).
	cast string
	// stage is the staging column's type: the target's type without its
	// modifier when binary, text otherwise.
	stage string
	// binary: the Runnel value's PostgreSQL binary form is the target
	// type's (types.AppendBinary), so it is sent as is.
	binary bool
	// plain: binary and the target column has no type modifier, so a
	// COPY into the target itself reads the value as the cast would.
	plain bool
	// oid is the type of the staging column (of the target column when
	// plain): a small epoch's rows go as parameters of that type.
	oid uint32
}

// New checks a postgres/jdbc sink's options.
func New(cfg *sink.Config) (sink.Target, error) {
	t := &target{cfg: cfg, key: cfg.Name}
	o := cfg.Options
	bad := func(format string, args ...any) error {
		return sqlerr.Errorf(sqlerr.InvalidParameterValue, "sink %q: "+format, append([]any{cfg.Name}, args...)...)
	}
	if ju := o["jdbc.url"]; ju != "" {
		if !strings.HasPrefix(ju, "jdbc:postgresql://") {
			return nil, bad("jdbc.url must start with jdbc:postgresql:// (only PostgreSQL targets are supported), got %q", redact(ju))
		}
		u, err := url.Parse(strings.TrimPrefix(ju, "jdbc:"))
		if err != nil {
			return nil, bad("invalid jdbc.url: %v", err)
		}
		q := u.Query()
		if v := o["user"]; v != "" {
			q.Set("user", v)
		}
		if v := o["password"]; v != "" {
			q.Set("password", v)
		}
		u.RawQuery = q.Encode()
		t.url = u.String()
		t.table, t.schema = o["table.name"], o["schema.name"]
	} else {
		host := o["host"]
		if host == "" {
			return nil, bad("needs jdbc.url = 'jdbc:postgresql://host:port/db?user=...' or host, port, user, password, database")
		}
		u := &url.URL{Scheme: "postgres", Host: host, Path: "/" + o["database"]}
		if p := o["port"]; p != "" {
			u.Host = host + ":" + p
		}
		if o["user"] != "" {
			u.User = url.UserPassword(o["user"], o["password"])
		}
		t.url = u.String()
		t.table, t.schema = o["table"], o["schema"]
		if t.table == "" {
			t.table = o["table.name"]
		}
	}
	if t.table == "" {
		return nil, bad("the target table is required (table.name = '...')")
	}
	if t.schema == "" {
		t.schema = "public"
	}
	if cfg.Format != "" {
		return nil, bad("a %s sink takes no FORMAT ... ENCODE ...", o["connector"])
	}
	return t, nil
}

// redact hides a password in a URL for error messages.
func redact(s string) string {
	if i := strings.Index(s, "password="); i >= 0 {
		j := strings.IndexByte(s[i:], '&')
		if j < 0 {
			return s[:i] + "password=xxx"
		}
		return s[:i] + "password=xxx" + s[i+j:]
	}
	return s
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func (t *target) qualified() string { return quote(t.schema) + "." + quote(t.table) }

// Open implements sink.Target: connect (with synchronous_commit on), read the target columns' types,
// check the statements, and read (creating it if needed) the progress row.
// PostgreSQL's errors keep their SQLSTATE.
func (t *target) Open(ctx context.Context) (uint64, error) {
	epoch, err := t.open(ctx)
	var pe *pgconn.PgError
	if err != nil && sqlerr.From(err) == nil && errors.As(err, &pe) {
		err = sqlerr.Wrap(err, pe.Code, err.Error())
	}
	return epoch, err
}

func (t *target) open(ctx context.Context) (uint64, error) {
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	conn, err := pgx.Connect(cctx, t.url)
	if err != nil {
		return 0, fmt.Errorf("sink %s: connect to PostgreSQL: %w", t.cfg.Name, err)
	}
	ok := false
	defer func() {
		if !ok {
			conn.Close(context.Background())
		}
	}()
	// I8: an epoch's commit is what lets the worker truncate it from the
	// log, so it must be durable when acknowledged, whatever the target's
	// default (with synchronous_commit = off a target crash loses recent
	// acknowledged commits: TestTargetDown lost a row that way).
	if _, err := conn.Exec(ctx, "SET synchronous_commit = on"); err != nil {
		return 0, fmt.Errorf("sink %s: %w", t.cfg.Name, err)
	}
	var version int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		return 0, fmt.Errorf("sink %s: %w", t.cfg.Name, err)
	}
	// MERGE inserts new keys about twice as fast as INSERT ... ON CONFLICT
	// (no speculative insertion) and updates ~25% faster, measured on
	// 200,000 keys (docs/benchmarks.md).
	t.merge = version >= 150000 && useMerge
	rows, err := conn.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod), format_type(a.atttypid, NULL), a.atttypid, a.atttypmod
		FROM pg_attribute a WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped`, t.qualified())
	if err != nil {
		return 0, fmt.Errorf("sink %s: target table %s.%s: %w", t.cfg.Name, t.schema, t.table, err)
	}
	type targetColumn struct {
		cast, base string
		oid        uint32
		mod        int32
	}
	targetCols := map[string]targetColumn{}
	for rows.Next() {
		var n string
		var c targetColumn
		if err := rows.Scan(&n, &c.cast, &c.base, &c.oid, &c.mod); err != nil {
			return 0, err
		}
		targetCols[n] = c
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("sink %s: target table %s.%s: %w", t.cfg.Name, t.schema, t.table, err)
	}
	t.cols = make([]column, len(t.cfg.Columns))
	t.plain = true
	for i, c := range t.cfg.Columns {
		tc, found := targetCols[c.Name]
		if !found {
			return 0, sqlerr.Errorf(sqlerr.UndefinedColumn, "sink %s: column %q of the sink does not exist in the target table %s.%s", t.cfg.Name, c.Name, t.schema, t.table)
		}
		col := column{name: c.Name, cast: tc.cast, stage: "text", oid: oidText}
		if sameBinary(c.Type.OID(), tc.oid) {
			col.binary, col.stage, col.plain, col.oid = true, tc.base, tc.mod < 0, tc.oid
		}
		t.plain = t.plain && col.plain
		t.cols[i] = col
	}
	t.direct = t.plain && !t.cfg.Upsert()
	if t.cfg.Upsert() {
		// ON CONFLICT (key) needs a unique index on exactly the key.
		var n int
		keys := make([]string, len(t.cfg.Key))
		for i, k := range t.cfg.Key {
			keys[i] = t.cfg.Columns[k].Name
		}
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_index i WHERE i.indrelid = $1::regclass AND i.indisunique
			AND i.indpred IS NULL AND i.indnkeyatts = cardinality($2::text[])
			AND (SELECT bool_and(a.attname = ANY($2::text[])) FROM pg_attribute a WHERE a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey))`,
			t.qualified(), keys).Scan(&n); err != nil {
			return 0, fmt.Errorf("sink %s: target table %s.%s: %w", t.cfg.Name, t.schema, t.table, err)
		}
		if n == 0 {
			return 0, sqlerr.Errorf(sqlerr.InvalidColumnReference, "sink %s: the target table %s.%s has no primary key or unique index on exactly (%s), the sink's primary_key: upserts cannot use ON CONFLICT",
				t.cfg.Name, t.schema, t.table, strings.Join(keys, ", "))
		}
	}
	if t.order, err = t.sortKey(ctx, conn); err != nil {
		return 0, fmt.Errorf("sink %s: target table %s.%s: %w", t.cfg.Name, t.schema, t.table, err)
	}
	if !t.direct {
		// The staging table lives as long as the connection; ON COMMIT
		// DELETE ROWS empties it at every commit (and a rollback takes
		// back what the transaction staged), so no epoch sees another's
		// rows.
		if _, err := conn.Exec(ctx, "CREATE TEMPORARY TABLE "+stageTable+" ("+t.stageColumns()+") ON COMMIT DELETE ROWS"); err != nil {
			return 0, fmt.Errorf("sink %s: create the staging table: %w", t.cfg.Name, err)
		}
	}
	// Check the statements (types, casts) now, not at the first delivery.
	var check []string
	switch {
	case t.direct:
	case t.merge && t.cfg.Upsert():
		check = append(check, t.mergeSQL())
	case t.cfg.Upsert():
		check = append(check, t.insertSQL(), t.deleteSQL())
	default:
		check = append(check, t.insertSQL())
	}
	for _, q := range check {
		if _, err := conn.Prepare(ctx, "", q); err != nil {
			return 0, fmt.Errorf("sink %s: target table %s.%s: %w", t.cfg.Name, t.schema, t.table, err)
		}
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+quote(t.schema)+`.`+ProgressTable+` (sink text PRIMARY KEY, epoch bigint NOT NULL)`); err != nil {
		// Concurrent creators race on the catalog; the table exists then.
		if _, err2 := conn.Exec(ctx, `SELECT 1 FROM `+quote(t.schema)+`.`+ProgressTable+` LIMIT 0`); err2 != nil {
			return 0, fmt.Errorf("sink %s: create %s: %w", t.cfg.Name, ProgressTable, err)
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO `+quote(t.schema)+`.`+ProgressTable+` (sink, epoch) VALUES ($1, 0) ON CONFLICT (sink) DO NOTHING`, t.key); err != nil {
		return 0, fmt.Errorf("sink %s: progress row: %w", t.cfg.Name, err)
	}
	var epoch int64
	if err := conn.QueryRow(ctx, `SELECT epoch FROM `+quote(t.schema)+`.`+ProgressTable+` WHERE sink = $1`, t.key).Scan(&epoch); err != nil {
		return 0, fmt.Errorf("sink %s: progress row: %w", t.cfg.Name, err)
	}
	t.conn, ok = conn, true
	return uint64(epoch), nil
}

// OIDs of the string types whose binary forms are the same UTF-8 bytes.
const (
	oidText    = 25
	oidVarchar = 1043
	oidBool    = 16
	oidInt8    = 20
)

// sameBinary reports whether a value of the Runnel type with OID from is
// read correctly by the binary input of the target type with OID to.
func sameBinary(from, to uint32) bool {
	if from == to {
		return true
	}
	str := func(o uint32) bool { return o == oidText || o == oidVarchar }
	return str(from) && str(to)
}

// sortKey returns the sink columns whose order the rows reach the target
// in: an upsert sink's primary_key, else the target's primary key when
// the sink writes all of its columns (nil otherwise).
//
// Why: Runnel hands a sink its changes grouped by vnode (the log's order
// follows the state tables' key layout, table_id | vnode | pk), which is
// random with respect to the target's key. Written in that order, every
// row touches another heap page and index leaf of the target; in key
// order they touch them in turn. On the same PostgreSQL (shared_buffers
// 32MB, 400,000 rows), a COPY of 200,000 new keys took 2.0–4.4 s shuffled
// and 0.6–2.0 s sorted, a MERGE updating 200,000 of the keys 16–19 s
// shuffled and 9–11 s sorted (docs/benchmarks.md). The order is a speed
// matter only: within one COPY chunk, and in the stage when it is
// applied, each key occurs at most once (an upsert sink), or the rows
// are inserts whose order the target cannot tell (an append-only one).
func (t *target) sortKey(ctx context.Context, conn *pgx.Conn) ([]int, error) {
	if !sortRows {
		return nil, nil
	}
	if t.cfg.Upsert() {
		return t.cfg.Key, nil
	}
	rows, err := conn.Query(ctx, `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
		WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY array_position(i.indkey::int2[], a.attnum)`, t.qualified())
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var order []int
	for _, n := range names {
		i := slices.IndexFunc(t.cfg.Columns, func(c sink.Column) bool { return c.Name == n })
		if i < 0 {
			return nil, nil
		}
		order = append(order, i)
	}
	return order, nil
}

// sortRows turns sortKey off (the benchmark's comparison).
var sortRows = true

// stageSource is the stage as the apply statements read it: in the
// order of the target's key (sortKey), so that PostgreSQL updates,
// deletes and inserts the target's rows in index order.
func (t *target) stageSource() string {
	if len(t.order) == 0 {
		return stageTable + " s"
	}
	by := make([]string, len(t.order))
	for i, k := range t.order {
		by[i] = fmt.Sprintf("c%d::%s", k, t.cols[k].cast)
	}
	return "(SELECT * FROM " + stageTable + " ORDER BY " + strings.Join(by, ", ") + ") s"
}

// stageTable is the connection's temporary staging table.
const stageTable = "runnel_sink_stage"

// stageColumns renders the staging table's columns: c0, c1, ... then, for
// an upsert sink, del (the key's last change is a delete).
func (t *target) stageColumns() string {
	var cols []string
	for i, c := range t.cols {
		cols = append(cols, fmt.Sprintf("c%d %s", i, c.stage))
	}
	if t.cfg.Upsert() {
		cols = append(cols, "del boolean NOT NULL")
	}
	return strings.Join(cols, ", ")
}

// staged renders staging column i as a value of its target column's type.
func (t *target) staged(i int) string {
	return fmt.Sprintf("s.c%d::%s", i, t.cols[i].cast)
}

func (t *target) columnNames() string {
	names := make([]string, len(t.cols))
	for i, c := range t.cols {
		names[i] = quote(c.name)
	}
	return strings.Join(names, ", ")
}

// insertSQL applies the staged inserts (all rows of an append-only sink;
// the rows not marked del of an upsert sink).
func (t *target) insertSQL() string {
	casts := make([]string, len(t.cols))
	for i := range t.cols {
		casts[i] = t.staged(i)
	}
	q := "INSERT INTO " + t.qualified() + " (" + t.columnNames() + ") SELECT " + strings.Join(casts, ", ") + " FROM " + t.stageSource()
	if !t.cfg.Upsert() {
		return q
	}
	return q + " WHERE NOT s.del" + t.onConflict()
}

// onConflict is an upsert's ON CONFLICT clause: the new row replaces the
// key's.
func (t *target) onConflict() string {
	keys := make([]string, len(t.cfg.Key))
	isKey := map[int]bool{}
	for i, k := range t.cfg.Key {
		keys[i] = quote(t.cfg.Columns[k].Name)
		isKey[k] = true
	}
	var sets []string
	for i, c := range t.cfg.Columns {
		if !isKey[i] {
			sets = append(sets, quote(c.Name)+" = EXCLUDED."+quote(c.Name))
		}
	}
	q := " ON CONFLICT (" + strings.Join(keys, ", ") + ")"
	if len(sets) == 0 {
		return q + " DO NOTHING"
	}
	return q + " DO UPDATE SET " + strings.Join(sets, ", ")
}

// mergeSQL applies an upsert sink's stage in one statement: a staged key
// marked del is deleted, another one updated or inserted. NULL keys never
// match, so they insert, as they never conflict under ON CONFLICT.
func (t *target) mergeSQL() string {
	var on, sets, casts []string
	isKey := map[int]bool{}
	for _, k := range t.cfg.Key {
		on = append(on, "t."+quote(t.cfg.Columns[k].Name)+" = "+t.staged(k))
		isKey[k] = true
	}
	for i, c := range t.cols {
		casts = append(casts, t.staged(i))
		if !isKey[i] {
			sets = append(sets, quote(c.name)+" = "+t.staged(i))
		}
	}
	q := "MERGE INTO " + t.qualified() + " AS t USING " + t.stageSource() + " ON " + strings.Join(on, " AND ") +
		" WHEN MATCHED AND s.del THEN DELETE"
	if len(sets) > 0 {
		q += " WHEN MATCHED THEN UPDATE SET " + strings.Join(sets, ", ")
	}
	return q + " WHEN NOT MATCHED AND NOT s.del THEN INSERT (" + t.columnNames() + ") VALUES (" + strings.Join(casts, ", ") + ")"
}

// deleteSQL applies an upsert sink's staged deletes.
func (t *target) deleteSQL() string {
	conds := []string{"s.del"}
	for _, k := range t.cfg.Key {
		conds = append(conds, "t."+quote(t.cfg.Columns[k].Name)+" = "+t.staged(k))
	}
	return "DELETE FROM " + t.qualified() + " AS t USING " + t.stageSource() + " WHERE " + strings.Join(conds, " AND ")
}

// copySQL is the COPY of one batch into the target (direct) or the stage.
func (t *target) copySQL(direct bool) string {
	if direct {
		return "COPY " + t.qualified() + " (" + t.columnNames() + ") FROM STDIN (FORMAT binary)"
	}
	cols := make([]string, len(t.cols))
	for i := range t.cols {
		cols[i] = fmt.Sprintf("c%d", i)
	}
	if t.cfg.Upsert() {
		cols = append(cols, "del")
	}
	return "COPY " + stageTable + " (" + strings.Join(cols, ", ") + ") FROM STDIN (FORMAT binary)"
}

// Close implements sink.Target.
func (t *target) Close() error {
	if t.conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := t.conn.Close(ctx)
	t.conn = nil
	return err
}

// Begin implements sink.Target: one PostgreSQL transaction per epoch,
// holding the progress row's lock, skipped when the row says the target
// has the epoch already.
func (t *target) Begin(ctx context.Context, epoch uint64) (sink.Txn, error) {
	if t.conn == nil {
		return nil, sink.ErrClosed
	}
	// BEGIN and the progress row's lock in one round trip (a one-row
	// epoch's cost is its round trips: TestSmallEpochLatency).
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(`SELECT epoch FROM `+quote(t.schema)+`.`+ProgressTable+` WHERE sink = $1 FOR UPDATE`, t.key)
	br := t.conn.SendBatch(ctx, b)
	var has int64
	_, err := br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&has)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.rollback()
		return nil, err
	}
	x := &txn{t: t, epoch: epoch, skip: uint64(has) >= epoch, probe: t.plain && t.cfg.Upsert(), txnBuffers: t.bufs}
	t.bufs = txnBuffers{}
	return x, nil
}

// maxStagedKeys (a variable for tests) bounds the keys an upsert delivery
// tracks (staged, or COPYed into the target and maybe not sent yet) before
// it applies the stage and forgets them: 256 Ki keys are a few tens of MB
// of Go sets, and set statements over them run at full speed.
var maxStagedKeys = 256 << 10

// copyChunk (a variable for tests) is the encoded size at which pending rows are sent by one
// COPY. One COPY per worker batch (4,096 rows) ran at 0.63x of a single
// COPY of 200,000 rows; chunks of ~100,000 rows at 0.88x (TestTargetThroughput,
// docs/benchmarks.md). 4 MB is ~130,000 rows of three small columns.
var copyChunk = 4 << 20

type txn struct {
	t *target
	// The transaction is the connection's (Begin sent BEGIN; Commit
	// sends COMMIT, Rollback ROLLBACK).
	epoch uint64
	skip  bool
	// staged counts the rows sent to the staging table, copies the
	// COPYs started.
	staged, copies int
	// pendingDirect: the pending rows are for the target itself, not
	// the stage; pendingRows counts them.
	pendingDirect bool
	pendingRows   int
	// inflight is the COPY running in the background (nil: none): it
	// sends one chunk while the worker reads the next rows from the log.
	// Every other use of the connection waits for it first (wait).
	inflight chan error
	// probe: batches of inserts only of an upsert sink are gathered
	// (cand, their keys in candKeys) and checked against the target
	// together (resolve, one probe per maxCandRows rows); if none of
	// their keys is there they are COPYed into the target itself, like an
	// append-only sink's. Off for the rest of the epoch after a probe
	// finds a key (an epoch of updates pays one).
	probe bool
	txnBuffers
}

// txnBuffers are a delivery's buffers and key sets, kept by the target
// from one epoch to the next (target.bufs): grown afresh for every epoch
// they cost a quarter of the connector's CPU time (growslice and map
// growth in a profile of TestTargetThroughput, docs/benchmarks.md).
type txnBuffers struct {
	// keys holds the staged keys of an upsert sink, direct the keys
	// COPYed into the target in this transaction (memcomparable), until
	// the stage is applied; candKeys those of cand.
	keys, direct, candKeys map[string]struct{}
	cand                   []sink.Change
	// last and order dedupe one Write's batch.
	last  map[string]int
	order []string
	kb    []byte
	// pending holds encoded rows not sent yet (header included), all for
	// the target (pendingDirect) or all for the stage. spare is the
	// buffer to encode into next (the other one may be in flight).
	pending, spare []byte
	// rowEnds[i] is where pending row i ends in pending; rowKeys holds
	// the rows' keys (keyBytes of the target's order) back to back,
	// keyEnds[i] where row i's ends: send puts the rows in key order.
	rowEnds []int
	rowKeys []byte
	keyEnds []int
}

// release hands the buffers back to the target for the next epoch (no
// COPY may be in flight: it reads one of them).
func (x *txn) release() {
	b := x.txnBuffers
	x.txnBuffers = txnBuffers{}
	if b.keys == nil && b.pending == nil {
		return
	}
	clear(b.keys)
	clear(b.direct)
	clear(b.candKeys)
	clear(b.cand[:cap(b.cand)]) // the rows go to the GC
	b.cand = b.cand[:0]
	x.t.bufs = b
}

// maxCandRows (a variable for tests) is how many new-key rows an upsert
// delivery gathers before one probe decides where they go. A probe per
// worker batch (4,096 rows) cost a round trip each, which on a loaded
// machine waits for the backend to be scheduled: 49 per 200,000 rows
// (docs/benchmarks.md). 64 Ki keys are one index scan and a ~1 MB
// parameter.
var maxCandRows = 64 << 10

func (x *txn) Write(ctx context.Context, changes []sink.Change) error {
	if x.skip || len(changes) == 0 {
		return nil
	}
	cfg := x.t.cfg
	if !cfg.Upsert() {
		var ins []sink.Change
		for _, c := range changes {
			if c.Op.IsInsert() {
				ins = append(ins, c)
			}
		}
		return x.add(ctx, ins, x.t.direct)
	}
	// The last change of each key wins (the key's earlier changes in the
	// batch are superseded).
	if x.keys == nil {
		x.keys, x.direct, x.candKeys, x.last = map[string]struct{}{}, map[string]struct{}{}, map[string]struct{}{}, map[string]int{}
	}
	last := x.last
	clear(last)
	order := x.order[:0]
	for i, c := range changes {
		x.kb = keyBytes(x.kb[:0], c.Row, cfg)
		if _, seen := last[string(x.kb)]; !seen {
			order = append(order, string(x.kb))
			last[order[len(order)-1]] = i
		} else {
			last[string(x.kb)] = i
		}
	}
	x.order = order
	// A batch of new-key candidates: plain inserts only, of keys not staged,
	// not COPYed into the target and not gathered already in this
	// transaction (those must reach the target after the earlier change).
	// A batch with an update in it changes keys the target has (the
	// view had them): not worth a probe.
	cand := x.probe
	for _, c := range changes {
		cand = cand && c.Op == types.OpInsert
	}
	for _, k := range order {
		if !cand {
			break
		}
		_, staged := x.keys[k]
		_, direct := x.direct[k]
		_, gathered := x.candKeys[k]
		cand = changes[last[k]].Op.IsInsert() && !staged && !direct && !gathered
	}
	if cand {
		for _, k := range order {
			x.cand = append(x.cand, changes[last[k]])
			x.candKeys[k] = struct{}{}
		}
		if len(x.cand) >= maxCandRows {
			return x.resolve(ctx)
		}
		return nil
	}
	// The gathered rows go first: they come before this batch.
	if err := x.resolve(ctx); err != nil {
		return err
	}
	// A key staged already changes again: its staged change goes to the
	// target first, so the target sees the key's changes in order.
	apply := len(x.keys)+len(x.direct)+len(order) > maxStagedKeys
	for _, k := range order {
		if _, dup := x.keys[k]; dup {
			apply = true
			break
		}
	}
	if apply {
		if err := x.apply(ctx, true); err != nil {
			return err
		}
	}
	batch := make([]sink.Change, len(order))
	for i, k := range order {
		batch[i] = changes[last[k]]
		x.keys[k] = struct{}{}
	}
	return x.add(ctx, batch, false)
}

// resolve decides where the gathered new-key rows go: one probe of the
// target for all their keys; if it holds none, they are COPYed into the
// target itself (no key is staged or was COPYed in this transaction,
// Write made sure, so every key's order is kept), otherwise staged.
func (x *txn) resolve(ctx context.Context) error {
	if len(x.cand) == 0 {
		return nil
	}
	cand := x.cand
	x.cand = x.cand[:0]
	found, err := x.exists(ctx, cand)
	if err != nil {
		return err
	}
	if !found {
		x.t.probedIn++
		if len(x.direct)+len(x.candKeys) > maxStagedKeys {
			// Bounds the key sets (the stage is empty or applied: the
			// target then holds every row sent).
			if err := x.apply(ctx, true); err != nil {
				return err
			}
		}
		for k := range x.candKeys {
			x.direct[k] = struct{}{}
		}
		clear(x.candKeys)
		return x.add(ctx, cand, true)
	}
	x.probe = false
	if len(x.keys)+len(x.direct)+len(x.candKeys) > maxStagedKeys {
		if err := x.apply(ctx, true); err != nil {
			return err
		}
	}
	for k := range x.candKeys {
		x.keys[k] = struct{}{}
	}
	clear(x.candKeys)
	return x.add(ctx, cand, false)
}

// exists reports whether the target holds any key of changes.
func (x *txn) exists(ctx context.Context, changes []sink.Change) (bool, error) {
	if err := x.wait(); err != nil {
		return false, err
	}
	cfg := x.t.cfg
	x.t.probes++
	var found bool
	if len(cfg.Key) == 1 {
		switch k := cfg.Key[0]; cfg.Columns[k].Type.Kind {
		case types.KindInt16, types.KindInt32, types.KindInt64:
			// Integer keys go as one binary int8[]: no text to format
			// and parse (a NULL key never matches: left out).
			ints := make([]int64, 0, len(changes))
			for _, c := range changes {
				if d := c.Row[k]; !d.IsNull() {
					ints = append(ints, d.Int())
				}
			}
			q := fmt.Sprintf("SELECT EXISTS (SELECT 1 FROM %s WHERE %s = ANY($1::int8[]))", x.t.qualified(), quote(x.t.cols[k].name))
			if err := x.t.conn.QueryRow(ctx, q, ints).Scan(&found); err != nil {
				return false, fmt.Errorf("probe %s: %w", x.t.qualified(), err)
			}
			return found, nil
		}
	}
	params, conds, cols := make([]string, len(cfg.Key)), make([]string, len(cfg.Key)), make([]string, len(cfg.Key))
	args := make([]any, len(cfg.Key))
	for i, k := range cfg.Key {
		params[i], cols[i] = fmt.Sprintf("$%d::text[]", i+1), fmt.Sprintf("c%d", i)
		conds[i] = fmt.Sprintf("t.%s = u.c%d::%s", quote(x.t.cols[k].name), i, x.t.cols[k].cast)
		arr := make([]*string, len(changes))
		for j, c := range changes {
			if d := c.Row[k]; !d.IsNull() {
				s := types.FormatText(d, cfg.Columns[k].Type, nil)
				arr[j] = &s
			}
		}
		args[i] = arr
	}
	q := "SELECT EXISTS (SELECT 1 FROM " + x.t.qualified() + " AS t JOIN unnest(" + strings.Join(params, ", ") + ") AS u(" + strings.Join(cols, ", ") + ") ON " + strings.Join(conds, " AND ") + ")"
	if len(cfg.Key) == 1 {
		// One index scan over the sorted keys, whatever the plan (the
		// join above may be planned as a scan of the whole target).
		k := cfg.Key[0]
		q = fmt.Sprintf("SELECT EXISTS (SELECT 1 FROM %s WHERE %s = ANY($1::text[]::%s[]))", x.t.qualified(), quote(x.t.cols[k].name), x.t.cols[k].stage)
	}
	if err := x.t.conn.QueryRow(ctx, q, args...).Scan(&found); err != nil {
		return false, fmt.Errorf("probe %s: %w", x.t.qualified(), err)
	}
	return found, nil
}

// add encodes changes for the target itself (direct) or the stage, and
// sends the pending rows when they fill a chunk (or when the destination
// changes: rows reach the target in the order they were added).
func (x *txn) add(ctx context.Context, changes []sink.Change, direct bool) error {
	if len(changes) == 0 {
		return nil
	}
	if x.pendingRows > 0 && x.pendingDirect != direct {
		if err := x.send(ctx); err != nil {
			return err
		}
	}
	if x.pendingRows == 0 {
		x.pending = append(x.pending[:0], copyHeader...)
		x.pendingDirect = direct
		x.rowEnds, x.rowKeys, x.keyEnds = x.rowEnds[:0], x.rowKeys[:0], x.keyEnds[:0]
	}
	withDel := !direct && x.t.cfg.Upsert()
	// Only rows COPYed into the target itself are sorted here: the apply
	// statements read the stage in key order anyway (stageSource), so
	// sorting a staged chunk was CPU spent twice (docs/benchmarks.md).
	sortChunk := direct && len(x.t.order) > 0
	for _, c := range changes {
		var err error
		if x.pending, err = x.t.encode(x.pending, c, withDel); err != nil {
			return err
		}
		if sortChunk {
			x.rowEnds = append(x.rowEnds, len(x.pending))
			x.rowKeys = appendKey(x.rowKeys, c.Row, x.t.order, x.t.cfg)
			x.keyEnds = append(x.keyEnds, len(x.rowKeys))
		}
	}
	x.pendingRows += len(changes)
	if len(x.pending) >= copyChunk {
		return x.send(ctx)
	}
	return nil
}

// send COPYs the pending rows in the background: the error, if any, comes
// from the next wait.
func (x *txn) send(ctx context.Context) error {
	if x.pendingRows == 0 {
		return nil
	}
	if err := x.wait(); err != nil {
		return err
	}
	// The COPY before this one is done: spare is free.
	var buf []byte
	if sorted := x.sorted(x.spare[:0]); sorted != nil {
		buf, x.spare = sorted, x.pending
	} else {
		buf = x.pending
	}
	buf = binary.BigEndian.AppendUint16(buf, math.MaxUint16)
	done := make(chan error, 1)
	x.copies++
	conn, sql, into := x.t.conn.PgConn(), x.t.copySQL(x.pendingDirect), x.t.qualified()
	if !x.pendingDirect {
		into = "the staging table of " + into
		x.staged += x.pendingRows
	}
	go func() {
		_, err := conn.CopyFrom(ctx, bytes.NewReader(buf), sql)
		if err != nil {
			err = fmt.Errorf("copy into %s: %w", into, err)
		}
		done <- err
	}()
	x.inflight = done
	x.pending, x.spare, x.pendingRows = x.spare, buf, 0
	return nil
}

// sorted appends to dst the pending COPY stream (without its trailer)
// with the rows in key order (sortKey says why), or returns nil when
// they are in order already or have no order to keep.
func (x *txn) sorted(dst []byte) []byte {
	n := len(x.rowEnds)
	if n < 2 {
		return nil
	}
	key := func(i int) []byte {
		if i == 0 {
			return x.rowKeys[:x.keyEnds[0]]
		}
		return x.rowKeys[x.keyEnds[i-1]:x.keyEnds[i]]
	}
	perm := make([]int32, n)
	inOrder := true
	for i := range perm {
		perm[i] = int32(i)
		inOrder = inOrder && (i == 0 || bytes.Compare(key(i-1), key(i)) <= 0)
	}
	if inOrder {
		return nil
	}
	slices.SortStableFunc(perm, func(a, b int32) int { return bytes.Compare(key(int(a)), key(int(b))) })
	dst = append(dst, copyHeader...)
	for _, i := range perm {
		start := len(copyHeader)
		if i > 0 {
			start = x.rowEnds[i-1]
		}
		dst = append(dst, x.pending[start:x.rowEnds[i]]...)
	}
	return dst
}

// wait waits for the COPY in flight.
func (x *txn) wait() error {
	if x.inflight == nil {
		return nil
	}
	err := <-x.inflight
	x.inflight = nil
	return err
}

// apply sends what is pending and moves the staged changes into the
// target (and empties the stage when more will follow in this
// transaction; at commit ON COMMIT DELETE ROWS does it). Then every row
// added is in the target, visible to the probe: the key sets empty.
func (x *txn) apply(ctx context.Context, more bool) error {
	b, err := x.toApply(ctx)
	if err != nil || b == nil {
		return err
	}
	if more {
		b.Queue("TRUNCATE " + stageTable)
	}
	if err := x.t.conn.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("apply to %s: %w", x.t.qualified(), err)
	}
	x.applied()
	return nil
}

// toApply sends what is pending and waits for it, and returns the
// statements that move the staged changes into the target (nil when
// nothing is staged; then every row added is in the target already).
func (x *txn) toApply(ctx context.Context) (*pgx.Batch, error) {
	if err := x.resolve(ctx); err != nil {
		return nil, err
	}
	if err := x.send(ctx); err != nil {
		return nil, err
	}
	if err := x.wait(); err != nil {
		return nil, err
	}
	clear(x.direct)
	if x.staged == 0 {
		return nil, nil
	}
	b := &pgx.Batch{}
	switch {
	case x.t.merge && x.t.cfg.Upsert():
		b.Queue(x.t.mergeSQL())
	case x.t.cfg.Upsert():
		b.Queue(x.t.deleteSQL())
		b.Queue(x.t.insertSQL())
	default:
		b.Queue(x.t.insertSQL())
	}
	return b, nil
}

// applied records that the stage was applied: its keys are in the target,
// visible to the probe.
func (x *txn) applied() {
	x.staged = 0
	clear(x.keys)
}

// keyBytes appends the memcomparable encoding of a row's key (equal for
// values PostgreSQL's unique index takes as equal, e.g. 1.0 and 1.00).
func keyBytes(b []byte, r types.Row, cfg *sink.Config) []byte {
	return appendKey(b, r, cfg.Key, cfg)
}

// appendKey appends the memcomparable encoding of the row's columns cols.
func appendKey(b []byte, r types.Row, cols []int, cfg *sink.Config) []byte {
	for _, k := range cols {
		b = types.AppendKey(b, r[k], cfg.Columns[k].Type, false, false)
	}
	return b
}

// copyHeader starts a binary COPY stream: the signature, no flags, no
// header extension.
var copyHeader = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")

// encode appends a change as a row of a binary COPY stream (which starts
// with copyHeader and ends with a -1 field count): a 16-bit field count,
// then per field a 32-bit length (-1 for NULL) and the value's binary
// form (or its text, for a column cast from text); the stage's del flag
// last (withDel).
func (t *target) encode(buf []byte, c sink.Change, withDel bool) ([]byte, error) {
	fields := len(t.cols)
	if withDel {
		fields++
	}
	buf = binary.BigEndian.AppendUint16(buf, uint16(fields))
	for i, col := range t.cols {
		d, typ := c.Row[i], t.cfg.Columns[i].Type
		if d.IsNull() {
			buf = binary.BigEndian.AppendUint32(buf, math.MaxUint32)
			continue
		}
		at := len(buf)
		buf = append(buf, 0, 0, 0, 0)
		if col.binary {
			if d.Kind() != typ.Kind {
				return nil, fmt.Errorf("sink %s: column %s: a %v value in a %s column", t.cfg.Name, col.name, d.Kind(), typ.Name())
			}
			buf = types.AppendBinary(buf, d, typ)
		} else {
			buf = types.AppendText(buf, d, typ, nil)
		}
		binary.BigEndian.PutUint32(buf[at:], uint32(len(buf)-at-4))
	}
	if withDel {
		del := byte(0)
		if !c.Op.IsInsert() {
			del = 1
		}
		buf = append(buf, 0, 0, 0, 1, del)
	}
	return buf, nil
}

func (x *txn) Commit(ctx context.Context) error {
	if x.skip {
		x.release()
		x.t.rollback()
		return nil
	}
	defer func() {
		_ = x.wait() // the COPY in flight, if any, reads a buffer
		x.release()
	}()
	if x.small(ctx) {
		return x.commitSmall(ctx)
	}
	// toApply waits for the COPY in flight (a direct one included).
	b, err := x.toApply(ctx)
	if err != nil {
		_ = x.wait()
		x.t.rollback()
		return err
	}
	if b == nil {
		b = &pgx.Batch{}
	}
	// I8 (and I7 end to end): the rows and the progress row commit in one
	// PostgreSQL transaction, so the target holds an epoch's rows exactly
	// when it records the epoch. The apply statements, the progress row
	// and COMMIT go in one round trip; after an error in any of them the
	// server skips the rest (COMMIT included) and the transaction is
	// rolled back here.
	b.Queue(`UPDATE `+quote(x.t.schema)+`.`+ProgressTable+` SET epoch = $2 WHERE sink = $1`, x.t.key, int64(x.epoch))
	b.Queue("COMMIT")
	n := b.Len()
	br := x.t.conn.SendBatch(ctx, b)
	var tag pgconn.CommandTag
	for i := 0; i < n && err == nil; i++ {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil && tag.String() != "COMMIT" {
		// COMMIT of a transaction that failed earlier answers ROLLBACK.
		err = fmt.Errorf("commit: the transaction was rolled back (%s)", tag)
	}
	if err != nil {
		x.t.rollback()
		return fmt.Errorf("apply to %s: %w", x.t.qualified(), err)
	}
	x.applied()
	return nil
}

// smallRows bounds the rows of an epoch committed by commitSmall (its
// statements carry them as parameters, planned afresh each time).
const smallRows = 32

// small reports whether the epoch is committed by commitSmall: nothing
// was sent yet and at most smallRows rows are pending. Gathered new keys
// are encoded as stage rows then, without a probe (commitSmall upserts
// them).
func (x *txn) small(ctx context.Context) bool {
	if x.copies > 0 || x.staged > 0 || x.inflight != nil || len(x.cand)+x.pendingRows > smallRows ||
		(len(x.cand) > 0 && x.pendingRows > 0 && x.pendingDirect) {
		return false
	}
	if len(x.cand) > 0 {
		// Distinct keys, none staged (Write made sure).
		cand := x.cand
		x.cand = x.cand[:0]
		clear(x.candKeys)
		if err := x.add(ctx, cand, false); err != nil || x.copies > 0 {
			return false // add sent a COPY (tests' tiny chunks): the usual path
		}
	}
	return true
}

// commitSmall commits a small epoch in one round trip: its rows as the
// parameters of set statements on the target itself (no stage: for a few
// rows the stage's COPY and MERGE cost milliseconds), the progress row
// and COMMIT (I8: all in one transaction, as on the usual path). The
// statements do what the apply statements do with a stage holding these
// rows (each key at most once: Write made sure): an upsert sink's rows
// marked del are deleted by key and the others inserted ON CONFLICT
// (key) DO UPDATE; NULL keys match nothing, as in the MERGE. A one-row
// epoch took five to seven round trips before (BEGIN, the progress row's
// lock, a probe, a COPY, the apply, the progress row, COMMIT):
// TestSmallEpochLatency.
func (x *txn) commitSmall(ctx context.Context) error {
	t := x.t
	b := &pgconn.Batch{}
	if x.pendingRows > 0 {
		upsert := !x.pendingDirect && t.cfg.Upsert()
		type param struct {
			v   []byte
			oid uint32
		}
		// The pending COPY rows, field by field: a 16-bit count, then per
		// field a 32-bit length (-1: NULL) and the binary value; an
		// upsert's stage rows end with the del flag.
		var ins, del [][]param
		buf := x.pending[len(copyHeader):]
		for r := 0; r < x.pendingRows; r++ {
			n := int(binary.BigEndian.Uint16(buf))
			buf = buf[2:]
			row := make([]param, n)
			for f := range row {
				l := int32(binary.BigEndian.Uint32(buf))
				buf = buf[4:]
				if l >= 0 {
					row[f].v, buf = buf[:l], buf[l:]
				}
				if f < len(t.cols) {
					row[f].oid = t.cols[f].oid
				}
			}
			if upsert && row[n-1].v[0] == 1 {
				del = append(del, row)
			} else {
				ins = append(ins, row[:len(t.cols)])
			}
		}
		// stmt renders rows as ($1::type, ...), ... over the columns cols,
		// queued with their values.
		stmt := func(prefix string, rows [][]param, cols []int, suffix string) {
			var values [][]byte
			var oids []uint32
			var formats []int16
			tuples := make([]string, len(rows))
			for r, row := range rows {
				ph := make([]string, len(cols))
				for i, c := range cols {
					values, oids, formats = append(values, row[c].v), append(oids, row[c].oid), append(formats, 1)
					ph[i] = fmt.Sprintf("$%d::%s", len(values), t.cols[c].cast)
				}
				tuples[r] = "(" + strings.Join(ph, ", ") + ")"
			}
			b.ExecParams(prefix+strings.Join(tuples, ", ")+suffix, values, oids, formats, nil)
		}
		all := make([]int, len(t.cols))
		for i := range all {
			all[i] = i
		}
		if len(del) > 0 {
			keys := make([]string, len(t.cfg.Key))
			for i, k := range t.cfg.Key {
				keys[i] = quote(t.cols[k].name)
			}
			stmt("DELETE FROM "+t.qualified()+" WHERE ("+strings.Join(keys, ", ")+") IN (", del, t.cfg.Key, ")")
		}
		if len(ins) > 0 {
			suffix := ""
			if upsert {
				suffix = t.onConflict()
			}
			stmt("INSERT INTO "+t.qualified()+" ("+t.columnNames()+") VALUES ", ins, all, suffix)
		}
	}
	b.ExecParams(`UPDATE `+quote(t.schema)+`.`+ProgressTable+` SET epoch = $2 WHERE sink = $1`,
		[][]byte{[]byte(t.key), []byte(strconv.FormatUint(x.epoch, 10))}, []uint32{oidText, oidInt8}, nil, nil)
	b.ExecParams("COMMIT", nil, nil, nil, nil)
	results, err := t.conn.PgConn().ExecBatch(ctx, b).ReadAll()
	for _, r := range results {
		if err == nil {
			err = r.Err
		}
	}
	if err == nil && (len(results) == 0 || results[len(results)-1].CommandTag.String() != "COMMIT") {
		err = errors.New("commit: the transaction was rolled back")
	}
	if err != nil {
		t.rollback()
		return fmt.Errorf("apply to %s: %w", t.qualified(), err)
	}
	x.pendingRows = 0
	return nil
}

func (x *txn) Rollback() {
	_ = x.wait()
	x.release()
	x.t.rollback()
}

// rollback ends the connection's transaction, if one is open (after a
// failed statement, or to abandon a delivery).
func (t *target) rollback() {
	if t.conn == nil || t.conn.PgConn().TxStatus() == 'I' {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = t.conn.Exec(ctx, "ROLLBACK")
}
