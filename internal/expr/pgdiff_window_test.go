package expr

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/types"
)

// TestDifferentialWindow compares ComputeWindow with PostgreSQL's
// WindowAgg over random partitions, for every frame mode, bound kind and
// exclusion. Queries whose result depends on the order of peers use a
// total order (ORDER BY o, id); the others order by o alone so that peer
// groups are non-trivial. EXPR_DIFF_SEED sets the seed.

type wrow struct {
	id   int
	p, o types.Datum // int4
	v    types.Datum // int4
	n    types.Datum // numeric
	f    types.Datum // float8
	t    types.Datum // text
	d    types.Datum // date
}

func randWindowRows(r *rand.Rand) []wrow {
	n := r.IntN(60)
	rows := make([]wrow, n)
	maybeNull := func(d types.Datum) types.Datum {
		if r.IntN(8) == 0 {
			return types.NullDatum
		}
		return d
	}
	for i := range rows {
		o := int32(r.IntN(12))
		num, _ := types.ParseText(fmt.Sprintf("%d.%d", r.IntN(40)-10, r.IntN(100)), types.Numeric, nil)
		rows[i] = wrow{
			id: i + 1,
			p:  maybeNull(types.DInt32(int32(r.IntN(3)))),
			o:  maybeNull(types.DInt32(o)),
			v:  maybeNull(types.DInt32(int32(r.IntN(30) - 8))),
			n:  maybeNull(num),
			f:  maybeNull(types.DFloat64(float64(r.IntN(1000)) / 8)),
			t:  maybeNull(types.DVarchar(string(rune('a' + r.IntN(5))))),
			d:  maybeNull(types.DDate(int64(19000 + 3*r.IntN(10)))),
		}
	}
	return rows
}

type wcall struct {
	sql  string // function call text
	name string
	args func(w wrow) []types.Datum
	typs []types.Type
}

func colArgs(cols ...string) func(w wrow) []types.Datum {
	return func(w wrow) []types.Datum {
		out := make([]types.Datum, len(cols))
		for i, c := range cols {
			switch c {
			case "v":
				out[i] = w.v
			case "n":
				out[i] = w.n
			case "f":
				out[i] = w.f
			case "t":
				out[i] = w.t
			case "d":
				out[i] = w.d
			case "2":
				out[i] = types.DInt32(2)
			case "3":
				out[i] = types.DInt32(3)
			case "-1":
				out[i] = types.DInt32(-1)
			case "','":
				out[i] = types.DVarchar(",")
			}
		}
		return out
	}
}

func wc(name string, typs []types.Type, cols ...string) wcall {
	sqlArgs := strings.Join(cols, ", ")
	if name == "count" && len(cols) == 0 {
		sqlArgs = "*"
	}
	return wcall{sql: name + "(" + sqlArgs + ")", name: name, args: colArgs(cols...), typs: typs}
}

var (
	i4, nu, fl8, tx = types.Int32, types.Numeric, types.Float64, types.Text
	// order-insensitive within peers
	peerSafeCalls = []wcall{
		wc("rank", nil), wc("dense_rank", nil), wc("percent_rank", nil), wc("cume_dist", nil),
		wc("count", nil), wc("count", []types.Type{i4}, "v"), wc("sum", []types.Type{i4}, "v"),
		wc("min", []types.Type{i4}, "v"), wc("max", []types.Type{i4}, "v"), wc("avg", []types.Type{i4}, "v"),
		wc("sum", []types.Type{nu}, "n"), wc("avg", []types.Type{nu}, "n"), wc("max", []types.Type{tx}, "t"),
		wc("stddev_samp", []types.Type{i4}, "v"), wc("var_pop", []types.Type{nu}, "n"), wc("min", []types.Type{nu}, "n"),
		wc("var_samp", []types.Type{fl8}, "f"), wc("stddev_pop", []types.Type{fl8}, "f"), wc("sum", []types.Type{fl8}, "f"),
		wc("avg", []types.Type{fl8}, "f"), wc("count", []types.Type{tx}, "t"),
	}
	orderedCalls = append([]wcall{
		wc("row_number", nil), wc("ntile", []types.Type{i4}, "3"), wc("lag", []types.Type{i4}, "v"),
		wc("lag", []types.Type{i4, i4, i4}, "v", "2", "-1"), wc("lead", []types.Type{i4}, "v"),
		wc("lead", []types.Type{nu, i4}, "n", "2"),
		wc("first_value", []types.Type{i4}, "v"), wc("last_value", []types.Type{i4}, "v"),
		wc("nth_value", []types.Type{i4, i4}, "v", "2"), wc("string_agg", []types.Type{tx, tx}, "t", "','"),
	}, peerSafeCalls...)
)

type wframe struct {
	sql   string
	frame Frame
}

func ib(k BoundKind, n int64) FrameBound { return FrameBound{Kind: k, Offset: types.DInt64(n)} }

