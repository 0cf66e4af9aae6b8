package storage

import (
	"bytes"
	"cmp"
	"slices"
	"time"
)

// Time-window compaction (GreptimeDB's TWCS, issue 18 item 2).
//
// A time-series table's key is (series..., time): in a leveled LSM one SST
// of it covers a range of series over all of time, so a query on the last
// hour opens every file of the table, and a TTL can drop a file whole only
// once every row in it has expired — which, in a deep level, is never.
// The window level (WindowLevel) keeps such tables' data partitioned by
// time window instead:
//
//	L0 (commits, all tables)
//	  │ L0->L1 compaction: keys of tables with a time decoder are routed
//	  ▼ to one output per (table, window); the others go to L1 as before
//	LW  cpu [00:00,01:00) f7 f9 | cpu [01:00,02:00) f8 f10 f11 | mem ...
//	  │ window compaction: merges the files of ONE (table, window) when
//	  ▼ it has too many small files; its outputs stay in that window
//	LW  cpu [00:00,01:00) f12   | cpu [01:00,02:00) f13 | ...
//
// Each window-level SST holds one table and rows of one window, with its
// [min, max] row time in the version (SSTMeta.Times), so:
//   - a scan with a time range opens only the windows' files that overlap
//     it (ReadOptions.Time, read.go), whatever their keys;
//   - a window past the TTL leaves the version whole in a drop-only
//     compaction (expiredWhole), through the delta, the deletion queue and
//     GC like any compaction input (I1): no object is deleted directly.
//
// Ordering: only L0->L1 compactions put keys into the window level, and
// they take all of L0, so the window level holds versions older than
// every L0 file and newer than L1..L6's (which keep what was compacted
// before the table had a time decoder). Files of one window may overlap in
// key range (like L0): reads merge them as separate sources and a point
// read takes the newest version across them. A compaction drops
// tombstones only when nothing older can lie elsewhere (bottommost:
// windowBottommost and pick's check of the window level).

// DefaultTimeWindow is the window of a time-series table that names none:
// one hour keeps a day's data in 24 windows (a range query over the last
// hour opens one or two of them) while a week's TTL drops files an hour at
// a time.
const DefaultTimeWindow = time.Hour

// Window-compaction triggers, counted in sorted runs (sets of files of a
// window disjoint in key range: one merge's outputs): the newest (active)
// window of a table is merged once it has windowActiveRuns runs, an older
// window (late rows) once it has windowInactiveRuns. A merge leaves one
// run, so the picker cannot loop on its own output.
const (
	windowActiveRuns   = 4
	windowInactiveRuns = 2
)

// windowSpec is how one table's keys are routed to windows.
type windowSpec struct {
	timeOf func(rest []byte) (int64, bool)
	width  int64 // µs
}

// window returns the start (µs) of the window of a row time.
func (w windowSpec) window(micros int64) int64 {
	s := micros - micros%w.width
	if micros%w.width < 0 {
		s -= w.width
	}
	return s
}

// windowSpecs returns the routing of every table with a time decoder
// (SetRetention), nil when none.
func (e *Engine) windowSpecs() map[TableID]windowSpec {
	e.ret.mu.RLock()
	defer e.ret.mu.RUnlock()
	if len(e.ret.m) == 0 {
		return nil
	}
	out := make(map[TableID]windowSpec, len(e.ret.m))
	for t, r := range e.ret.m {
		w := r.Window
		if w <= 0 {
			w = DefaultTimeWindow
		}
		out[t] = windowSpec{timeOf: r.TimeOf, width: max(w.Microseconds(), 1)}
	}
	return out
}

// windowTable returns the time range of a window-level SST: it must hold
// exactly one table and know its rows' time range (nil otherwise).
func windowTable(f *SSTMeta) *TimeRange {
	if len(f.Tables) != 1 || len(f.Times) != 1 || !f.Times[0].Valid {
		return nil
	}
	return &f.Times[0]
}

// sortWindowLevel orders the window level by table, then time, then id.
func sortWindowLevel(files []*SSTMeta) {
	slices.SortFunc(files, func(a, b *SSTMeta) int {
		if c := compareTables(a, b); c != 0 {
			return c
		}
		if a.Times[0].Min != b.Times[0].Min {
			if a.Times[0].Min < b.Times[0].Min {
				return -1
			}
			return 1
		}
		if a.ID < b.ID {
			return -1
		} else if a.ID > b.ID {
			return 1
		}
		return 0
	})
}

func compareTables(a, b *SSTMeta) int {
	switch {
	case a.Tables[0] < b.Tables[0]:
		return -1
	case a.Tables[0] > b.Tables[0]:
		return 1
	}
	return 0
}

// windowFiles returns table's files of the window level (sorted by time).
func windowFiles(v *Version, table TableID) []*SSTMeta {
	files := v.Levels[WindowLevel]
	i, _ := slices.BinarySearchFunc(files, table, func(f *SSTMeta, t TableID) int {
		switch {
		case f.Tables[0] < t:
			return -1
		case f.Tables[0] > t:
			return 1
		}
		return 0
	})
	j := i
	for j < len(files) && files[j].Tables[0] == table {
		j++
	}
	return files[i:j]
}

