package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"
)

// NumLevels is the depth of the leveled LSM: L0 (overlapping, newest
// first) and L1..L6 (each sorted and non-overlapping).
const NumLevels = 7

// WindowLevel is the slot after the leveled ones that holds the SSTs of
// time-series tables partitioned by time window (window.go): each holds
// rows of one table and one window, files of a window may overlap in key
// range, and compaction merges only files of the same window. Its data is
// newer than L1..L6's of the same table and older than L0's (only L0->L1
// compactions move keys into it). Deltas name it as level 7.
const WindowLevel = NumLevels

// numSlots counts the level slots of a Version: the leveled ones and the
// window level.
const numSlots = NumLevels + 1

// SSTMeta describes one SST object in a version.
type SSTMeta struct {
	ID         uint64
	Size       uint64
	NumEntries uint64
	MinEpoch   uint64
	MaxEpoch   uint64
	Smallest   []byte // full stored keys (table|rest|^epoch), inclusive
	Largest    []byte
	Tables     []TableID // tables with data in the SST, ascending
	// Bounds holds, for each table of Tables (same order), the smallest
	// and largest key prefix (table|rest, no epoch) the SST holds for it.
	// An SST written by one commit spans several tables; its overall
	// Smallest..Largest then covers every key of the tables in between,
	// and a read of one table would open it for nothing. Nil for SSTs
	// recorded before format 2 (the overall range is used then).
	Bounds []KeyRange
	// Times holds, for each table of Tables (same order), the range of
	// row times (Unix µs) the SST holds for it, when the table had a time
	// decoder (a time-series table, SetRetention) while the SST was built;
	// nil or !Valid: unknown. An SST whose tables are all past their TTL
	// is dropped whole by the picker (retention.go).
	Times []TimeRange
	// Inline: the SST's bytes are in the metastore (storage_inline_objects,
	// written in the transaction of the delta that added it), not in the
	// object store. Small commits are inline; compaction outputs never.
	Inline bool
}

// TimeRange is an inclusive range of row times (Unix µs).
type TimeRange struct {
	Min, Max int64
	Valid    bool
}

// KeyRange is an inclusive range of key prefixes.
type KeyRange struct{ Smallest, Largest []byte }

// tableRange returns the prefix range f holds for table t, and whether f
// holds t at all.
func (f *SSTMeta) tableRange(t TableID) (lo, hi []byte, ok bool) {
	var i int
	if len(f.Tables) <= 8 {
		i = slices.Index(f.Tables, t)
		ok = i >= 0
	} else {
		i, ok = slices.BinarySearch(f.Tables, t)
	}
	if !ok {
		return nil, nil, false
	}
	if len(f.Bounds) == len(f.Tables) {
		return f.Bounds[i].Smallest, f.Bounds[i].Largest, true
	}
	return f.Smallest[:epochSplit(f.Smallest)], f.Largest[:epochSplit(f.Largest)], true
}

// Version is an immutable snapshot of the LSM shape. A new Version is made
// for every delta; readers pin one by reference count (Engine.pin).
type Version struct {
	ID             uint64 // id of the last delta applied
	CommittedEpoch uint64
	// SafeEpoch: compactions may have dropped versions older than this
	// epoch; reads below it are refused.
	SafeEpoch uint64
	Tables    map[TableID]struct{}
	// Levels: L0 newest first; L1..L6 sorted by Smallest; Levels[WindowLevel]
	// sorted by (table, time range) — see WindowLevel.
	Levels [numSlots][]*SSTMeta

	refs atomic.Int64 // readers pinning this version
}

// VersionDelta is one atomic change to the version, stored in one
// metastore row and applied in one metadata transaction.
type VersionDelta struct {
	ID             uint64   // = previous version ID + 1
	CommittedEpoch uint64   // new committed epoch (>= previous)
	SafeEpoch      uint64   // new safe epoch (>= previous)
	JobIDs         []uint64 // upload/compaction jobs committed by this delta
	AddTables      []TableID
	RemoveTables   []TableID
	Removed        []LevelFile // SSTs leaving the version (-> deletion queue)
	Added          []LevelSST  // SSTs entering the version
}

// LevelFile names an SST in a level.
type LevelFile struct {
	Level int
	ID    uint64
}

// LevelSST is an SST added at a level.
type LevelSST struct {
	Level int
	SST   *SSTMeta
}

func newEmptyVersion() *Version {
	return &Version{Tables: map[TableID]struct{}{}}
}

// objects returns every object id the version references.
func (v *Version) objects() map[uint64]struct{} {
	m := map[uint64]struct{}{}
	for l := range v.Levels {
		for _, f := range v.Levels[l] {
			m[f.ID] = struct{}{}
		}
	}
	return m
}