var (
	rowsFrames = []wframe{
		{"", DefaultFrame()},
		{"ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING", Frame{Mode: FrameRows, Start: ib(OffsetPreceding, 2), End: ib(OffsetFollowing, 1)}},
		{"ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING", Frame{Mode: FrameRows, Start: ib(UnboundedPreceding, 0), End: ib(UnboundedFollowing, 0)}},
		{"ROWS BETWEEN 1 FOLLOWING AND 3 FOLLOWING", Frame{Mode: FrameRows, Start: ib(OffsetFollowing, 1), End: ib(OffsetFollowing, 3)}},
		{"ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING", Frame{Mode: FrameRows, Start: ib(OffsetPreceding, 3), End: ib(OffsetPreceding, 1)}},
		{"ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING EXCLUDE CURRENT ROW", Frame{Mode: FrameRows, Start: ib(CurrentRow, 0), End: ib(UnboundedFollowing, 0), Exclude: ExcludeCurrentRow}},
		{"ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING EXCLUDE CURRENT ROW", Frame{Mode: FrameRows, Start: ib(OffsetPreceding, 2), End: ib(OffsetFollowing, 2), Exclude: ExcludeCurrentRow}},
		{"ROWS BETWEEN 0 PRECEDING AND 0 FOLLOWING", Frame{Mode: FrameRows, Start: ib(OffsetPreceding, 0), End: ib(OffsetFollowing, 0)}},
	}
	peerFrames = []wframe{
		{"", DefaultFrame()},
		{"RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING", Frame{Mode: FrameRange, Start: ib(CurrentRow, 0), End: ib(UnboundedFollowing, 0)}},
		{"GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING", Frame{Mode: FrameGroups, Start: ib(OffsetPreceding, 1), End: ib(OffsetFollowing, 1)}},
		{"GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE GROUP", Frame{Mode: FrameGroups, Start: ib(OffsetPreceding, 1), End: ib(OffsetFollowing, 1), Exclude: ExcludeGroup}},
		{"GROUPS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE TIES", Frame{Mode: FrameGroups, Start: ib(UnboundedPreceding, 0), End: ib(CurrentRow, 0), Exclude: ExcludeTies}},
		{"GROUPS BETWEEN 2 FOLLOWING AND UNBOUNDED FOLLOWING", Frame{Mode: FrameGroups, Start: ib(OffsetFollowing, 2), End: ib(UnboundedFollowing, 0)}},
		{"RANGE BETWEEN 2 PRECEDING AND 2 FOLLOWING", Frame{Mode: FrameRange, Start: FrameBound{Kind: OffsetPreceding, Offset: types.DInt32(2)}, End: FrameBound{Kind: OffsetFollowing, Offset: types.DInt32(2)}}},
		{"RANGE BETWEEN 5 PRECEDING AND 1 PRECEDING", Frame{Mode: FrameRange, Start: FrameBound{Kind: OffsetPreceding, Offset: types.DInt32(5)}, End: FrameBound{Kind: OffsetPreceding, Offset: types.DInt32(1)}}},
		{"RANGE BETWEEN CURRENT ROW AND 3 FOLLOWING EXCLUDE CURRENT ROW", Frame{Mode: FrameRange, Start: ib(CurrentRow, 0), End: FrameBound{Kind: OffsetFollowing, Offset: types.DInt32(3)}, Exclude: ExcludeCurrentRow}},
		{"RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING EXCLUDE TIES", Frame{Mode: FrameRange, Start: ib(UnboundedPreceding, 0), End: ib(UnboundedFollowing, 0), Exclude: ExcludeTies}},
	}
)

func cmpNullsLast(a, b types.Datum, desc bool) int {
	// ASC: NULLS LAST; DESC: NULLS FIRST (PostgreSQL defaults)
	c := types.Compare(a, b) // NULL sorts last here
	if desc {
		return -c
	}
	return c
}

