package meta

import (
	"sync"
	"time"
)

// BarrierTiming is one committed barrier round, for the dashboard's chart
// of barrier latency over the last minutes.
type BarrierTiming struct {
	Epoch     uint64
	Committed time.Time
	Inject    time.Duration // round start to injected (includes a mutation's prepare)
	Collect   time.Duration // injected to every actor passed the barrier
	Commit    time.Duration // the storage commit
}

// barrierHistoryLen bounds the history: ten minutes at the default 1 s
// interval, and never more than about 40 KiB.
const barrierHistoryLen = 600

// barrierHistory is a ring of the last barrierHistoryLen rounds.
type barrierHistory struct {
	mu   sync.Mutex
	ring [barrierHistoryLen]BarrierTiming
	next int
	full bool
}

func (h *barrierHistory) add(t BarrierTiming) {
	h.mu.Lock()
	h.ring[h.next] = t
	h.next++
	if h.next == len(h.ring) {
		h.next, h.full = 0, true
	}
	h.mu.Unlock()
}

// RecentBarriers returns the last committed barrier rounds, oldest first
// (at most ten minutes' worth at the default interval).
func (l *BarrierLoop) RecentBarriers() []BarrierTiming {
	h := &l.history
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.full {
		return append([]BarrierTiming(nil), h.ring[:h.next]...)
	}
	return append(append([]BarrierTiming(nil), h.ring[h.next:]...), h.ring[:h.next]...)
}
