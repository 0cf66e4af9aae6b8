package connector

import (
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// SourceStats is what the executors of one source (or connector-fed
// table) report about it: rows delivered, malformed records skipped, and
// whether its splits are reading or failing. It is shown in
// rw_catalog.rw_source_stats.
type SourceStats struct {
	Name    string
	Rows    atomic.Int64
	Skipped atomic.Int64
	// Bytes counts the bytes of the records read (as Batch.Bytes).
	Bytes atomic.Int64

	mu          sync.Mutex
	lastSkipped string
	// failing holds the splits whose last attempt failed, with the error.
	failing map[string]splitFailure
	// caughtUp holds every split read, with its last Batch.CaughtUp.
	caughtUp map[string]bool
	// lag holds each split's last reported Batch.Lag.
	lag map[string]Lag
	// notices are the distinct Batch.Notices seen, oldest first, at most
	// maxNotices.
	notices []string
}

// maxNotices bounds the notices kept per source.
const maxNotices = 20

type splitFailure struct {
	err   string
	since time.Time
}

// SourceStatus is a snapshot of SourceStats.
type SourceStatus struct {
	Name    string
	Rows    int64
	Skipped int64
	// LastSkipped locates and explains the last malformed record ("" if
	// none).
	LastSkipped string
	// Status is "running", or "retrying: <error>" while a split cannot
	// connect or read.
	Status string
	// CaughtUp: every split read so far had nothing more to read at its
	// last batch (false before the first batch).
	CaughtUp bool
	Bytes    int64
	// LagMessages and LagBytes sum the splits' last reported Lag (-1 when
	// no split reported one).
	LagMessages, LagBytes int64
	// Notices are the connector's notices (Batch.Notices), joined by "; ".
	Notices string
}

var stats struct {
	mu     sync.Mutex
	byName map[string]*SourceStats
}

// StatsFor returns the statistics of the source named name, creating them.
// Every executor of the source shares them.
func StatsFor(name string) *SourceStats {
	stats.mu.Lock()
	defer stats.mu.Unlock()
	if stats.byName == nil {
		stats.byName = map[string]*SourceStats{}
	}
	s := stats.byName[name]
	if s == nil {
		s = &SourceStats{Name: name, failing: map[string]splitFailure{}, caughtUp: map[string]bool{}, lag: map[string]Lag{}}
		stats.byName[name] = s
	}
	return s
}

// ForgetStats drops the statistics of a dropped source.
func ForgetStats(name string) {
	stats.mu.Lock()
	defer stats.mu.Unlock()
	delete(stats.byName, name)
}

// AllStats returns every source's status, by name.
func AllStats() []SourceStatus {
	stats.mu.Lock()
	all := make([]*SourceStats, 0, len(stats.byName))
	for _, s := range stats.byName {
		all = append(all, s)
	}
	stats.mu.Unlock()
	out := make([]SourceStatus, 0, len(all))
	for _, s := range all {
		out = append(out, s.Status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Status snapshots s.
func (s *SourceStats) Status() SourceStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := SourceStatus{Name: s.Name, Rows: s.Rows.Load(), Skipped: s.Skipped.Load(), LastSkipped: s.lastSkipped, Status: "running",
		CaughtUp: len(s.caughtUp) > 0, Bytes: s.Bytes.Load(), LagMessages: -1, LagBytes: -1,
		Notices: strings.Join(s.notices, "; ")}
	if len(s.lag) > 0 {
		st.LagMessages, st.LagBytes = 0, 0
		for _, l := range s.lag {
			st.LagMessages += l.Messages
			st.LagBytes += l.Bytes
		}
	}
	for _, c := range s.caughtUp {
		st.CaughtUp = st.CaughtUp && c
	}
	first := ""
	for id := range s.failing {
		if first == "" || id < first {
			first = id
		}
	}
	if first != "" {
		st.Status = "retrying: split " + first + ": " + s.failing[first].err
	}
	return st
}

// NoteSkipped counts malformed records.
func (s *SourceStats) NoteSkipped(sk []Skipped) {
	if len(sk) == 0 {
		return
	}
	s.Skipped.Add(int64(len(sk)))
	last := sk[len(sk)-1]
	s.mu.Lock()
	s.lastSkipped = last.Where + ": " + last.Reason
	s.mu.Unlock()
}

// Note records notices (duplicates once).
func (s *SourceStats) Note(notices []string) {
	if len(notices) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range notices {
		if !slices.Contains(s.notices, n) && len(s.notices) < maxNotices {
			s.notices = append(s.notices, n)
		}
	}
}

// SplitFailing records that split's last attempt failed with err.
func (s *SourceStats) SplitFailing(split string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.failing[split]
	if !ok {
		f.since = time.Now()
	}
	f.err = err.Error()
	s.failing[split] = f
}

// SplitHealthy records that split reads again.
func (s *SourceStats) SplitHealthy(split string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.failing, split)
}

// SplitRead records what split's last Batch reported: CaughtUp, Bytes
// and Lag.
func (s *SourceStats) SplitRead(split string, b *Batch) {
	s.Bytes.Add(b.Bytes)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.caughtUp[split] = b.CaughtUp
	if b.Lag != nil {
		s.lag[split] = *b.Lag
	}
}
