package plan

import (
	"fmt"

	"github.com/runneldb/runnel/internal/types"
)

// HopWindow is HOP(rel, time_col, slide, size [, offset]) in FROM: each
// input row is followed by one output row per hopping window containing
// its time, in ascending window order: the input columns, then
// window_start and window_end (of the time column's type). A row whose
// time is NULL lies in no window and produces no rows.
//
// Slide, Size and Offset are microseconds (a day is 24 hours); the binder
// guarantees 0 < Slide, Size a multiple of Slide, Size <=
// expr.MaxWindowSpan. TUMBLE needs no node of its own: it is a Project of
// two expr.TimeWindowBound columns.
type HopWindow struct {
	Input Node
	// TimeCol is the input column holding the time (timestamp or
	// timestamptz).
	TimeCol int
	Slide   int64
	Size    int64
	Offset  int64
	Out     Schema
}

// Windows is how many windows contain each row: Size / Slide.
func (n *HopWindow) Windows() int { return int(n.Size / n.Slide) }

func (n *HopWindow) Schema() Schema   { return n.Out }
func (n *HopWindow) Children() []Node { return []Node{n.Input} }
func (n *HopWindow) Describe() string {
	iv := func(us int64) string {
		return "'" + types.FormatText(types.DInterval(types.IntervalValue{Micros: us}), types.Interval, nil) + "'"
	}
	s := fmt.Sprintf("HopWindow time: %s slide: %s size: %s", n.Input.Schema()[n.TimeCol].Name, iv(n.Slide), iv(n.Size))
	if n.Offset != 0 {
		s += " offset: " + iv(n.Offset)
	}
	return s
}
