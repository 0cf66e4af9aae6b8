package tsdb

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/types"
)

// WITH options of a time-series table (GreptimeDB's names).
const (
	OptTimeIndex  = "time_index"
	OptAppendMode = "append_mode"
	OptTTL        = "ttl"
	// OptTimeWindow is the width of the table's time windows in storage
	// (storage.Retention.Window; GreptimeDB's compaction.twcs.time_window,
	// also accepted under that name). Default storage.DefaultTimeWindow.
	OptTimeWindow     = "time_window"
	optTWCSTimeWindow = "compaction.twcs.time_window"
	// OptTags lists the tag columns of a series-keyed table (one the HTTP
	// ingest created): its key is (series id, time), so tags can be added.
	OptTags = "tags"
	// SeriesIDColumn is the hidden key column of a series-keyed table: a
	// 128-bit FNV-1a hash of its non-NULL tags (name and value, sorted by
	// name), stored as a uuid.
	SeriesIDColumn = "__tsid"
)

// Spec is a time-series table's layout, read back from its catalog entry.
type Spec struct {
	TimeIndex  int   // column index of the time index
	Tags       []int // tag columns, in key order
	Fields     []int // visible columns that are neither tags nor the time index
	AppendMode bool
	TTL        time.Duration // 0: keep forever
	Window     time.Duration // 0: storage.DefaultTimeWindow
}

// IsTimeSeries reports whether rel is (or is being created as) a
// time-series table.
func IsTimeSeries(rel *catalog.Relation) bool { return rel.Options[OptTimeIndex] != "" }

// SpecOf returns rel's time-series layout; ok is false for other tables.
func SpecOf(rel *catalog.Relation) (Spec, bool) {
	if rel.Kind != catalog.KindTable || !IsTimeSeries(rel) {
		return Spec{}, false
	}
	ti := rel.ColumnIndex(rel.Options[OptTimeIndex])
	if ti < 0 {
		return Spec{}, false
	}
	sp := Spec{TimeIndex: ti, AppendMode: isTrue(rel.Options[OptAppendMode])}
	sp.TTL, _ = ParseTTL(rel.Options[OptTTL])
	sp.Window, _ = ParseTTL(timeWindowOpt(rel))
	if names, ok := rel.Options[OptTags]; ok {
		for _, n := range strings.Split(names, ",") {
			if i := rel.ColumnIndex(n); n != "" && i >= 0 {
				sp.Tags = append(sp.Tags, i)
			}
		}
	} else {
		for _, k := range rel.PK {
			if k == ti {
				break
			}
			sp.Tags = append(sp.Tags, k)
		}
	}
	inKey := map[int]bool{ti: true}
	for _, k := range sp.Tags {
		inKey[k] = true
	}
	for i, c := range rel.Columns {
		if !c.Hidden && !inKey[i] {
			sp.Fields = append(sp.Fields, i)
		}
	}
	return sp, true
}

func isTrue(v string) bool {
	switch strings.ToLower(v) {
	case "true", "on", "1", "yes":
		return true
	}
	return false
}