// pickWindow chooses a window compaction: the files of one (table,
// window) of the window level, merged into that window. Tables without a
// time decoder now (set after a restart by the layer above) are left
// alone until they have one. Caller holds compactMu.
func (e *Engine) pickWindow(v *Version, force bool) *compactionPick {
	specs := e.windowSpecs()
	if len(specs) == 0 {
		return nil
	}
	files := v.Levels[WindowLevel]
	for i := 0; i < len(files); {
		t := files[i].Tables[0]
		j := i
		for j < len(files) && files[j].Tables[0] == t {
			j++
		}
		spec, ok := specs[t]
		if !ok || !v.hasTable(t) {
			i = j
			continue
		}
		// Group the table's files by the window of their first row.
		type group struct {
			start int64
			files []*SSTMeta
			busy  bool
		}
		var groups []*group
		for _, f := range files[i:j] {
			s := spec.window(f.Times[0].Min)
			if len(groups) == 0 || groups[len(groups)-1].start != s {
				groups = append(groups, &group{start: s})
			}
			g := groups[len(groups)-1]
			g.files = append(g.files, f)
			g.busy = g.busy || e.compacting[f.ID]
		}
		for gi, g := range groups {
			active := gi == len(groups)-1
			need := windowInactiveRuns
			if active && !force {
				need = windowActiveRuns
			}
			if g.busy || len(g.files) < need {
				continue
			}
			runs := sortedRuns(g.files)
			if active && !force {
				runs = newestTier(runs)
			}
			if len(runs) < need {
				continue
			}
			p := &compactionPick{outLevel: WindowLevel, route: specs}
			var tr TimeRange
			for _, r := range runs {
				for _, f := range r.files {
					p.inputs = append(p.inputs, LevelFile{WindowLevel, f.ID})
					p.files = append(p.files, f)
					if !tr.Valid {
						tr = TimeRange{Min: f.Times[0].Min, Max: f.Times[0].Max, Valid: true}
					}
					tr.Min, tr.Max = min(tr.Min, f.Times[0].Min), max(tr.Max, f.Times[0].Max)
				}
			}
			// Bottommost only if the merge takes every file of the window
			// and nothing older lies elsewhere.
			p.bottommost = windowBottommost(v, t, tr, p.files)
			return p
		}
		i = j
	}
	return nil
}

// windowRun is a set of a window's files disjoint in key range.
type windowRun struct {
	files []*SSTMeta
	size  uint64
	epoch uint64 // newest data in the run
	last  []byte // largest prefix so far
}

// sortedRuns splits a window's files into runs (greedily, by smallest
// key: each file joins the first run it does not overlap), newest first.
func sortedRuns(files []*SSTMeta) []*windowRun {
	fs := slices.Clone(files)
	slices.SortFunc(fs, func(a, b *SSTMeta) int { return epochCompare(a.Smallest, b.Smallest) })
	var runs []*windowRun
	for _, f := range fs {
		var r *windowRun
		for _, c := range runs {
			if bytes.Compare(c.last, prefixOf(f.Smallest)) < 0 {
				r = c
				break
			}
		}
		if r == nil {
			r = &windowRun{}
			runs = append(runs, r)
		}
		r.files = append(r.files, f)
		r.size += f.Size
		r.epoch = max(r.epoch, f.MaxEpoch)
		r.last = prefixOf(f.Largest)
	}
	slices.SortStableFunc(runs, func(a, b *windowRun) int { return cmp.Compare(b.epoch, a.epoch) })
	return runs
}

// newestTier drops, from the oldest end, runs larger than all the runs
// newer than them together: the active window then merges its small new
// runs and rewrites its big old one only once they have grown to its size
// (size tiers, as intra-L0 compaction does), instead of at every merge.
func newestTier(runs []*windowRun) []*windowRun {
	n := len(runs)
	var newer uint64
	for _, r := range runs {
		newer += r.size
	}
	for n > 1 {
		newer -= runs[n-1].size
		if runs[n-1].size <= newer {
			break
		}
		n--
	}
	return runs[:n]
}

// windowBottommost reports whether nothing older than a window
// compaction's inputs can hold keys of table in time range tr: no L1..L6
// file holds the table, and no other window-level file of it overlaps tr
// (one can, when the window width changed). Only then may the compaction
// drop tombstones.
func windowBottommost(v *Version, table TableID, tr TimeRange, inputs []*SSTMeta) bool {
	for l := 1; l < NumLevels; l++ {
		for _, f := range v.Levels[l] {
			if _, _, ok := f.tableRange(table); ok {
				return false
			}
		}
	}
	for _, f := range windowFiles(v, table) {
		if slices.Contains(inputs, f) {
			continue
		}
		if r := f.Times[0]; r.Max >= tr.Min && r.Min <= tr.Max {
			return false
		}
	}
	return true
}
