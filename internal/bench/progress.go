package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// IsTerminal reports whether w is a character device (a terminal), where
// progress is redrawn in place; anywhere else progress is plain lines.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progress draws "label  done/total (pct) rate/s" for one long step: a bar
// redrawn in place on a terminal, otherwise a line at most every
// lineEvery (so a log of a long run stays short). It is safe for one
// updating goroutine plus the caller of done.
type progress struct {
	out   io.Writer
	tty   bool
	label string
	unit  string
	total int64
	start time.Time

	mu       sync.Mutex
	lastDraw time.Time
	drawn    bool
}

// lineEvery spaces plain progress lines; redraws on a terminal are
// spaced by ttyEvery.
const (
	lineEvery = 5 * time.Second
	ttyEvery  = 200 * time.Millisecond
	barWidth  = 30
)

func newProgress(out io.Writer, tty bool, label, unit string, total int64) *progress {
	now := time.Now()
	return &progress{out: out, tty: tty, label: label, unit: unit, total: total, start: now, lastDraw: now}
}

// update reports that n of total are done; it draws only when enough time
// has passed since the last drawing.
func (p *progress) update(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	every := lineEvery
	if p.tty {
		every = ttyEvery
	}
	now := time.Now()
	if now.Sub(p.lastDraw) < every || (!p.tty && n >= p.total) {
		return // a plain log gets the final line from finish
	}
	p.lastDraw = now
	p.draw(n, now)
}

// finish draws the final state (ending the line on a terminal).
func (p *progress) finish(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.draw(n, time.Now())
	if p.tty {
		fmt.Fprintln(p.out)
	}
}

// clear erases a terminal bar so a result line can replace it.
func (p *progress) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.drawn {
		fmt.Fprintf(p.out, "\r\033[K")
		p.drawn = false
	}
}

func (p *progress) draw(n int64, now time.Time) {
	secs := now.Sub(p.start).Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(n) / secs
	}
	pct := 0.0
	if p.total > 0 {
		pct = 100 * float64(min(n, p.total)) / float64(p.total)
	}
	if !p.tty {
		fmt.Fprintf(p.out, "%s: %d/%d %s (%.0f%%), %.0f %s/s, %.1fs\n", p.label, n, p.total, p.unit, pct, rate, p.unit, secs)
		return
	}
	filled := int(pct / 100 * barWidth)
	bar := strings.Repeat("#", filled) + strings.Repeat(".", barWidth-filled)
	fmt.Fprintf(p.out, "\r\033[K%s [%s] %d/%d %s (%.0f%%) %.0f %s/s %.1fs", p.label, bar, n, p.total, p.unit, pct, rate, p.unit, secs)
	p.drawn = true
}
