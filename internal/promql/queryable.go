package promql

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/runneldb/runnel/internal/types"
)

// FieldLabel is the pseudo-label that picks a value column of a table
// with several (GreptimeDB's __field__).
const FieldLabel = "__field__"

// Source opens consistent views of Runnel's time-series tables. The
// frontend implements it (frontend/promsource.go); tests may fake it.
type Source interface {
	// Open pins one snapshot of the time-series tables of schema (the
	// HTTP API's db parameter, GreptimeDB's database). Close the Reader.
	Open(ctx context.Context, schema string) (Reader, error)
}

// Reader is one pinned snapshot: every table it lists is read at the
// same committed epoch.
type Reader interface {
	// Tables lists the time-series tables of the schema. The slice and
	// the tables are the caller's to read, not to change.
	Tables() []*Table
	// Scan returns t's rows whose time index may lie in [minMicros,
	// maxMicros] (Unix µs): the reader skips the SSTs whose time range is
	// outside it (storage.ReadOptions.Time); rows outside it may still be
	// returned and are filtered by the caller. Rows past the table's TTL
	// are never returned. Each row holds the columns in cols, and the
	// first row of each series (Rows.Next's newSeries) also those in
	// seriesCols; a reader may leave every other column NULL (undecoded).
	Scan(ctx context.Context, t *Table, minMicros, maxMicros int64, cols, seriesCols []int) (Rows, error)
	Close()
}

// Rows iterates rows (the table's columns by column index). Next returns
// a nil row at the end. newSeries is false only when the row's series
// (the key columns before the time index) is the previous row's: its
// seriesCols have the previous row's values, and the reader may have left
// them undecoded (NULL) in this row. A reader that cannot tell says true. The row returned may be reused by
// the next call (the caller keeps no row, only values copied out of it).
type Rows interface {
	Next(ctx context.Context) (row types.Row, newSeries bool, err error)
	Close()
}

// Table is a time-series table as PromQL sees it: its name is the metric
// name, its tag columns are labels, and each numeric field column gives a
// series per tag set.
type Table struct {
	Name   string
	Time   int      // column index of the time index
	Tags   []Column // label columns
	Fields []Column // numeric value columns
	// Ref is the Reader's own handle on the table (the catalog relation).
	Ref any
}

// Column names a column by its index in a row.
type Column struct {
	Name  string
	Index int
}

// queryable is a storage.Queryable over one Reader.
type queryable struct{ r Reader }

func (q queryable) Querier(mint, maxt int64) (storage.Querier, error) {
	return &querier{r: q.r, mint: mint, maxt: maxt}, nil
}

// querier answers selects by scanning tables: the time range goes down to
// the storage scan (SST pruning by time), the label matchers are applied
// to each row's tag columns as it is read, before any sample is kept.
type querier struct {
	r          Reader
	mint, maxt int64 // ms, inclusive
}

func (q *querier) Close() error { return nil }

// plan is one table's part of a select: which fields and which per-tag
// matchers.
type plan struct {
	t      *Table
	fields []Column
	// tagMatch[i] are the matchers on t.Tags[i].
	tagMatch [][]*labels.Matcher
	multi    bool // the series carry __field__ (the table has several fields)
}

// plans picks the tables and fields that matchers can select, or none.
// A matcher on a label the table does not have sees the empty value (as
// in Prometheus: {job=""} selects series without job).
func (q *querier) plans(ms []*labels.Matcher) []*plan {
	var out []*plan
tables:
	for _, t := range q.r.Tables() {
		p := &plan{t: t, tagMatch: make([][]*labels.Matcher, len(t.Tags)), multi: len(t.Fields) > 1}
		var fieldMs []*labels.Matcher
		for _, m := range ms {
			switch m.Name {
			case labels.MetricName:
				if !m.Matches(t.Name) {
					continue tables
				}
				continue
			case FieldLabel:
				fieldMs = append(fieldMs, m)
				continue
			}
			i := slices.IndexFunc(t.Tags, func(c Column) bool { return c.Name == m.Name })
			if i < 0 {
				if !m.Matches("") {
					continue tables
				}
				continue
			}
			p.tagMatch[i] = append(p.tagMatch[i], m)
		}
		for _, f := range t.Fields {
			ok := true
			for _, m := range fieldMs {
				ok = ok && m.Matches(f.Name)
			}
			if ok {
				p.fields = append(p.fields, f)
			}
		}
		if len(p.fields) > 0 {
			out = append(out, p)
		}
	}
	return out
}

