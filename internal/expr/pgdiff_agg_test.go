package expr

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/types"
)

// TestDifferentialGroupBy compares aggregates (plain and DISTINCT) over
// random groups with PostgreSQL's GROUP BY. Rows are fed in id order, the
// order the query's ORDER BY gives string_agg.
func TestDifferentialGroupBy(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("EXPR_DIFF_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	r := rand.New(rand.NewPCG(seed, 11))
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SET extra_float_digits = 1"); err != nil {
		t.Fatal(err)
	}
	type aggCase struct {
		sql      string
		name     string
		distinct bool
		typs     []types.Type
		cols     []string
	}
	cases := []aggCase{
		{"count(*)", "count", false, nil, nil},
		{"count(v)", "count", false, []types.Type{i4}, []string{"v"}},
		{"count(DISTINCT v)", "count", true, []types.Type{i4}, []string{"v"}},
		{"sum(v)", "sum", false, []types.Type{i4}, []string{"v"}},
		{"sum(DISTINCT v)", "sum", true, []types.Type{i4}, []string{"v"}},
		{"avg(v)", "avg", false, []types.Type{i4}, []string{"v"}},
		{"avg(DISTINCT n)", "avg", true, []types.Type{nu}, []string{"n"}},
		{"sum(n)", "sum", false, []types.Type{nu}, []string{"n"}},
		{"min(t)", "min", false, []types.Type{tx}, []string{"t"}},
		{"max(d)", "max", false, []types.Type{types.Date}, []string{"d"}},
		{"string_agg(t, ',' ORDER BY id)", "string_agg", false, []types.Type{tx, tx}, []string{"t", "','"}},
		{"string_agg(DISTINCT t, ',')", "string_agg", true, []types.Type{tx, tx}, []string{"t", "','"}},
		{"stddev(n)", "stddev", false, []types.Type{nu}, []string{"n"}},
		{"variance(v)", "variance", false, []types.Type{i4}, []string{"v"}},
		{"var_pop(f)", "var_pop", false, []types.Type{fl8}, []string{"f"}},
		{"sum(f)", "sum", false, []types.Type{fl8}, []string{"f"}},
		{"bool_and(v > 3)", "bool_and", false, []types.Type{types.Bool}, []string{"v>3"}},
		{"bool_or(v > 10)", "bool_or", false, []types.Type{types.Bool}, []string{"v>10"}},
	}
	argOf := func(w wrow, c string) types.Datum {
		switch c {
		case "v>3", "v>10":
			if w.v.IsNull() {
				return types.NullDatum
			}
			lim := int64(3)
			if c == "v>10" {
				lim = 10
			}
			return types.DBool(w.v.Int() > lim)
		}
		return colArgs(c)(w)[0]
	}
	for round := 0; round < 8; round++ {
		rows := randWindowRows(r)
		if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS w; CREATE TABLE w (id int, p int, o int, v int, n numeric, f float8, t text, d date)"); err != nil {
			t.Fatal(err)
		}
		for _, w := range rows {
			lit := func(d types.Datum, typ types.Type) string {
				if d.IsNull() {
					return "NULL"
				}
				return "'" + types.FormatText(d, typ, nil) + "'"
			}
			if _, err := conn.Exec(ctx, fmt.Sprintf("INSERT INTO w VALUES (%d, %s, %s, %s, %s, %s, %s, %s)", w.id,
				lit(w.p, i4), lit(w.o, i4), lit(w.v, i4), lit(w.n, nu), lit(w.f, fl8), lit(w.t, tx), lit(w.d, types.Date))); err != nil {
				t.Fatal(err)
			}
		}
		groups := map[string][]wrow{}
		for _, w := range rows {
			groups[w.p.String()] = append(groups[w.p.String()], w)
		}
		for _, c := range cases {
			q := "SELECT p::text, (" + c.sql + ")::text FROM w GROUP BY p"
			pgRows, err := conn.Query(ctx, q, pgx.QueryExecModeSimpleProtocol)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			want := map[string]string{}
			for pgRows.Next() {
				var p, v *string
				if err := pgRows.Scan(&p, &v); err != nil {
					t.Fatal(err)
				}
				key := "NULL"
				if p != nil {
					key = *p
				}
				want[key] = "NULL"
				if v != nil {
					want[key] = *v
				}
			}
			if err := pgRows.Err(); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			agg, err := LookupAggregate(c.name, c.typs, c.distinct)
			if err != nil {
				t.Fatalf("%s: %v", c.sql, err)
			}
			for key, ws := range groups {
				sort.Slice(ws, func(i, j int) bool { return ws[i].id < ws[j].id })
				st := agg.NewState()
				for _, w := range ws {
					args := make([]types.Datum, len(c.cols))
					for i, col := range c.cols {
						args[i] = argOf(w, col)
					}
					if err := st.Add(args); err != nil {
						t.Fatalf("%s: %v", c.sql, err)
					}
				}
				v, err := st.Result()
				if err != nil {
					t.Fatalf("%s: %v", c.sql, err)
				}
				got := "NULL"
				if !v.IsNull() {
					got = types.FormatText(v, agg.ResultType, nil)
					if agg.ResultType.Kind == types.KindBool { // ::text of a boolean
						got = map[bool]string{true: "true", false: "false"}[v.Bool()]
					}
				}
				if c.name == "string_agg" && c.distinct {
					// PostgreSQL feeds DISTINCT inputs sorted; compare as sets
					got, want[key] = sortedParts(got), sortedParts(want[key])
				}
				if got != want[key] && !floatClose(outcome{val: got, typ: "double precision"}, outcome{val: want[key], typ: "double precision"}) {
					t.Errorf("seed %d: %s group p=%s: postgres %q, runnel %q", seed, c.sql, key, want[key], got)
				}
			}
		}
	}
}

func sortedParts(s string) string {
	if s == "NULL" {
		return s
	}
	parts := splitComma(s)
	sort.Strings(parts)
	return fmt.Sprint(parts)
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
