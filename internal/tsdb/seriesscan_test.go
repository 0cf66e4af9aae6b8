package tsdb

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/types"
)

// sliceIter is a storage.Iterator over sorted keys from lower.
type sliceIter struct {
	keys [][]byte
	i    int
}

func (it *sliceIter) Next() bool    { it.i++; return it.i < len(it.keys) }
func (it *sliceIter) Key() []byte   { return it.keys[it.i] }
func (it *sliceIter) Value() []byte { return nil }
func (it *sliceIter) Err() error    { return nil }
func (it *sliceIter) Close() error  { return nil }

// SeriesScan returns exactly the keys in the window, in order, and seeks
// (reopens) instead of reading long runs outside it: 3 series of 1,000
// times, window of 10 in the middle.
func TestSeriesScan(t *testing.T) {
	rel := &catalog.Relation{Name: "m", Kind: catalog.KindTable, Options: map[string]string{OptTimeIndex: "ts", OptTags: "host"},
		Columns: []catalog.Column{{Name: "host", Type: types.Text}, {Name: "ts", Type: types.Timestamptz}, {Name: "v", Type: types.Float64}}}
	if err := Layout(rel, "_row_id"); err != nil {
		t.Fatal(err)
	}
	var keys [][]byte
	for s := range 3 {
		var id [16]byte
		id[0] = byte(s)
		for ts := range int64(1000) {
			k := []byte{0, byte(s % 2)}
			k = types.AppendKey(k, types.DUUID(id), types.UUID, false, false)
			k = types.AppendKey(k, types.DTimestamptz(ts), types.Timestamptz, false, false)
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, bytes.Compare)
	open := func(lower []byte) (storage.Iterator, error) {
		i, _ := slices.BinarySearchFunc(keys, lower, bytes.Compare)
		return &sliceIter{keys: keys, i: i - 1}, nil
	}
	for _, w := range [][2]int64{{500, 509}, {0, 999}, {990, 2000}, {-5, 3}, {2000, 3000}} {
		sc := NewSeriesScan(rel, open, w[0], w[1])
		var got []string
		prev := -1
		for sc.Next() {
			// NewSeries: exactly when the series id differs from the
			// previous row's (reopens and skipped keys in between
			// change nothing).
			series := int(sc.Key()[3])
			if sc.NewSeries() != (series != prev) {
				t.Errorf("window %v: row of series %d after %d: NewSeries %v", w, series, prev, sc.NewSeries())
			}
			prev = series
			_, ts, _ := sc.split(sc.Key())
			got = append(got, fmt.Sprint(sc.Key()[3], "@", ts))
		}
		var want []string
		for _, k := range keys {
			_, ts, _ := sc.split(k)
			if ts >= w[0] && ts <= w[1] {
				want = append(want, fmt.Sprint(k[3], "@", ts))
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("window %v: got %d keys, want %d", w, len(got), len(want))
		}
		t.Logf("window %v: %d keys, %d reopens", w, len(got), sc.Reopens)
		if w == [2]int64{500, 509} && sc.Reopens > 7 {
			t.Errorf("window %v: %d reopens, want at most 2 per series and the first", w, sc.Reopens)
		}
		if w == [2]int64{0, 999} && sc.Reopens != 1 {
			t.Errorf("whole range: %d reopens, want 1 (no seek)", sc.Reopens)
		}
	}
}
