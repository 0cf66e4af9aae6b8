package expr

import (
	"github.com/runneldb/runnel/internal/types"
)

// Time windows (TUMBLE and HOP in FROM, RisingWave's time window
// functions) assign a timestamp t to the windows [s, s+size) whose start s
// is offset plus a whole multiple of slide. The arithmetic is on
// microseconds since the Unix epoch, for timestamp and timestamptz alike
// (a timestamptz window is aligned on UTC, never on the session zone), and
// a day counts 24 hours; months have no fixed length and are refused by
// the binder.
//
//	slide = 2s, offset = 0:   t = 5.3s  ->  aligned start 4s
//	HOP size = 6s:            windows [0s,6s) [2s,8s) [4s,10s)

// MaxWindowSpan bounds window sizes, slides and offsets (microseconds):
// 100000 days, about 273 years. The timestamp range reaches within a
// hair of int64's, so the bound is what keeps the arithmetic below from
// overflowing; no real window is that long.
const MaxWindowSpan = 100000 * 86400 * 1000000

// WindowAlign returns the largest start offset + k*slide (k an integer)
// that is <= t. t must be a finite timestamp and 0 < slide <=
// MaxWindowSpan, so nothing overflows (t - off stays above
// minTimestamp - MaxWindowSpan).
func WindowAlign(t, slide, offset int64) int64 {
	off := offset % slide
	if off < 0 {
		off += slide
	}
	r := (t - off) % slide
	if r < 0 {
		r += slide
	}
	return t - r
}

// WindowStarts appends to dst the starts of the n windows of width
// n*slide that contain t, in ascending order: the last one starts at t's
// aligned start. ok is false when t is infinite or a window bound leaves
// the timestamp range. n*slide must not exceed MaxWindowSpan.
func WindowStarts(dst []int64, t, slide, offset int64, n int) ([]int64, bool) {
	if t < minTimestamp || t > maxTimestamp {
		return dst, false
	}
	last := WindowAlign(t, slide, offset)
	first := last - int64(n-1)*slide
	if first < minTimestamp || last > maxTimestamp-int64(n)*slide {
		return dst, false
	}
	for i := 0; i < n; i++ {
		dst = append(dst, first+int64(i)*slide)
	}
	return dst, true
}

// TimeWindowBound computes one bound of the tumbling window containing
// Arg: the aligned start (floor to a multiple of Slide, plus Offset) plus
// Shift (0 for window_start, the window size for window_end). NULL in
// gives NULL out; ±infinity and results outside the timestamp range are
// an error (22008), as no finite window contains them.
type TimeWindowBound struct {
	Arg    Expr
	Slide  int64 // microseconds, > 0
	Offset int64 // microseconds
	Shift  int64 // microseconds, 0 <= Shift <= MaxWindowSpan
	// Name renders the bound in EXPLAIN ("window_start", "window_end").
	Name string
}

func (w *TimeWindowBound) Type() types.Type { return w.Arg.Type() }

func (w *TimeWindowBound) Eval(ctx *EvalContext, row types.Row) (types.Datum, error) {
	d, err := w.Arg.Eval(ctx, row)
	if err != nil || d.IsNull() {
		return d, err
	}
	v, ok := TimeWindowValue(d.Int(), w.Slide, w.Offset, w.Shift)
	if !ok {
		return types.NullDatum, errTimestampOutOfRng
	}
	if w.Arg.Type().Kind == types.KindTimestamptz {
		return types.DTimestamptz(v), nil
	}
	return types.DTimestamp(v), nil
}

// TimeWindowValue is TimeWindowBound's arithmetic on microseconds.
func TimeWindowValue(t, slide, offset, shift int64) (int64, bool) {
	if t < minTimestamp || t > maxTimestamp {
		return 0, false // ±infinity
	}
	s := WindowAlign(t, slide, offset)
	if s < minTimestamp || s > maxTimestamp-shift {
		return 0, false
	}
	return s + shift, true
}

func (w *TimeWindowBound) String() string {
	iv := func(us int64) string {
		return "'" + types.FormatText(types.DInterval(types.IntervalValue{Micros: us}), types.Interval, nil) + "'"
	}
	s := w.Name + "(" + w.Arg.String() + ", " + iv(w.Slide)
	if w.Offset != 0 {
		s += ", offset " + iv(w.Offset)
	}
	return s + ")"
}