// Layout makes rel, a table being created with WITH (time_index = ...),
// a time-series table: its declared primary key (rel.PK) becomes its tags
// and its key becomes (tags..., time index[, rowID]) — see doc.go. rowID
// names the hidden generated key column append mode adds. Errors carry
// PostgreSQL SQLSTATEs and name the option or column.
func Layout(rel *catalog.Relation, rowID string) error {
	for k := range rel.Options {
		if k == "connector" || strings.HasPrefix(k, "format") {
			return sqlerr.Errorf(sqlerr.FeatureNotSupported, "table %q: a time-series table (time_index) cannot have a connector", rel.Name)
		}
	}
	name := rel.Options[OptTimeIndex]
	ti := rel.ColumnIndex(name)
	if ti < 0 || rel.Columns[ti].Hidden {
		return sqlerr.Errorf(sqlerr.UndefinedColumn, "column %q named in time_index of table %q does not exist", name, rel.Name)
	}
	if k := rel.Columns[ti].Type.Kind; k != types.KindTimestamp && k != types.KindTimestamptz {
		return sqlerr.Errorf(sqlerr.DatatypeMismatch, "time_index column %q of table %q must be a timestamp or timestamptz, not %s", name, rel.Name, rel.Columns[ti].Type.Name())
	}
	if v, ok := rel.Options[OptAppendMode]; ok && !isTrue(v) && !isFalse(v) {
		return sqlerr.Errorf(sqlerr.InvalidParameterValue, "table %q: append_mode must be 'true' or 'false', not %q", rel.Name, v)
	}
	if v, ok := rel.Options[OptTTL]; ok {
		if _, err := ParseTTL(v); err != nil {
			return sqlerr.Errorf(sqlerr.InvalidParameterValue, "table %q: invalid ttl %q: %v", rel.Name, v, err).
				WithHint("Write a duration such as '7d', '12h', '1h30m' or 'forever'.")
		}
	}
	if v := timeWindowOpt(rel); v != "" {
		if w, err := ParseTTL(v); err != nil || w < time.Second {
			return sqlerr.Errorf(sqlerr.InvalidParameterValue, "table %q: invalid time_window %q: want a duration of at least one second", rel.Name, v).
				WithHint("Write a duration such as '1h' or '1d'.")
		}
	}
	if names, ok := rel.Options[OptTags]; ok {
		return layoutSeries(rel, ti, names, rowID)
	}
	tags := rel.PK
	for _, k := range tags {
		if k == ti {
			return sqlerr.Errorf(sqlerr.InvalidTableDefinition, "table %q: the time index %q cannot also be a tag (PRIMARY KEY) column", rel.Name, name)
		}
		if rel.Columns[k].Hidden {
			return sqlerr.Errorf(sqlerr.InvalidTableDefinition, "table %q: hidden column %q cannot be a tag", rel.Name, rel.Columns[k].Name)
		}
	}
	pk := append(append([]int(nil), tags...), ti)
	rel.Columns[ti].NotNull = true
	if isTrue(rel.Options[OptAppendMode]) {
		rel.Columns = append(rel.Columns, catalog.Column{Name: rowID, Type: types.Int64, NotNull: true, Hidden: true})
		pk = append(pk, len(rel.Columns)-1)
	}
	rel.PK = pk
	if len(tags) > 0 {
		rel.DistKey = append([]int(nil), tags...)
	} else {
		rel.DistKey = append([]int(nil), pk...)
	}
	return nil
}

// layoutSeries keys a table by (series id, time[, rowID]); its tags are
// the columns named in the tags option (text).
func layoutSeries(rel *catalog.Relation, ti int, names, rowID string) error {
	if len(rel.PK) > 0 {
		return sqlerr.Errorf(sqlerr.InvalidTableDefinition, "table %q: the tags option and a PRIMARY KEY cannot both name the tags", rel.Name)
	}
	if names != "" {
		for _, n := range strings.Split(names, ",") {
			i := rel.ColumnIndex(n)
			if i < 0 || i == ti {
				return sqlerr.Errorf(sqlerr.UndefinedColumn, "tag column %q of table %q does not exist", n, rel.Name)
			}
			if rel.Columns[i].Type.Kind != types.KindVarchar {
				return sqlerr.Errorf(sqlerr.DatatypeMismatch, "tag column %q of table %q must be text", n, rel.Name)
			}
		}
	}
	rel.Columns[ti].NotNull = true
	rel.Columns = append(rel.Columns, catalog.Column{Name: SeriesIDColumn, Type: types.UUID, NotNull: true, Hidden: true})
	pk := []int{len(rel.Columns) - 1, ti}
	if isTrue(rel.Options[OptAppendMode]) {
		rel.Columns = append(rel.Columns, catalog.Column{Name: rowID, Type: types.Int64, NotNull: true, Hidden: true})
		pk = append(pk, len(rel.Columns)-1)
	}
	rel.PK = pk
	rel.DistKey = pk[:1:1]
	return nil
}

// SeriesFiller returns the function that sets a row's series id from its
// tags in a series-keyed table, or nil for other tables. The function is
// for one goroutine (it reuses its hasher). A NULL tag is
// left out of the hash, so adding a tag column later does not change the
// id of the rows written before.
func SeriesFiller(rel *catalog.Relation) func(types.Row) {
	sp, ok := SpecOf(rel)
	id := rel.ColumnIndex(SeriesIDColumn)
	if !ok || id < 0 || !hasOpt(rel, OptTags) {
		return nil
	}
	tags := slices.Clone(sp.Tags)
	slices.SortFunc(tags, func(a, b int) int { return strings.Compare(rel.Columns[a].Name, rel.Columns[b].Name) })
	names := make([]string, len(tags))
	for i, t := range tags {
		names[i] = rel.Columns[t].Name
	}
	// One hasher and buffer per filler (a filler is used by one writer at
	// a time): hashing a row allocates nothing.
	h := fnv.New128a()
	var buf []byte
	var u [16]byte
	return func(row types.Row) {
		buf = buf[:0]
		for i, t := range tags {
			if row[t].IsNull() {
				continue
			}
			buf = append(append(buf, names[i]...), 0xff)
			buf = append(append(buf, row[t].Str()...), 0xff)
		}
		h.Reset()
		h.Write(buf)
		row[id] = types.DUUID([16]byte(h.Sum(u[:0])))
	}
}

