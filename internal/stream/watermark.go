package stream

import (
	"fmt"

	"github.com/runneldb/runnel/internal/types"
)

// Watermark is a promise about the rest of a stream: no later row
// (insert, delete or either half of an update) has column Col below Val.
// Stateful executors use it to forget state no future row can touch
// (HashAgg, Distinct, OverWindow and group TopN drop the keys of closed
// windows; HashJoin the rows no later row can match).
//
// Rules every producer and forwarder keeps:
//
//   - Per column, the watermarks of one stream never go backwards: a
//     forwarder that would send a value at or below the last one it sent
//     for that column sends nothing.
//   - Watermarks are not aligned like barriers and not persisted: they
//     are ordinary messages between barriers. After a recovery or restart
//     a stream starts with no watermark, which only delays cleanup. (The
//     sources that generate them do persist their own watermark with
//     their split positions, so the rows they drop as late stay dropped
//     across a recovery; see exec.WatermarkGen.)
//   - A merge of several inputs (Merge, the receiving end of an exchange)
//     forwards, per column, the minimum over its inputs, and only once
//     every input has sent one for that column.
//   - An executor that cannot tell where its input's watermarks map in
//     its output drops them; the planner only expects watermarks where
//     the executors derive them (streamplan's watermark analysis, shown
//     by EXPLAIN).
//   - Backfill drops its upstream's watermarks until the snapshot is
//     read: the snapshot rows it interleaves may be older.
type Watermark struct {
	Col int
	Val types.Datum
}

func (w *Watermark) String() string { return fmt.Sprintf("watermark($%d ≥ %s)", w.Col, w.Val) }

// WatermarkMerger combines the watermarks of several inputs of one
// stream: per column, the minimum of the inputs' latest values, once every
// input has one. It is used by one goroutine.
type WatermarkMerger struct {
	n    int
	cols map[int]*colWatermarks
}

type colWatermarks struct {
	have []bool
	vals []types.Datum
	nSet int
	out  types.Datum // last forwarded value
	sent bool
}

// NewWatermarkMerger returns a merger over n inputs.
func NewWatermarkMerger(n int) *WatermarkMerger {
	return &WatermarkMerger{n: n, cols: map[int]*colWatermarks{}}
}

// Add records input i's watermark w and returns the watermark to
// forward, if the minimum over the inputs advanced.
func (m *WatermarkMerger) Add(i int, w *Watermark) *Watermark {
	c := m.cols[w.Col]
	if c == nil {
		c = &colWatermarks{have: make([]bool, m.n), vals: make([]types.Datum, m.n)}
		m.cols[w.Col] = c
	}
	if !c.have[i] {
		c.have[i] = true
		c.nSet++
		c.vals[i] = w.Val
	} else if types.Compare(w.Val, c.vals[i]) > 0 {
		c.vals[i] = w.Val
	}
	if c.nSet < m.n {
		return nil
	}
	low := c.vals[0]
	for _, v := range c.vals[1:] {
		if types.Compare(v, low) < 0 {
			low = v
		}
	}
	if c.sent && types.Compare(low, c.out) <= 0 {
		return nil
	}
	c.out, c.sent = low, true
	return &Watermark{Col: w.Col, Val: low}
}

// WatermarkMonotone filters one stream's watermarks so that they only
// advance: Advance reports whether w moves column w.Col forward (and
// records it).
type WatermarkMonotone struct {
	last map[int]types.Datum
}

// Advance reports whether w is above the last watermark of its column.
func (m *WatermarkMonotone) Advance(w *Watermark) bool {
	if m.last == nil {
		m.last = map[int]types.Datum{}
	}
	if prev, ok := m.last[w.Col]; ok && types.Compare(w.Val, prev) <= 0 {
		return false
	}
	m.last[w.Col] = w.Val
	return true
}

// Last returns the last watermark recorded for col.
func (m *WatermarkMonotone) Last(col int) (types.Datum, bool) {
	d, ok := m.last[col]
	return d, ok
}