// ourWindow computes the call for every row, partitioned by p and sorted
// by the key column (o or d), optionally tie-broken by id.
func ourWindow(rows []wrow, call wcall, fr Frame, key string, desc, total bool) (map[int]string, error) {
	fn, err := LookupWindowFunc(call.name, call.typs)
	if err != nil {
		return nil, err
	}
	keyOf := func(w wrow) types.Datum {
		if key == "d" {
			return w.d
		}
		return w.o
	}
	parts := map[string][]wrow{}
	var order []string
	for _, w := range rows {
		k := w.p.String()
		if _, ok := parts[k]; !ok {
			order = append(order, k)
		}
		parts[k] = append(parts[k], w)
	}
	out := map[int]string{}
	ctx := &EvalContext{Ctx: context.Background(), Location: time.UTC}
	for _, k := range order {
		pr := parts[k]
		slices.SortStableFunc(pr, func(a, b wrow) int {
			if key != "" {
				if c := cmpNullsLast(keyOf(a), keyOf(b), desc); c != 0 {
					return c
				}
			}
			return a.id - b.id
		})
		in := &WindowInput{Args: make([][]types.Datum, len(pr)), OrderKey: make([]types.Datum, len(pr)), Desc: desc, NullsFirst: desc}
		for i, w := range pr {
			in.Args[i] = call.args(w)
			in.OrderKey[i] = keyOf(w)
		}
		if key != "" {
			in.Peers = func(i, j int) bool {
				if total {
					return pr[i].id == pr[j].id
				}
				return types.Compare(in.OrderKey[i], in.OrderKey[j]) == 0
			}
		}
		res := make([]types.Datum, len(pr))
		if err := ComputeWindow(ctx, fn, fr, in, 0, len(pr), res); err != nil {
			return nil, err
		}
		// also recompute a sub-range and check it agrees (the streaming use)
		if len(pr) > 4 {
			from, to := len(pr)/3, len(pr)-1
			sub := make([]types.Datum, to-from)
			if err := ComputeWindow(ctx, fn, fr, in, from, to, sub); err != nil {
				return nil, err
			}
			for i := range sub {
				if types.Compare(sub[i], res[from+i]) != 0 {
					return nil, fmt.Errorf("range [%d,%d) row %d: %v; full computation gave %v", from, to, from+i, sub[i], res[from+i])
				}
			}
		}
		for i, w := range pr {
			if res[i].IsNull() {
				out[w.id] = "NULL"
			} else {
				out[w.id] = types.FormatText(res[i], fn.ResultType, nil)
			}
		}
	}
	return out, nil
}

func TestDifferentialWindow(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("EXPR_DIFF_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	rounds := 6
	if s := os.Getenv("EXPR_WINDOW_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	r := rand.New(rand.NewPCG(seed, 7))
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SET extra_float_digits = 1"); err != nil {
		t.Fatal(err)
	}
	fails := 0
	for round := 0; round < rounds; round++ {
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
			_, err := conn.Exec(ctx, fmt.Sprintf("INSERT INTO w VALUES (%d, %s, %s, %s, %s, %s, %s, %s)", w.id,
				lit(w.p, i4), lit(w.o, i4), lit(w.v, i4), lit(w.n, nu), lit(w.f, fl8), lit(w.t, tx), lit(w.d, types.Date)))
			if err != nil {
				t.Fatal(err)
			}
		}
		type variant struct {
			calls  []wcall
			frames []wframe
			order  string
			key    string
			desc   bool
			total  bool
		}
		dateFrames := []wframe{
			{"RANGE BETWEEN '4 days' PRECEDING AND CURRENT ROW", Frame{Mode: FrameRange, Start: FrameBound{Kind: OffsetPreceding, Offset: types.DInterval(types.IntervalValue{Days: 4})}, End: ib(CurrentRow, 0)}},
			{"RANGE BETWEEN '1 day' FOLLOWING AND '1 mon' FOLLOWING", Frame{Mode: FrameRange, Start: FrameBound{Kind: OffsetFollowing, Offset: types.DInterval(types.IntervalValue{Days: 1})}, End: FrameBound{Kind: OffsetFollowing, Offset: types.DInterval(types.IntervalValue{Months: 1})}}},
		}
		variants := []variant{
			{orderedCalls, rowsFrames, "ORDER BY o, id", "o", false, true},
			{orderedCalls, rowsFrames, "ORDER BY o DESC, id", "o", true, true},
			{peerSafeCalls, peerFrames, "ORDER BY o", "o", false, false},
			{peerSafeCalls, peerFrames, "ORDER BY o DESC", "o", true, false},
			{peerSafeCalls, dateFrames, "ORDER BY d", "d", false, false},
			{peerSafeCalls, dateFrames, "ORDER BY d DESC", "d", true, false},
			{peerSafeCalls[:8], []wframe{{"", DefaultFrame()}}, "", "", false, false},
		}
		for _, vr := range variants {
			for _, fr := range vr.frames {
				call := vr.calls[r.IntN(len(vr.calls))]
				q := fmt.Sprintf("SELECT id, (%s OVER (PARTITION BY p %s %s))::text FROM w", call.sql, vr.order, fr.sql)
				pgRows, err := conn.Query(ctx, q, pgx.QueryExecModeSimpleProtocol)
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				want := map[int]string{}
				for pgRows.Next() {
					var id int
					var v *string
					if err := pgRows.Scan(&id, &v); err != nil {
						t.Fatal(err)
					}
					if v == nil {
						want[id] = "NULL"
					} else {
						want[id] = *v
					}
				}
				if err := pgRows.Err(); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				got, err := ourWindow(rows, call, fr.frame, vr.key, vr.desc, vr.total)
				if err != nil {
					t.Errorf("seed %d: %s: %v", seed, q, err)
					fails++
					continue
				}
				for id, wv := range want {
					if gv := got[id]; gv != wv && !floatClose(outcome{val: wv, typ: "double precision"}, outcome{val: gv, typ: "double precision"}) {
						t.Errorf("seed %d: %s\n  row %d: postgres %q, runnel %q", seed, q, id, wv, gv)
						fails++
						break
					}
				}
				if fails > 20 {
					t.Fatalf("too many mismatches (seed %d)", seed)
				}
			}
		}
	}
}