func hasOpt(rel *catalog.Relation, k string) bool { _, ok := rel.Options[k]; return ok }

// timeWindowOpt returns the table's time window option, under either name.
func timeWindowOpt(rel *catalog.Relation) string {
	if v := rel.Options[OptTimeWindow]; v != "" {
		return v
	}
	return rel.Options[optTWCSTimeWindow]
}

func isFalse(v string) bool {
	switch strings.ToLower(v) {
	case "false", "off", "0", "no":
		return true
	}
	return false
}

// ParseTTL parses a TTL: a sum of <number><unit> terms (units s, m, h,
// d, w and their long forms, "1h30m"), or "forever" / "" / "0" for none.
func ParseTTL(s string) (time.Duration, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "", "0", "forever", "none", "infinite":
		return 0, nil
	}
	units := []struct {
		name string
		d    time.Duration
	}{
		{"weeks", 7 * 24 * time.Hour}, {"week", 7 * 24 * time.Hour}, {"w", 7 * 24 * time.Hour},
		{"days", 24 * time.Hour}, {"day", 24 * time.Hour}, {"d", 24 * time.Hour},
		{"hours", time.Hour}, {"hour", time.Hour}, {"h", time.Hour},
		{"minutes", time.Minute}, {"minute", time.Minute}, {"min", time.Minute}, {"ms", time.Millisecond}, {"m", time.Minute},
		{"seconds", time.Second}, {"second", time.Second}, {"sec", time.Second}, {"s", time.Second},
	}
	var total time.Duration
	for rest := strings.ReplaceAll(s, " ", ""); rest != ""; {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i > 12 {
			return 0, fmt.Errorf("expected a number at %q", rest)
		}
		n, _ := strconv.ParseInt(rest[:i], 10, 64)
		rest = rest[i:]
		matched := false
		for _, u := range units {
			if strings.HasPrefix(rest, u.name) {
				total += time.Duration(n) * u.d
				rest = rest[len(u.name):]
				matched = true
				break
			}
		}
		if !matched {
			return 0, fmt.Errorf("unknown unit at %q", rest)
		}
		if total < 0 || total > 100*365*24*time.Hour {
			return 0, fmt.Errorf("out of range")
		}
	}
	return total, nil
}

// TimeOf returns a decoder of the time index from a stored key of rel
// (vnode | memcomparable(tags..., ts, ...)), in Unix microseconds.
func TimeOf(rel *catalog.Relation) func(rest []byte) (int64, bool) {
	sp, ok := SpecOf(rel)
	if !ok {
		return nil
	}
	// The key columns before the time index: the tags, or the series id.
	var skip []types.Type
	for _, k := range rel.PK {
		if k == sp.TimeIndex {
			break
		}
		skip = append(skip, rel.Columns[k].Type)
	}
	tt := rel.Columns[sp.TimeIndex].Type
	return func(rest []byte) (int64, bool) {
		if len(rest) < 2 {
			return 0, false
		}
		b := rest[2:]
		for _, t := range skip {
			var err error
			if _, b, err = types.DecodeKey(b, t, false, false); err != nil {
				return 0, false
			}
		}
		d, _, err := types.DecodeKey(b, tt, false, false)
		if err != nil || d.IsNull() {
			return 0, false
		}
		return d.Int(), true
	}
}

// Retention is rel's storage retention (nil for a table that is not a
// time-series table). Without a TTL it expires nothing, but the time
// decoder still gives every SST its time range in the version.
func Retention(rel *catalog.Relation) *storage.Retention {
	sp, ok := SpecOf(rel)
	if !ok {
		return nil
	}
	return &storage.Retention{TTL: sp.TTL, TimeOf: TimeOf(rel), Window: sp.Window}
}