// inlineObjects is the set of inline SSTs v references.
func (v *Version) inlineObjects() map[uint64]struct{} {
	m := map[uint64]struct{}{}
	for l := range v.Levels {
		for _, f := range v.Levels[l] {
			if f.Inline {
				m[f.ID] = struct{}{}
			}
		}
	}
	return m
}

func (v *Version) hasTable(t TableID) bool {
	_, ok := v.Tables[t]
	return ok
}

// apply returns a new version with d applied; v is not modified.
func (v *Version) apply(d *VersionDelta) (*Version, error) {
	if d.ID != v.ID+1 {
		return nil, fmt.Errorf("version delta %d does not follow version %d", d.ID, v.ID)
	}
	nv := &Version{ID: d.ID, CommittedEpoch: max(v.CommittedEpoch, d.CommittedEpoch), SafeEpoch: max(v.SafeEpoch, d.SafeEpoch), Tables: make(map[TableID]struct{}, len(v.Tables)+len(d.AddTables))}
	for t := range v.Tables {
		nv.Tables[t] = struct{}{}
	}
	for _, t := range d.AddTables {
		nv.Tables[t] = struct{}{}
	}
	for _, t := range d.RemoveTables {
		delete(nv.Tables, t)
	}
	removed := map[LevelFile]bool{}
	for _, r := range d.Removed {
		removed[r] = false
	}
	l0At := -1 // where the first removed L0 file was, among the kept ones
	for l := range v.Levels {
		keep := make([]*SSTMeta, 0, len(v.Levels[l]))
		for _, f := range v.Levels[l] {
			lf := LevelFile{l, f.ID}
			if _, ok := removed[lf]; ok {
				removed[lf] = true
				if l == 0 && l0At < 0 {
					l0At = len(keep)
				}
				continue
			}
			keep = append(keep, f)
		}
		nv.Levels[l] = keep
	}
	for lf, seen := range removed {
		if !seen {
			return nil, fmt.Errorf("version delta %d removes sst %d from L%d, which is not there", d.ID, lf.ID, lf.Level)
		}
	}
	var newL0 []*SSTMeta
	for _, a := range d.Added {
		if a.Level < 0 || a.Level > WindowLevel {
			return nil, fmt.Errorf("version delta %d adds sst %d at bad level %d", d.ID, a.SST.ID, a.Level)
		}
		if a.Level == WindowLevel && windowTable(a.SST) == nil {
			return nil, fmt.Errorf("version delta %d adds sst %d to the window level without one table and its time range", d.ID, a.SST.ID)
		}
		if a.Level == 0 {
			newL0 = append(newL0, a.SST)
		} else {
			nv.Levels[a.Level] = append(nv.Levels[a.Level], a.SST)
		}
	}
	if len(newL0) > 0 {
		// Within a delta L0 files are listed newest first. A commit's go in
		// front of older L0 files. An intra-L0 compaction's (the delta
		// removes L0 files) take the place of its inputs, which were
		// consecutive in L0: behind the files committed meanwhile, in
		// front of older files it left alone.
		if l0At >= 0 {
			l0 := nv.Levels[0]
			nv.Levels[0] = slices.Concat(l0[:l0At], newL0, l0[l0At:])
		} else {
			nv.Levels[0] = append(newL0, nv.Levels[0]...)
		}
	}
	sortWindowLevel(nv.Levels[WindowLevel])
	for l := 1; l < NumLevels; l++ {
		files := nv.Levels[l]
		sort.Slice(files, func(i, j int) bool { return epochCompare(files[i].Smallest, files[j].Smallest) < 0 })
		for i := 1; i < len(files); i++ {
			if epochCompare(files[i-1].Largest, files[i].Smallest) >= 0 {
				return nil, fmt.Errorf("version delta %d: L%d ssts %d and %d overlap", d.ID, l, files[i-1].ID, files[i].ID)
			}
		}
	}
	return nv, nil
}

// ---- binary encoding (docs/storage-format.md) ----

const (
	deltaFormatV1      = 1
	checkpointFormatV1 = 1
	// Format 2 adds each SST's per-table key bounds (SSTMeta.Bounds).
	deltaFormatV2      = 2
	checkpointFormatV2 = 2
	// Format 3 adds each SST's flags (sstFlagInline).
	deltaFormatV3      = 3
	checkpointFormatV3 = 3
	// Format 4 adds the window level (WindowLevel): a delta may name level
	// 7, a checkpoint lists 8 level slots. A delta is written in format 4
	// only when it names the window level, a checkpoint only when the
	// window level holds files, so stores without time-series tables stay
	// readable by the previous release.
	deltaFormatV4      = 4
	checkpointFormatV4 = 4
)

// SST flags (format 3).
const (
	sstFlagInline = 1
	sstFlagTimes  = 2 // per-table time ranges follow the flags
)

var errShortBuffer = errors.New("truncated")

