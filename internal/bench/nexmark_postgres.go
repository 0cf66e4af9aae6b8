package bench

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/connector/nexmark"
	"github.com/runneldb/runnel/internal/types"
)

// This file is the reference side of the Nexmark correctness check: the
// same generated events loaded into PostgreSQL as plain tables, and each
// query rewritten into SQL PostgreSQL runs.
//
// The rewrite is one rule, applied to the query text Runnel runs, so the
// reference cannot drift from the benchmark's queries. PostgreSQL has no
// TUMBLE or HOP table functions; each call becomes a derived table named
// after its input table (so `bid.auction` and unqualified columns still
// resolve) that adds window_start and window_end:
//
//	TUMBLE(t, ts, INTERVAL 'n' SECOND)
//	  → (SELECT x.*, date_bin('n s', x.ts, 'epoch') AS window_start,
//	            date_bin('n s', x.ts, 'epoch') + 'n s' AS window_end FROM t x) AS t
//
//	HOP(t, ts, INTERVAL 's' SECOND, INTERVAL 'n' SECOND)       (n a multiple of s)
//	  → (SELECT x.*, w.window_start, w.window_start + 'n s' AS window_end FROM t x
//	     CROSS JOIN LATERAL (SELECT date_bin('s s', x.ts, 'epoch') - k * 's s' AS window_start
//	                         FROM generate_series(0, n/s - 1) AS k) w) AS t
//
// Windows are aligned to the Unix epoch and half open, [start, end), as
// RisingWave defines them: a tumbling window holds ts when start <= ts <
// start + n, and a row is in the n/s hopping windows whose starts are the
// slide-aligned instants in (ts - n, ts].

var (
	tumbleCall = regexp.MustCompile(`(?i)TUMBLE\(\s*(\w+)\s*,\s*(\w+)\s*,\s*INTERVAL\s*'(\d+)'\s*SECOND\s*\)`)
	hopCall    = regexp.MustCompile(`(?i)HOP\(\s*(\w+)\s*,\s*(\w+)\s*,\s*INTERVAL\s*'(\d+)'\s*SECOND\s*,\s*INTERVAL\s*'(\d+)'\s*SECOND\s*\)`)
)

// NexmarkPostgresSQL rewrites a Nexmark query of NexmarkQueries into the
// SQL PostgreSQL answers over tables of the same names (see above).
func NexmarkPostgresSQL(q string) (string, error) {
	var err error
	q = tumbleCall.ReplaceAllStringFunc(q, func(m string) string {
		g := tumbleCall.FindStringSubmatch(m)
		t, ts, n := g[1], g[2], g[3]
		start := fmt.Sprintf("date_bin(INTERVAL '%s seconds', x.%s, TIMESTAMP '1970-01-01')", n, ts)
		return fmt.Sprintf("(SELECT x.*, %s AS window_start, %s + INTERVAL '%s seconds' AS window_end FROM %s x) AS %s",
			start, start, n, t, t)
	})
	q = hopCall.ReplaceAllStringFunc(q, func(m string) string {
		g := hopCall.FindStringSubmatch(m)
		t, ts := g[1], g[2]
		slide, _ := strconv.Atoi(g[3])
		size, _ := strconv.Atoi(g[4])
		if slide <= 0 || size%slide != 0 {
			err = fmt.Errorf("bench: HOP size %d s is not a multiple of its slide %d s", size, slide)
			return m
		}
		return fmt.Sprintf(`(SELECT x.*, w.window_start, w.window_start + INTERVAL '%d seconds' AS window_end FROM %s x
			CROSS JOIN LATERAL (SELECT date_bin(INTERVAL '%d seconds', x.%s, TIMESTAMP '1970-01-01') - k * INTERVAL '%d seconds' AS window_start
				FROM generate_series(0, %d) AS k) w) AS %s`, size, t, slide, ts, slide, size/slide-1, t)
	})
	return q, err
}

// LoadNexmarkPostgres creates the tables person, auction and bid on conn
// and fills them with the events of a nexmark source declared with
// options (the WITH options of CREATE SOURCE, without connector and
// nexmark.table.type): the rows every split of such a source produces
// together, since a row is a pure function of its event id.
func LoadNexmarkPostgres(ctx context.Context, conn *pgx.Conn, options map[string]string) error {
	for _, name := range []string{"person", "auction", "bid"} {
		opts := map[string]string{nexmark.OptTableType: name}
		for k, v := range options {
			opts[k] = v
		}
		cfg, tt, err := nexmark.ParseOptions(opts)
		if err != nil {
			return fmt.Errorf("bench: nexmark options: %w", err)
		}
		if cfg.MaxEvents <= 0 {
			return fmt.Errorf("bench: loading nexmark into PostgreSQL needs %s", nexmark.OptEventNum)
		}
		if _, err := conn.Exec(ctx, "CREATE TABLE "+nexmarkTables[name]); err != nil {
			return fmt.Errorf("bench: create %s in PostgreSQL: %w", name, err)
		}
		g := nexmark.NewGenerator(cfg)
		r, err := g.NewReader(tt, 0, 1, nexmark.StartPosition(0))
		if err != nil {
			return err
		}
		cols := tt.Columns()
		names := make([]string, len(cols))
		for i, c := range cols {
			names[i] = c.Name
		}
		var rows [][]any
		for !r.Done() {
			for _, row := range r.Next(nil, 4096) {
				vals := make([]any, len(row))
				for i, d := range row {
					vals[i] = goValue(d)
				}
				rows = append(rows, vals)
			}
		}
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{name}, names, pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("bench: copy %s into PostgreSQL: %w", name, err)
		}
	}
	_, err := conn.Exec(ctx, "ANALYZE")
	return err
}

// goValue converts a generated datum (BIGINT, VARCHAR or TIMESTAMP) to the
// Go value pgx encodes as the same PostgreSQL value.
func goValue(d types.Datum) any {
	switch d.Kind() {
	case types.KindNull:
		return nil
	case types.KindInt64:
		return d.Int()
	case types.KindTimestamp:
		return time.UnixMicro(d.Int()).UTC()
	}
	return d.Str()
}
