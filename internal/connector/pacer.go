package connector

import "time"

// Pacer spaces a split's rows in wall-clock time (nexmark.min.event.gap.in.ns,
// datagen.rows.per.second). It only decides how many rows may be emitted by
// now, never what they contain. The caller passes the clock, so tests need
// no sleeps. A Pacer is not safe for concurrent use (one per split).
type Pacer struct {
	gap     time.Duration
	start   time.Time
	emitted int64
}

// NewPacer returns a pacer allowing one row per gap from start; gap <= 0
// means unthrottled.
func NewPacer(gap time.Duration, start time.Time) *Pacer {
	return &Pacer{gap: gap, start: start}
}

// GapForRate converts a rows-per-second rate to a gap (0: unthrottled).
func GapForRate(rowsPerSecond int) time.Duration {
	if rowsPerSecond <= 0 {
		return 0
	}
	return time.Second / time.Duration(rowsPerSecond)
}

// Budget returns how many rows (at most max) may be emitted at now.
func (p *Pacer) Budget(now time.Time, max int) int {
	if p.gap <= 0 {
		return max
	}
	due := int64(now.Sub(p.start)/p.gap) + 1 - p.emitted
	if due <= 0 {
		return 0
	}
	return int(min(due, int64(max)))
}

// Emitted records that n rows were emitted.
func (p *Pacer) Emitted(n int) { p.emitted += int64(n) }

// Wait returns how long from now until at least one more row is due (0 if
// one is due already, or unthrottled).
func (p *Pacer) Wait(now time.Time) time.Duration {
	if p.gap <= 0 {
		return 0
	}
	next := p.start.Add(time.Duration(p.emitted) * p.gap)
	if d := next.Sub(now); d > 0 {
		return d
	}
	return 0
}
