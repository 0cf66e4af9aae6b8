package datagen

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/connector"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

func mustGen(t *testing.T, cols []connector.Column, opts map[string]string) *Generator {
	t.Helper()
	cfg, err := ParseOptions(cols, opts)
	if err != nil {
		t.Fatalf("ParseOptions(%v): %v", opts, err)
	}
	g, err := NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestSequence(t *testing.T) {
	cols := []connector.Column{
		{Name: "id", Type: types.Int32},
		{Name: "s", Type: types.Varchar},
		{Name: "f", Type: types.Float64},
		{Name: "ts", Type: types.Timestamp},
		{Name: "d", Type: types.Date},
	}
	g := mustGen(t, cols, map[string]string{
		"connector":         "datagen",
		"fields.id.kind":    "sequence",
		"fields.id.start":   "1",
		"fields.id.end":     "1000",
		"fields.s.kind":     "sequence",
		"fields.s.start":    "500",
		"fields.f.kind":     "sequence",
		"fields.f.start":    "0.5",
		"fields.ts.kind":    "sequence",
		"fields.ts.start":   "2024-01-01 00:00:00",
		"fields.ts.step":    "1 minute",
		"fields.d.kind":     "sequence",
		"fields.d.start":    "2024-02-28",
		"datagen.split.num": "3",
	})
	if g.Count() != 1000 {
		t.Fatalf("Count = %d; want 1000 (the id sequence)", g.Count())
	}
	if g.Config().SplitNum != 3 || g.Config().RowsPerSecond != DefaultRowsPerSecond {
		t.Fatalf("config %+v", g.Config())
	}
	rows, next := g.AppendRows(nil, 0, 1, 5000)
	if len(rows) != 1000 || next != 1000 {
		t.Fatalf("got %d rows, next %d; want 1000, 1000", len(rows), next)
	}
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	for i, r := range rows {
		i64 := int64(i)
		if r[0].Int() != i64+1 || r[0].Kind() != types.KindInt32 {
			t.Fatalf("row %d id = %v; want %d", i, r[0], i+1)
		}
		if r[1].Str() != types.FormatText(types.DInt64(500+i64), types.Int64, nil) {
			t.Fatalf("row %d s = %q", i, r[1].Str())
		}
		if r[2].Float() != 0.5+float64(i) {
			t.Fatalf("row %d f = %v", i, r[2])
		}
		if r[3].Int() != base+i64*60_000_000 {
			t.Fatalf("row %d ts = %v", i, r[3])
		}
	}
	if got := types.FormatText(rows[2][4], types.Date, nil); got != "2024-03-01" {
		t.Fatalf("date sequence row 2 = %s; want 2024-03-01 (leap year)", got)
	}
	// Splits by offset/step, in uneven chunks, with a restart: the union is
	// the sequential stream, each row once.
	seen := make([]bool, 1000)
	for s := range 3 {
		r, err := g.NewReader(s, 3, StartPosition(s))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; !r.Done(); i++ {
			pos := r.Position()
			got := r.Next(nil, 1+i%17)
			for j, row := range got {
				k := pos + int64(3*j)
				if seen[k] || !rowsEqual(row, rows[k]) {
					t.Fatalf("split %d: row %d = %v (seen %v); want %v", s, k, row, seen[k], rows[k])
				}
				seen[k] = true
			}
			if i == 5 {
				if r, err = g.NewReader(s, 3, r.Position()); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for k, ok := range seen {
		if !ok {
			t.Fatalf("row %d never produced", k)
		}
	}
}

func rowsEqual(a, b types.Row) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Kind() != b[i].Kind() || !types.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func TestRandomRangesAndDeterminism(t *testing.T) {
	cols := []connector.Column{
		{Name: "a", Type: types.Int16},
		{Name: "b", Type: types.Int64},
		{Name: "c", Type: types.Float32},
		{Name: "v", Type: types.Varchar},
		{Name: "ts", Type: types.Timestamptz},
		{Name: "t2", Type: types.Timestamp},
		{Name: "ok", Type: types.Bool},
		{Name: "b2", Type: types.Int64},
	}
	opts := map[string]string{
		"fields.a.kind":           "random",
		"fields.a.min":            "-3",
		"fields.a.max":            "3",
		"fields.a.seed":           "42",
		"fields.b.min":            "1000000000000",
		"fields.b.max":            "1000000000009",
		"fields.c.min":            "1.5",
		"fields.c.max":            "2.5",
		"fields.v.length":         "7",
		"fields.ts.min":           "2024-01-01 00:00:00",
		"fields.ts.max":           "2024-01-01 00:00:10",
		"fields.t2.max_past":      "1 hour",
		"fields.t2.basetime":      "2024-06-01 12:00:00",
		"datagen.rows.per.second": "0",
	}
	g := mustGen(t, cols, opts)
	if g.Count() != -1 {
		t.Fatalf("Count = %d; want unbounded", g.Count())
	}
	const n = 100_000
	rows, _ := g.AppendRows(nil, 0, 1, n)
	var aHist [7]int
	var bHist [10]int
	trues := 0
	tsLo := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	t2Hi := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC).UnixMicro()
	sameB := 0
	for i, r := range rows {
		a, b, c := r[0].Int(), r[1].Int(), r[2].Float()
		if a < -3 || a > 3 || b < 1e12 || b > 1e12+9 || c < 1.5 || c >= 2.5 {
			t.Fatalf("row %d: %v out of range", i, r)
		}
		aHist[a+3]++
		bHist[b-1e12]++
		v := r[3].Str()
		if len(v) != 7 || strings.Trim(v, alnum) != "" {
			t.Fatalf("row %d: varchar %q", i, v)
		}
		if ts := r[4].Int(); r[4].Kind() != types.KindTimestamptz || ts < tsLo || ts > tsLo+10_000_000 {
			t.Fatalf("row %d: timestamptz %v", i, r[4])
		}
		if t2 := r[5].Int(); t2 < t2Hi-3_600_000_000 || t2 > t2Hi {
			t.Fatalf("row %d: timestamp %v", i, r[5])
		}
		if r[6].Bool() {
			trues++
		}
		if r[7].Int() == b {
			sameB++
		}
	}
	for v, c := range aHist {
		if f := float64(c) / n; math.Abs(f-1.0/7) > 0.01 {
			t.Errorf("value %d of [-3,3] has frequency %.4f; want %.4f ± 0.01", v-3, f, 1.0/7)
		}
	}
	for v, c := range bHist {
		if f := float64(c) / n; math.Abs(f-0.1) > 0.01 {
			t.Errorf("b value %d has frequency %.4f; want 0.1 ± 0.01", v, f)
		}
	}
	if f := float64(trues) / n; math.Abs(f-0.5) > 0.01 {
		t.Errorf("true fraction %.4f; want 0.5 ± 0.01", f)
	}
	// b2 has the default range and its own default seed, so it does not
	// repeat b.
	if sameB > 0 {
		t.Errorf("b2 equals b in %d rows", sameB)
	}
	// Deterministic: a fresh generator, any row order, any split.
	g2 := mustGen(t, cols, opts)
	for _, i := range []int64{0, 1, 99_999, 12345, 777} {
		if !rowsEqual(g2.Row(i), rows[i]) {
			t.Fatalf("row %d differs between generators: %v vs %v", i, g2.Row(i), rows[i])
		}
	}
	r, _ := g2.NewReader(1, 4, StartPosition(1))
	for j, row := range r.Next(nil, 100) {
		if !rowsEqual(row, rows[1+4*j]) {
			t.Fatalf("split 1/4 row %d differs", 1+4*j)
		}
	}
	// Another seed changes the column.
	opts2 := map[string]string{}
	for k, v := range opts {
		opts2[k] = v
	}
	opts2["fields.a.seed"] = "43"
	g3 := mustGen(t, cols, opts2)
	same := 0
	for i := int64(0); i < 1000; i++ {
		if g3.Row(i)[0].Int() == rows[i][0].Int() {
			same++
		}
	}
	if same > 250 { // chance is 1/7
		t.Errorf("seed 43 matched seed 42 in %d of 1000 rows", same)
	}
}

func TestFloat32UpperBoundExclusive(t *testing.T) {
	// Between 2^24-1 and 2^24 float32 has no other value: half the doubles
	// drawn there round up to the excluded bound.
	cols := []connector.Column{{Name: "f", Type: types.Float32}}
	g := mustGen(t, cols, map[string]string{"fields.f.min": "16777215", "fields.f.max": "16777216"})
	for i := range int64(10_000) {
		if v := g.Row(i)[0].Float(); v < 16777215 || v >= 16777216 {
			t.Fatalf("row %d: %v outside [16777215, 16777216)", i, v)
		}
	}
}

func TestMultipleSequencesStopAtShortest(t *testing.T) {
	cols := []connector.Column{{Name: "x", Type: types.Int64}, {Name: "y", Type: types.Int16}}
	g := mustGen(t, cols, map[string]string{
		"fields.x.kind": "sequence", "fields.x.start": "10", "fields.x.end": "19",
		"fields.y.kind": "sequence", "fields.y.start": "32760",
	})
	if g.Count() != 8 {
		t.Fatalf("Count = %d; want 8 (y runs 32760..32767)", g.Count())
	}
	rows, _ := g.AppendRows(nil, 0, 1, 100)
	if len(rows) != 8 || rows[7][1].Int() != 32767 || rows[7][0].Int() != 17 {
		t.Fatalf("rows %v", rows)
	}
	// FillRows into caller-owned rows stops at the end too.
	buf := make([]types.Row, 5)
	for i := range buf {
		buf[i] = make(types.Row, 2)
	}
	n, next := g.FillRows(6, 1, buf)
	if n != 2 || next != 8 || buf[1][0].Int() != 17 {
		t.Fatalf("FillRows = %d, %d, %v", n, next, buf[:n])
	}
}

func TestOptionErrors(t *testing.T) {
	cols := []connector.Column{
		{Name: "i", Type: types.Int32},
		{Name: "v", Type: types.Varchar},
		{Name: "ts", Type: types.Timestamp},
		{Name: "j", Type: types.Jsonb},
	}
	base := map[string]string{"fields.ts.basetime": "2024-01-01 00:00:00"}
	cases := []struct {
		opts map[string]string
		cols []connector.Column
		code string
		want string
	}{
		{map[string]string{"fields.nope.kind": "random"}, cols[:3], sqlerr.UndefinedColumn, `"nope"`},
		{map[string]string{"fields.i.kind": "walk"}, cols[:1], sqlerr.InvalidParameterValue, `"fields.i.kind"`},
		{map[string]string{"fields.i.min": "10", "fields.i.max": "1"}, cols[:1], sqlerr.InvalidParameterValue, `"fields.i.min"`},
		{map[string]string{"fields.i.max": "3000000000"}, cols[:1], sqlerr.InvalidParameterValue, `"fields.i.max"`},
		{map[string]string{"fields.i.kind": "sequence", "fields.i.min": "1"}, cols[:1], sqlerr.InvalidParameterValue, `"fields.i.min" does not apply`},
		{map[string]string{"fields.i.length": "3"}, cols[:1], sqlerr.InvalidParameterValue, `"fields.i.length" does not apply`},
		{map[string]string{"fields.v.length": "-1"}, cols[:2], sqlerr.InvalidParameterValue, `"fields.v.length"`},
		{map[string]string{"datagen.rows.per.second": "fast"}, cols[:1], sqlerr.InvalidParameterValue, `"datagen.rows.per.second"`},
		{map[string]string{"datagen.split.num": "0"}, cols[:1], sqlerr.InvalidParameterValue, `"datagen.split.num"`},
		{map[string]string{"datagen.rows": "1"}, cols[:1], sqlerr.InvalidParameterValue, `unknown datagen option "datagen.rows"`},
		{map[string]string{"fields.i": "1"}, cols[:1], sqlerr.InvalidParameterValue, `fields.<column>.<property>`},
		{map[string]string{}, cols[:3], sqlerr.InvalidParameterValue, `"fields.ts.basetime"`},
		{map[string]string{"fields.ts.basetime": "2024-01-01", "fields.ts.max_past_mode": "relative"}, cols[2:3], sqlerr.FeatureNotSupported, `"fields.ts.max_past_mode"`},
		{map[string]string{"fields.ts.basetime": "2024-01-01", "fields.ts.max_past": "1 month"}, cols[2:3], sqlerr.InvalidParameterValue, `"fields.ts.max_past"`},
		{map[string]string{"fields.ts.kind": "sequence"}, cols[2:3], sqlerr.InvalidParameterValue, `"fields.ts.start"`},
		{map[string]string{"fields.ts.kind": "sequence", "fields.ts.start": "infinity"}, cols[2:3], sqlerr.InvalidParameterValue, `finite`},
		{map[string]string{"fields.ts.min": "2024-01-01"}, cols[2:3], sqlerr.InvalidParameterValue, `"fields.ts.max"`},
		{base, cols, sqlerr.FeatureNotSupported, `"j"`},
	}
	for _, c := range cases {
		_, err := ParseOptions(c.cols, c.opts)
		var se *sqlerr.Error
		if err == nil || !errors.As(err, &se) || se.Code != c.code || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseOptions(%v) = %v; want %s error mentioning %s", c.opts, err, c.code, c.want)
		}
	}
}

func TestPinOptions(t *testing.T) {
	cols := []connector.Column{{Name: "ts", Type: types.Timestamp}, {Name: "i", Type: types.Int64}}
	opts := map[string]string{"fields.ts.max_past": "10 minutes"}
	if _, err := ParseOptions(cols, opts); err == nil {
		t.Fatal("random timestamp without basetime parsed")
	}
	now := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	pinned := PinOptions(cols, opts, now)
	if len(opts) != 1 {
		t.Fatal("PinOptions modified its input")
	}
	g := mustGen(t, cols, pinned)
	for i := range int64(1000) {
		ts := g.Row(i)[0].Int()
		if ts > now.UnixMicro() || ts < now.UnixMicro()-600_000_000 {
			t.Fatalf("row %d: ts %d outside [now-10min, now]", i, ts)
		}
	}
	// A bounded or sequence timestamp is left alone.
	for _, o := range []map[string]string{
		{"fields.ts.min": "2024-01-01", "fields.ts.max": "2024-01-02"},
		{"fields.ts.kind": "sequence", "fields.ts.start": "2024-01-01"},
	} {
		if p := PinOptions(cols, o, now); len(p) != len(o) {
			t.Fatalf("PinOptions(%v) = %v; want unchanged", o, p)
		}
	}
}

func BenchmarkFillRows(b *testing.B) {
	cols := []connector.Column{
		{Name: "id", Type: types.Int64}, {Name: "v", Type: types.Int32},
		{Name: "f", Type: types.Float64}, {Name: "ts", Type: types.Timestamp},
	}
	cfg, err := ParseOptions(cols, map[string]string{
		"fields.id.kind": "sequence", "fields.ts.min": "2024-01-01", "fields.ts.max": "2024-12-31",
	})
	if err != nil {
		b.Fatal(err)
	}
	g, _ := NewGenerator(cfg)
	rows := make([]types.Row, 1024)
	for i := range rows {
		rows[i] = make(types.Row, len(cols))
	}
	var next int64
	b.ReportAllocs()
	for i := 0; i < b.N; i += len(rows) {
		_, next = g.FillRows(next, 1, rows)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

func TestNextChunk(t *testing.T) {
	cols := []connector.Column{{Name: "x", Type: types.Int64}}
	g := mustGen(t, cols, map[string]string{"fields.x.kind": "sequence", "fields.x.end": "9"})
	r, _ := g.NewReader(0, 1, 0)
	var c types.Chunk
	for !r.Done() {
		r.NextChunk(&c, 4)
	}
	if c.Len() != 10 || len(c.Ops) != 10 || c.Rows[9][0].Int() != 9 || c.Ops[9] != types.OpInsert {
		t.Fatalf("chunk %v %v", c.Ops, c.Rows)
	}
}
