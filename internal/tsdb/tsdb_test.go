package tsdb

import (
	"encoding/binary"
	"hash/fnv"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/types"
)

func TestParseTTL(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"7d": 7 * 24 * time.Hour, "1h30m": 90 * time.Minute, "2 weeks": 14 * 24 * time.Hour, "45s": 45 * time.Second,
		"forever": 0, "": 0, "10min": 10 * time.Minute, "1d12h": 36 * time.Hour, "500ms": 500 * time.Millisecond,
	} {
		if got, err := ParseTTL(in); err != nil || got != want {
			t.Errorf("ParseTTL(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"7", "d", "7 fortnights", "-1d", "99999999999999d"} {
		if _, err := ParseTTL(bad); err == nil {
			t.Errorf("ParseTTL(%q) accepted", bad)
		}
	}
}

// Layout puts the tags, then the time index (then the append mode's row
// id) in the key, and TimeOf decodes the time back from a stored key.
func TestLayoutAndTimeOf(t *testing.T) {
	for _, appendMode := range []bool{false, true} {
		rel := &catalog.Relation{Name: "cpu", Kind: catalog.KindTable,
			Columns: []catalog.Column{{Name: "host", Type: types.Text}, {Name: "v", Type: types.Float64}, {Name: "ts", Type: types.Timestamptz}, {Name: "dc", Type: types.Text}},
			PK:      []int{3, 0}, Options: map[string]string{OptTimeIndex: "ts", OptTTL: "1h"}}
		if appendMode {
			rel.Options[OptAppendMode] = "true"
		}
		if err := Layout(rel, "_row_id"); err != nil {
			t.Fatal(err)
		}
		sp, ok := SpecOf(rel)
		if !ok || sp.TimeIndex != 2 || len(sp.Tags) != 2 || sp.Tags[0] != 3 || len(sp.Fields) != 1 || sp.Fields[0] != 1 || sp.AppendMode != appendMode || sp.TTL != time.Hour {
			t.Fatalf("append=%v: spec %+v", appendMode, sp)
		}
		row := types.Row{types.DVarchar("h1"), types.DFloat64(1), types.DTimestamptz(1_700_000_000_000_000), types.DVarchar("eu")}
		if appendMode {
			row = append(row, types.DInt64(42))
		}
		key := binary.BigEndian.AppendUint16(nil, 7)
		for _, c := range rel.PK {
			key = types.AppendKey(key, row[c], rel.Columns[c].Type, false, false)
		}
		if got, ok := TimeOf(rel)(key); !ok || got != 1_700_000_000_000_000 {
			t.Fatalf("append=%v: TimeOf = %d, %v", appendMode, got, ok)
		}
		if _, ok := TimeOf(rel)(key[:5]); ok {
			t.Fatalf("TimeOf of a cut key: ok")
		}
	}
}

// The series id is part of every stored key of a series-keyed table, so
// its bytes must never change: FNV-1a 128 of name 0xff value 0xff per
// non-NULL tag, sorted by name. Rows filled one after the other (the
// filler reuses its hasher) each get their own id; a NULL tag is left out.
func TestSeriesFillerID(t *testing.T) {
	rel := &catalog.Relation{Name: "m", Kind: catalog.KindTable, Options: map[string]string{OptTimeIndex: "ts", OptTags: "region,host"},
		Columns: []catalog.Column{{Name: "region", Type: types.Text}, {Name: "host", Type: types.Text}, {Name: "ts", Type: types.Timestamptz}}}
	if err := Layout(rel, "_row_id"); err != nil {
		t.Fatal(err)
	}
	fill := SeriesFiller(rel)
	id := rel.ColumnIndex(SeriesIDColumn)
	want := func(parts ...string) types.Datum {
		h := fnv.New128a()
		for _, p := range parts {
			h.Write(append([]byte(p), 0xff))
		}
		return types.DUUID([16]byte(h.Sum(nil)))
	}
	for _, c := range []struct {
		region, host types.Datum
		want         types.Datum
	}{
		{types.DVarchar("eu"), types.DVarchar("a"), want("host", "a", "region", "eu")},
		{types.DVarchar("us"), types.DVarchar("b"), want("host", "b", "region", "us")},
		{types.NullDatum, types.DVarchar("a"), want("host", "a")},
	} {
		row := make(types.Row, len(rel.Columns))
		row[0], row[1], row[2] = c.region, c.host, types.DTimestamptz(0)
		fill(row)
		if types.Compare(row[id], c.want) != 0 {
			t.Errorf("tags %v %v: id %v, want %v", c.region, c.host, row[id], c.want)
		}
	}
}
