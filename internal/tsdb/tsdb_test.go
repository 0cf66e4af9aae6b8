package tsdb

import (
	"encoding/binary"
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