func (q *querier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	mint, maxt := q.mint, q.maxt
	if hints != nil {
		mint, maxt = max(mint, hints.Start), min(maxt, hints.End)
	}
	var all []*series
	for _, p := range q.plans(ms) {
		ss, err := q.scan(ctx, p, mint, maxt)
		if err != nil {
			return storage.ErrSeriesSet(err)
		}
		all = append(all, ss...)
	}
	// Always sorted: cheap next to the scan, and the API answers in order.
	sort.Slice(all, func(i, j int) bool { return labels.Compare(all[i].lset, all[j].lset) < 0 })
	return &seriesSet{list: all, i: -1}
}

// scan reads p's table over [mint, maxt] (ms) into series. Only the time
// and the selected fields are decoded in every row; the tags only where a
// series starts (Rows' newSeries), and the matchers and the series lookup
// run there too, so a row of a series already seen costs its time and
// values.
func (q *querier) scan(ctx context.Context, p *plan, mint, maxt int64) ([]*series, error) {
	t := p.t
	lo, hi := msToMicros(mint), msToMicros(maxt)+999
	if maxt >= math.MaxInt64/1000 {
		hi = math.MaxInt64
	}
	cols := []int{t.Time}
	for _, f := range p.fields {
		cols = append(cols, f.Index)
	}
	tagCols := make([]int, len(t.Tags))
	for i, c := range t.Tags {
		tagCols[i] = c.Index
	}
	rows, err := q.r.Scan(ctx, t, lo, hi, cols, tagCols)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	bySeries := map[string][]*series{} // tag values key -> one series per field
	var out []*series
	// cur is the current series' per-field series, nil when its tags do
	// not match (its rows are skipped until the next series).
	var cur []*series
	vals := make([]string, len(t.Tags))
	for {
		row, newSeries, err := rows.Next(ctx)
		if err != nil {
			return nil, err
		}
		if row == nil {
			break
		}
		if newSeries {
			cur = p.series(row, vals, bySeries, &out)
		}
		if cur == nil {
			continue
		}
		td := row[t.Time]
		if td.IsNull() {
			continue
		}
		ts := microsToMs(td.Int())
		if ts < mint || ts > maxt {
			continue
		}
		for i, f := range p.fields {
			v, ok := fieldValue(row[f.Index])
			if ok {
				cur[i].add(ts, v)
			}
		}
	}
	res := out[:0]
	for _, s := range out {
		if len(s.s) > 0 {
			s.finish()
			res = append(res, s)
		}
	}
	return res, nil
}

// series returns the per-field series of the row's tag values, creating
// them (into out) on first sight, or nil when the tags do not match.
func (p *plan) series(row types.Row, vals []string, bySeries map[string][]*series, out *[]*series) []*series {
	t := p.t
	for i, c := range t.Tags {
		vals[i] = labelValue(row[c.Index])
		for _, m := range p.tagMatch[i] {
			if !m.Matches(vals[i]) {
				return nil
			}
		}
	}
	key := strings.Join(vals, "\xff")
	cur := bySeries[key]
	if cur == nil {
		cur = make([]*series, len(p.fields))
		for i, f := range p.fields {
			cur[i] = &series{lset: seriesLabels(t, vals, f, p.multi)}
			*out = append(*out, cur[i])
		}
		bySeries[key] = cur
	}
	return cur
}

func seriesLabels(t *Table, vals []string, f Column, multi bool) labels.Labels {
	b := labels.NewScratchBuilder(len(vals) + 2)
	b.Add(labels.MetricName, t.Name)
	for i, c := range t.Tags {
		if vals[i] != "" {
			b.Add(c.Name, vals[i])
		}
	}
	if multi {
		b.Add(FieldLabel, f.Name)
	}
	b.Sort()
	return b.Labels()
}

// labelValue is a tag's label value; NULL is the empty value (no label).
func labelValue(d types.Datum) string {
	switch d.Kind() {
	case types.KindNull:
		return ""
	case types.KindVarchar:
		return d.Str()
	}
	return d.String()
}

// fieldValue is a field's sample value; NULL is no sample.
func fieldValue(d types.Datum) (float64, bool) {
	switch d.Kind() {
	case types.KindFloat64, types.KindFloat32:
		return d.Float(), true
	case types.KindInt16, types.KindInt32, types.KindInt64:
		return float64(d.Int()), true
	case types.KindBool:
		if d.Bool() {
			return 1, true
		}
		return 0, true
	case types.KindNumeric:
		f, err := d.Decimal().Float64()
		return f, err == nil
	}
	return 0, false
}

// IsNumeric reports whether a column of type t gives samples.
func IsNumeric(t types.Type) bool {
	switch t.Kind {
	case types.KindFloat64, types.KindFloat32, types.KindInt16, types.KindInt32, types.KindInt64, types.KindBool, types.KindNumeric:
		return true
	}
	return false
}

// microsToMs floors a Unix µs time to ms.
func microsToMs(us int64) int64 {
	if us < 0 {
		return -((-us + 999) / 1000)
	}
	return us / 1000
}