type encoder struct{ b []byte }

func (e *encoder) uvarint(x uint64) { e.b = binary.AppendUvarint(e.b, x) }
func (e *encoder) bytes(p []byte)   { e.uvarint(uint64(len(p))); e.b = append(e.b, p...) }
func (e *encoder) tables(ts []TableID) {
	e.uvarint(uint64(len(ts)))
	for _, t := range ts {
		e.uvarint(uint64(t))
	}
}
func (e *encoder) sst(s *SSTMeta) {
	e.uvarint(s.ID)
	e.uvarint(s.Size)
	e.uvarint(s.NumEntries)
	e.uvarint(s.MinEpoch)
	e.uvarint(s.MaxEpoch)
	e.bytes(s.Smallest)
	e.bytes(s.Largest)
	e.tables(s.Tables)
	// Format 2: per-table bounds, one pair per table (none when unknown).
	if len(s.Bounds) != len(s.Tables) {
		e.uvarint(0)
	} else {
		e.uvarint(uint64(len(s.Bounds)))
		for _, r := range s.Bounds {
			e.bytes(r.Smallest)
			e.bytes(r.Largest)
		}
	}
	// Format 3: flags.
	var flags uint64
	if s.Inline {
		flags |= sstFlagInline
	}
	times := len(s.Times) == len(s.Tables) && slices.ContainsFunc(s.Times, func(r TimeRange) bool { return r.Valid })
	if times {
		flags |= sstFlagTimes
	}
	e.uvarint(flags)
	if times {
		// Flag sstFlagTimes: per table, valid (0/1) then min and max.
		for _, r := range s.Times {
			if !r.Valid {
				e.uvarint(0)
				continue
			}
			e.uvarint(1)
			e.b = binary.AppendVarint(e.b, r.Min)
			e.b = binary.AppendVarint(e.b, r.Max)
		}
	}
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errShortBuffer
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) { // every element takes at least one byte
		d.err = errShortBuffer
		return 0
	}
	return int(n)
}

func (d *decoder) bytes() []byte {
	n := d.count()
	if d.err != nil {
		return nil
	}
	p := bytes.Clone(d.b[:n])
	d.b = d.b[n:]
	return p
}

func (d *decoder) tables() []TableID {
	n := d.count()
	var ts []TableID
	for i := 0; i < n && d.err == nil; i++ {
		ts = append(ts, TableID(d.uvarint()))
	}
	return ts
}

func (d *decoder) sst(format uint64) *SSTMeta {
	s := &SSTMeta{}
	s.ID = d.uvarint()
	s.Size = d.uvarint()
	s.NumEntries = d.uvarint()
	s.MinEpoch = d.uvarint()
	s.MaxEpoch = d.uvarint()
	s.Smallest = d.bytes()
	s.Largest = d.bytes()
	s.Tables = d.tables()
	if format >= 2 {
		n := d.count()
		if d.err == nil && n != 0 && n != len(s.Tables) {
			d.err = fmt.Errorf("sst %d: %d table bounds for %d tables", s.ID, n, len(s.Tables))
		}
		for i := 0; i < n && d.err == nil; i++ {
			s.Bounds = append(s.Bounds, KeyRange{Smallest: d.bytes(), Largest: d.bytes()})
		}
	}
	if format >= 3 {
		flags := d.uvarint()
		if d.err == nil && flags&^(sstFlagInline|sstFlagTimes) != 0 {
			d.err = fmt.Errorf("sst %d: unknown flags %#x", s.ID, flags)
		}
		s.Inline = flags&sstFlagInline != 0
		if flags&sstFlagTimes != 0 {
			for range s.Tables {
				if d.err != nil {
					break
				}
				if d.uvarint() == 0 {
					s.Times = append(s.Times, TimeRange{})
					continue
				}
				s.Times = append(s.Times, TimeRange{Min: d.varint(), Max: d.varint(), Valid: true})
			}
		}
	}
	return s
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errShortBuffer
		return 0
	}
	d.b = d.b[n:]
	return x
}

// encodeDelta: see docs/storage-format.md "Version delta".
func encodeDelta(d *VersionDelta) []byte {
	e := &encoder{}
	format := uint64(deltaFormatV3)
	for _, r := range d.Removed {
		if r.Level == WindowLevel {
			format = deltaFormatV4
		}
	}
	for _, a := range d.Added {
		if a.Level == WindowLevel {
			format = deltaFormatV4
		}
	}
	e.uvarint(format)
	e.uvarint(d.ID)
	e.uvarint(d.CommittedEpoch)
	e.uvarint(d.SafeEpoch)
	e.uvarint(uint64(len(d.JobIDs)))
	for _, j := range d.JobIDs {
		e.uvarint(j)
	}
	e.tables(d.AddTables)
	e.tables(d.RemoveTables)
	e.uvarint(uint64(len(d.Removed)))
	for _, r := range d.Removed {
		e.uvarint(uint64(r.Level))
		e.uvarint(r.ID)
	}
	e.uvarint(uint64(len(d.Added)))
	for _, a := range d.Added {
		e.uvarint(uint64(a.Level))
		e.sst(a.SST)
	}
	return e.b
}

