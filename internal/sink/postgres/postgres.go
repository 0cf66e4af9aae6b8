// Package postgres is the sink connector writing to a PostgreSQL table,
// registered as "postgres" and as "jdbc" (RisingWave's name for it, with
// jdbc.url = 'jdbc:postgresql://host:port/db?user=...&password=...').
//
// Each delivered epoch is one PostgreSQL transaction that applies the
// epoch's changes in batches (an upsert sink: per batch, the last change
// of each key wins — deletes as one DELETE ... USING unnest(...), the rest
// as one INSERT ... SELECT FROM unnest(...) ON CONFLICT (key) DO UPDATE;
// an append-only sink: one INSERT per batch) and records the epoch in a
// progress row of runnel_sink_progress in the target's schema. Open reads
// that row, so after any crash the worker delivers exactly the epochs the
// table lacks (I8: exactly once), and Begin re-checks it under FOR UPDATE.
// Values travel as text and are cast to the target columns' types, which
// Open reads from the target's catalog (so a missing table or column, or a
// key without a unique index, fails CREATE SINK with PostgreSQL's error).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/sink"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

func init() {
	sink.Register("postgres", sink.Connector{New: New})
	sink.Register("jdbc", sink.Connector{New: New})
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
	// casts[i] is the target type of column i (format_type).
	casts []string
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
	rows, err := conn.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
		WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped`, t.qualified())
	if err != nil {
		return 0, fmt.Errorf("sink %s: target table %s.%s: %w", t.cfg.Name, t.schema, t.table, err)
	}
	types := map[string]string{}
	for rows.Next() {
		var n, ty string
		if err := rows.Scan(&n, &ty); err != nil {
			return 0, err
		}
		types[n] = ty
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("sink %s: target table %s.%s: %w", t.cfg.Name, t.schema, t.table, err)
	}
	t.casts = make([]string, len(t.cfg.Columns))
	for i, c := range t.cfg.Columns {
		ty, found := types[c.Name]
		if !found {
			return 0, sqlerr.Errorf(sqlerr.UndefinedColumn, "sink %s: column %q of the sink does not exist in the target table %s.%s", t.cfg.Name, c.Name, t.schema, t.table)
		}
		t.casts[i] = ty
	}
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
	// Check the statements (types) now, not at the first delivery.
	check := []string{t.insertSQL()}
	if t.cfg.Upsert() {
		check = append(check, t.deleteSQL())
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

// unnest renders "unnest($1::text[], ...) AS u(c0, ...)" over cols and
// the casts of those columns' values.
func (t *target) unnest(cols []int) (from string, casts []string) {
	params := make([]string, len(cols))
	names := make([]string, len(cols))
	for i, c := range cols {
		params[i] = fmt.Sprintf("$%d::text[]", i+1)
		names[i] = fmt.Sprintf("c%d", i)
		casts = append(casts, fmt.Sprintf("u.c%d::%s", i, t.casts[c]))
	}
	return "unnest(" + strings.Join(params, ", ") + ") AS u(" + strings.Join(names, ", ") + ")", casts
}

func (t *target) allColumns() []int {
	out := make([]int, len(t.cfg.Columns))
	for i := range out {
		out[i] = i
	}
	return out
}

func (t *target) insertSQL() string {
	from, casts := t.unnest(t.allColumns())
	names := make([]string, len(t.cfg.Columns))
	for i, c := range t.cfg.Columns {
		names[i] = quote(c.Name)
	}
	q := "INSERT INTO " + t.qualified() + " (" + strings.Join(names, ", ") + ") SELECT " + strings.Join(casts, ", ") + " FROM " + from
	if !t.cfg.Upsert() {
		return q
	}
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
	q += " ON CONFLICT (" + strings.Join(keys, ", ") + ")"
	if len(sets) == 0 {
		return q + " DO NOTHING"
	}
	return q + " DO UPDATE SET " + strings.Join(sets, ", ")
}

func (t *target) deleteSQL() string {
	from, casts := t.unnest(t.cfg.Key)
	conds := make([]string, len(t.cfg.Key))
	for i, k := range t.cfg.Key {
		conds[i] = "t." + quote(t.cfg.Columns[k].Name) + " = " + casts[i]
	}
	return "DELETE FROM " + t.qualified() + " AS t USING " + from + " WHERE " + strings.Join(conds, " AND ")
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
	tx, err := t.conn.Begin(ctx)
	if err != nil {
		return nil, err
	}
	var has int64
	if err := tx.QueryRow(ctx, `SELECT epoch FROM `+quote(t.schema)+`.`+ProgressTable+` WHERE sink = $1 FOR UPDATE`, t.key).Scan(&has); err != nil {
		_ = tx.Rollback(ctx)
		return nil, err
	}
	return &txn{t: t, tx: tx, epoch: epoch, skip: uint64(has) >= epoch}, nil
}

type txn struct {
	t     *target
	tx    pgx.Tx
	epoch uint64
	skip  bool
}

// text renders a value for a text[] parameter (nil: NULL).
func text(d types.Datum, t types.Type) *string {
	if d.IsNull() {
		return nil
	}
	s := types.FormatText(d, t, nil)
	return &s
}

func (x *txn) Write(ctx context.Context, changes []sink.Change) error {
	if x.skip || len(changes) == 0 {
		return nil
	}
	cfg := x.t.cfg
	var ins []types.Row
	var del []types.Row
	if !cfg.Upsert() {
		for _, c := range changes {
			if c.Op.IsInsert() {
				ins = append(ins, c.Row)
			}
		}
	} else {
		// The last change of each key wins (the key's earlier changes in
		// the batch are superseded).
		last := map[string]int{}
		var order []string
		for i, c := range changes {
			k := keyString(c.Row, cfg)
			if _, seen := last[k]; !seen {
				order = append(order, k)
			}
			last[k] = i
		}
		for _, k := range order {
			c := changes[last[k]]
			if c.Op.IsInsert() {
				ins = append(ins, c.Row)
			} else {
				del = append(del, c.Row)
			}
		}
	}
	if len(del) > 0 {
		if _, err := x.tx.Exec(ctx, x.t.deleteSQL(), x.t.columnArrays(del, cfg.Key)...); err != nil {
			return fmt.Errorf("delete from %s: %w", x.t.qualified(), err)
		}
	}
	if len(ins) > 0 {
		if _, err := x.tx.Exec(ctx, x.t.insertSQL(), x.t.columnArrays(ins, x.t.allColumns())...); err != nil {
			return fmt.Errorf("insert into %s: %w", x.t.qualified(), err)
		}
	}
	return nil
}

func keyString(r types.Row, cfg *sink.Config) string {
	var b []byte
	for _, k := range cfg.Key {
		if r[k].IsNull() {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		b = types.AppendText(b, r[k], cfg.Columns[k].Type, nil)
		b = append(b, 0xff)
	}
	return string(b)
}

// columnArrays turns rows into one text array per column of cols.
func (t *target) columnArrays(rows []types.Row, cols []int) []any {
	out := make([]any, len(cols))
	for j, c := range cols {
		arr := make([]*string, len(rows))
		for i, r := range rows {
			arr[i] = text(r[c], t.cfg.Columns[c].Type)
		}
		out[j] = arr
	}
	return out
}

func (x *txn) Commit(ctx context.Context) error {
	if x.skip {
		return x.tx.Rollback(ctx)
	}
	if _, err := x.tx.Exec(ctx, `UPDATE `+quote(x.t.schema)+`.`+ProgressTable+` SET epoch = $2 WHERE sink = $1`, x.t.key, int64(x.epoch)); err != nil {
		_ = x.tx.Rollback(ctx)
		return err
	}
	return x.tx.Commit(ctx)
}

func (x *txn) Rollback() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = x.tx.Rollback(ctx)
}