func msToMicros(ms int64) int64 {
	switch {
	case ms >= math.MaxInt64/1000:
		return math.MaxInt64
	case ms <= math.MinInt64/1000:
		return math.MinInt64
	}
	return ms * 1000
}

// LabelValues answers from the series that match (Prometheus' semantics:
// values present in [mint, maxt]). For __name__ without matchers it lists
// the tables, and for __field__ the value columns, without reading rows.
func (q *querier) LabelValues(ctx context.Context, name string, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	if len(ms) == 0 && (name == labels.MetricName || name == FieldLabel) {
		set := map[string]bool{}
		for _, t := range q.r.Tables() {
			if name == labels.MetricName {
				set[t.Name] = true
			} else if len(t.Fields) > 1 {
				for _, f := range t.Fields {
					set[f.Name] = true
				}
			}
		}
		return limit(sortedKeys(set), hints), nil, nil
	}
	if len(ms) == 0 {
		// Only the tables that have the label can give it a value.
		ms = []*labels.Matcher{labels.MustNewMatcher(labels.MatchNotEqual, name, "")}
	}
	set := map[string]bool{}
	ss := q.Select(ctx, false, nil, ms...)
	for ss.Next() {
		if v := ss.At().Labels().Get(name); v != "" {
			set[v] = true
		}
	}
	if err := ss.Err(); err != nil {
		return nil, nil, err
	}
	return limit(sortedKeys(set), hints), nil, nil
}

// LabelNames without matchers lists every label a table of the schema
// has (tag columns, __name__, and __field__ where a table has several
// fields) without reading rows; with matchers it reads the matching
// series.
func (q *querier) LabelNames(ctx context.Context, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	set := map[string]bool{}
	if len(ms) == 0 {
		for _, t := range q.r.Tables() {
			if len(t.Fields) == 0 {
				continue
			}
			set[labels.MetricName] = true
			for _, c := range t.Tags {
				set[c.Name] = true
			}
			if len(t.Fields) > 1 {
				set[FieldLabel] = true
			}
		}
		return limit(sortedKeys(set), hints), nil, nil
	}
	ss := q.Select(ctx, false, nil, ms...)
	for ss.Next() {
		ss.At().Labels().Range(func(l labels.Label) { set[l.Name] = true })
	}
	if err := ss.Err(); err != nil {
		return nil, nil, err
	}
	return limit(sortedKeys(set), hints), nil, nil
}

func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func limit(s []string, hints *storage.LabelHints) []string {
	if hints != nil && hints.Limit > 0 && len(s) > hints.Limit {
		return s[:hints.Limit]
	}
	return s
}

// series is one series' samples, in time order once finished.
type series struct {
	lset     labels.Labels
	s        fsamples
	unsorted bool
}

func (s *series) add(t int64, v float64) {
	if n := len(s.s); n > 0 && t <= s.s[n-1].t {
		s.unsorted = true
	}
	s.s = append(s.s, fsample{t, v})
}

// finish sorts the samples by time and keeps the last one written of
// equal times (an append-mode table may hold duplicates; Prometheus
// holds one sample per time).
func (s *series) finish() {
	if !s.unsorted {
		return
	}
	slices.SortStableFunc(s.s, func(a, b fsample) int { return cmp.Compare(a.t, b.t) })
	out := s.s[:0]
	for _, x := range s.s {
		if n := len(out); n > 0 && out[n-1].t == x.t {
			out[n-1] = x
			continue
		}
		out = append(out, x)
	}
	s.s, s.unsorted = out, false
}

func (s *series) Labels() labels.Labels { return s.lset }

// Iterator iterates the samples with Prometheus' list iterator; Get hands
// out pointers into the slice, so iterating allocates nothing per sample.
func (s *series) Iterator(chunkenc.Iterator) chunkenc.Iterator {
	return storage.NewListSeriesIterator(s.s)
}

type seriesSet struct {
	list []*series
	i    int
}

func (ss *seriesSet) Next() bool                        { ss.i++; return ss.i < len(ss.list) }
func (ss *seriesSet) At() storage.Series                { return ss.list[ss.i] }
func (ss *seriesSet) Err() error                        { return nil }
func (ss *seriesSet) Warnings() annotations.Annotations { return nil }

// fsample is a float sample (chunks.Sample).
type fsample struct {
	t int64
	f float64
}

func (s *fsample) T() int64                      { return s.t }
func (s *fsample) ST() int64                     { return 0 }
func (s *fsample) F() float64                    { return s.f }
func (s *fsample) H() *histogram.Histogram       { return nil }
func (s *fsample) FH() *histogram.FloatHistogram { return nil }
func (s *fsample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s *fsample) Copy() chunks.Sample           { c := *s; return &c }

type fsamples []fsample

func (s fsamples) Get(i int) chunks.Sample { return &s[i] }
func (s fsamples) Len() int                { return len(s) }