func decodeDelta(b []byte) (*VersionDelta, error) {
	dd := &decoder{b: b}
	format := dd.uvarint()
	if dd.err == nil && format > deltaFormatV4 {
		return nil, fmt.Errorf("version delta in format %d, newer than this runnel reads (%d-%d): %w", format, deltaFormatV1, deltaFormatV4, ErrNewerFormat)
	}
	if dd.err == nil && format < deltaFormatV1 {
		return nil, fmt.Errorf("version delta: unknown format %d: %w", format, ErrCorrupt)
	}
	d := &VersionDelta{}
	d.ID = dd.uvarint()
	d.CommittedEpoch = dd.uvarint()
	d.SafeEpoch = dd.uvarint()
	nj := dd.count()
	for i := 0; i < nj && dd.err == nil; i++ {
		d.JobIDs = append(d.JobIDs, dd.uvarint())
	}
	d.AddTables = dd.tables()
	d.RemoveTables = dd.tables()
	n := dd.count()
	for i := 0; i < n && dd.err == nil; i++ {
		d.Removed = append(d.Removed, LevelFile{Level: int(dd.uvarint()), ID: dd.uvarint()})
	}
	n = dd.count()
	for i := 0; i < n && dd.err == nil; i++ {
		l := int(dd.uvarint())
		if dd.err == nil && (l > WindowLevel || l == WindowLevel && format < deltaFormatV4) {
			dd.err = fmt.Errorf("sst at bad level %d", l)
		}
		d.Added = append(d.Added, LevelSST{Level: l, SST: dd.sst(format)})
	}
	if dd.err != nil {
		return nil, fmt.Errorf("version delta: %w: %w", ErrCorrupt, dd.err)
	}
	return d, nil
}

// encodeCheckpoint: see docs/storage-format.md "Version checkpoint".
func encodeCheckpoint(v *Version) []byte {
	e := &encoder{}
	format, slots := uint64(checkpointFormatV3), NumLevels
	if len(v.Levels[WindowLevel]) > 0 {
		format, slots = checkpointFormatV4, numSlots
	}
	e.uvarint(format)
	e.uvarint(v.ID)
	e.uvarint(v.CommittedEpoch)
	e.uvarint(v.SafeEpoch)
	ts := make([]TableID, 0, len(v.Tables))
	for t := range v.Tables {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	e.tables(ts)
	e.uvarint(uint64(slots))
	for l := range slots {
		e.uvarint(uint64(len(v.Levels[l])))
		for _, f := range v.Levels[l] {
			e.sst(f)
		}
	}
	return e.b
}

func decodeCheckpoint(b []byte) (*Version, error) {
	dd := &decoder{b: b}
	format := dd.uvarint()
	if dd.err == nil && format > checkpointFormatV4 {
		return nil, fmt.Errorf("version checkpoint in format %d, newer than this runnel reads (%d-%d): %w", format, checkpointFormatV1, checkpointFormatV4, ErrNewerFormat)
	}
	if dd.err == nil && format < checkpointFormatV1 {
		return nil, fmt.Errorf("version checkpoint: unknown format %d: %w", format, ErrCorrupt)
	}
	v := newEmptyVersion()
	v.ID = dd.uvarint()
	v.CommittedEpoch = dd.uvarint()
	v.SafeEpoch = dd.uvarint()
	for _, t := range dd.tables() {
		v.Tables[t] = struct{}{}
	}
	nl := dd.uvarint()
	want := uint64(NumLevels)
	if format >= checkpointFormatV4 {
		want = numSlots
	}
	if dd.err == nil && nl != want {
		return nil, fmt.Errorf("version checkpoint: %d levels, want %d: %w", nl, want, ErrCorrupt)
	}
	for l := 0; l < int(want) && dd.err == nil; l++ {
		n := dd.count()
		for i := 0; i < n && dd.err == nil; i++ {
			v.Levels[l] = append(v.Levels[l], dd.sst(format))
		}
	}
	if dd.err != nil {
		return nil, fmt.Errorf("version checkpoint: %w: %w", ErrCorrupt, dd.err)
	}
	for _, f := range v.Levels[WindowLevel] {
		if windowTable(f) == nil {
			return nil, fmt.Errorf("version checkpoint: window-level sst %d has no single table and time range: %w", f.ID, ErrCorrupt)
		}
	}
	sortWindowLevel(v.Levels[WindowLevel])
	return v, nil
}
