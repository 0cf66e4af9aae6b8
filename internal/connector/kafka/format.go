package kafka

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/valyala/fastjson"

	"github.com/runneldb/runnel/internal/connector"
	"github.com/runneldb/runnel/internal/types"
)

// decoder turns one record into changes appended to out. An error means
// the record is malformed: it is skipped and counted (I9). A field whose
// value does not fit its column's type becomes NULL (RisingWave's rule),
// which is not an error.
type decoder interface {
	decode(r *kgo.Record, out *types.Chunk) error
}

// maxRecordBytes bounds what is decoded of one record (I9): larger
// records are skipped as malformed rather than parsed.
const maxRecordBytes = 16 << 20

// newDecoder builds the decoder of cfg's format for spec's columns. A
// decoder keeps parser state (buffers reused from record to record, a CSV
// partition's header): each split stream has its own.
func newDecoder(cfg *Config, spec connector.Spec) (decoder, error) {
	rb := &rowBuilder{cols: spec.Columns, include: cfg.Include, byName: map[string]int{}}
	for i, c := range spec.Columns {
		if !rb.isInclude(i) {
			rb.byName[strings.ToLower(c.Name)] = i
		}
	}
	switch cfg.Format + " " + cfg.Encode {
	case "plain json":
		return &plainJSON{rb: rb}, nil
	case "upsert json":
		return &upsertJSON{rb: rb, pk: spec.PK}, nil
	case "debezium json":
		return &debeziumJSON{rb: rb}, nil
	case "plain csv":
		return &plainCSV{rb: rb, delim: cfg.Delimiter, withoutHeader: cfg.WithoutHeader, headers: map[int32][]int{}}, nil
	case "plain protobuf":
		return newProtobuf(rb, cfg)
	case "plain avro", "upsert avro", "debezium avro":
		return newAvro(rb, cfg, spec.PK)
	case "plain bytes":
		for i := range spec.Columns {
			if !rb.isInclude(i) {
				return &plainBytes{rb: rb, col: i}, nil
			}
		}
	}
	return nil, fmt.Errorf("kafka: no decoder for %s %s", cfg.Format, cfg.Encode)
}

// rowBuilder fills rows: payload fields by column name, INCLUDE columns
// from the record's metadata.
type rowBuilder struct {
	cols    []connector.Column
	include map[string]int
	// byName maps lower-cased payload column names to indices.
	byName map[string]int
	// scratch holds a JSON value's text while it is converted.
	scratch []byte
}

func (rb *rowBuilder) isInclude(i int) bool {
	for _, j := range rb.include {
		if j == i {
			return true
		}
	}
	return false
}

// newRow returns an all-NULL row with the record's INCLUDE columns set.
func (rb *rowBuilder) newRow(r *kgo.Record) types.Row {
	// One spare slot: the source executor appends the hidden row id
	// without copying the row.
	row := make(types.Row, len(rb.cols), len(rb.cols)+1)
	for i := range row {
		row[i] = types.NullDatum
	}
	if len(rb.include) == 0 {
		return row
	}
	for kind, i := range rb.include {
		switch {
		case kind == "key":
			if r.Key != nil {
				row[i] = types.DBytea(r.Key)
			}
		case kind == "partition":
			row[i] = types.DVarchar(strconv.Itoa(int(r.Partition)))
		case kind == "offset":
			row[i] = types.DVarchar(strconv.FormatInt(r.Offset, 10))
		case kind == "timestamp":
			row[i] = types.DTimestamptz(r.Timestamp.UnixMicro())
		case kind == "header":
			row[i] = headersJSON(r.Headers)
		case kind == "payload":
			// The whole value as jsonb (NULL when it is not JSON).
			if r.Value != nil && len(r.Value) <= maxRecordBytes {
				if s, err := types.ParseJsonb(string(r.Value)); err == nil {
					row[i] = types.DJsonb(s)
				}
			}
		case strings.HasPrefix(kind, "header."):
			name := strings.TrimPrefix(kind, "header.")
			for _, h := range r.Headers {
				if h.Key == name {
					row[i] = types.DBytea(h.Value)
				}
			}
		}
	}
	return row
}

// headersJSON is every header as a jsonb object of name → value text.
func headersJSON(hs []kgo.RecordHeader) types.Datum {
	m := map[string]string{}
	for _, h := range hs {
		m[h.Key] = string(h.Value)
	}
	b, _ := json.Marshal(m)
	s, err := types.ParseJsonb(string(b))
	if err != nil {
		return types.NullDatum
	}
	return types.DJsonb(s)
}

// setJSON sets row's payload columns from a JSON object's fields (by
// name, exact or case-insensitive). Absent fields stay NULL; of a field
// given twice the last counts.
func (rb *rowBuilder) setJSON(row types.Row, obj *fastjson.Object) {
	obj.Visit(func(k []byte, v *fastjson.Value) {
		i, ok := rb.byName[string(k)] // no allocation: a map lookup by a converted []byte
		if !ok {
			if i, ok = rb.byName[strings.ToLower(string(k))]; !ok {
				return
			}
		}
		row[i] = rb.jsonDatum(v, rb.cols[i].Type)
	})
}

// jsonDatum converts one JSON value to t straight from the parsed bytes;
// a value that does not fit is NULL (RisingWave's rule). Strings are
// parsed as the type's text form (timestamps, numerics in strings);
// numbers fit numeric types (integers exactly: 3.0 and 1e3 fit, 3.5 does
// not) and timestamps (epoch milliseconds, as RisingWave reads them);
// true/false fit boolean; objects and arrays fit jsonb only.
func (rb *rowBuilder) jsonDatum(v *fastjson.Value, t types.Type) types.Datum {
	kind := v.Type()
	if kind == fastjson.TypeNull {
		return types.NullDatum
	}
	if t.Kind == types.KindJsonb {
		rb.scratch = v.MarshalTo(rb.scratch[:0])
		s, err := types.ParseJsonb(string(rb.scratch))
		if err != nil {
			return types.NullDatum
		}
		return types.DJsonb(s)
	}
	var text string
	switch kind {
	case fastjson.TypeString:
		b := v.GetStringBytes()
		if t.Kind == types.KindBytea {
			return types.DBytea(b)
		}
		text = string(b)
	case fastjson.TypeTrue, fastjson.TypeFalse:
		if t.Kind != types.KindBool {
			return types.NullDatum
		}
		return types.DBool(kind == fastjson.TypeTrue)
	case fastjson.TypeNumber:
		rb.scratch = v.MarshalTo(rb.scratch[:0]) // the number's text as sent
		return numberDatum(rb.scratch, t)
	default: // an object or an array
		return types.NullDatum
	}
	d, err := types.ParseText(text, t, nil)
	if err != nil {
		return types.NullDatum
	}
	return d
}

// numberDatum converts a JSON number's text to t (see jsonDatum).
func numberDatum(raw []byte, t types.Type) types.Datum {
	switch t.Kind {
	case types.KindInt16, types.KindInt32, types.KindInt64:
		var n int64
		if bytes.ContainsAny(raw, ".eE") {
			// 3.0 or 1e3 for an integer column: exact values only.
			f, err := strconv.ParseFloat(string(raw), 64)
			if err != nil || f != float64(int64(f)) {
				return types.NullDatum
			}
			n = int64(f)
		} else {
			var err error
			if n, err = strconv.ParseInt(string(raw), 10, 64); err != nil {
				return types.NullDatum
			}
		}
		switch {
		case t.Kind == types.KindInt64:
			return types.DInt64(n)
		case t.Kind == types.KindInt32 && n == int64(int32(n)):
			return types.DInt32(int32(n))
		case t.Kind == types.KindInt16 && n == int64(int16(n)):
			return types.DInt16(int16(n))
		}
		return types.NullDatum
	case types.KindFloat64:
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return types.NullDatum
		}
		return types.DFloat64(f)
	case types.KindFloat32, types.KindNumeric:
		d, err := types.ParseText(string(raw), t, nil)
		if err != nil {
			return types.NullDatum
		}
		return d
	case types.KindTimestamp, types.KindTimestamptz:
		ms, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return types.NullDatum
		}
		if t.Kind == types.KindTimestamp {
			return types.DTimestamp(ms * 1000)
		}
		return types.DTimestamptz(ms * 1000)
	}
	return types.NullDatum
}

// parseObject parses a JSON object with p (valid until p's next parse);
// an error when the record is too large, not JSON, or not an object.
func parseObject(p *fastjson.Parser, b []byte) (*fastjson.Object, error) {
	if len(b) > maxRecordBytes {
		return nil, fmt.Errorf("record of %d bytes exceeds %d", len(b), maxRecordBytes)
	}
	v, err := p.ParseBytes(b)
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	obj, err := v.Object()
	if err != nil {
		return nil, errors.New("not a JSON object")
	}
	return obj, nil
}

// plainJSON: FORMAT PLAIN ENCODE JSON — each value is a JSON object, one
// inserted row.
// plainBytes is ENCODE BYTES: the whole value in one bytea column (a
// null value, a tombstone, is a NULL).
type plainBytes struct {
	rb  *rowBuilder
	col int
}

func (d *plainBytes) decode(r *kgo.Record, out *types.Chunk) error {
	row := d.rb.newRow(r)
	if r.Value != nil {
		row[d.col] = types.DBytea(r.Value) // copies
	}
	out.Append(types.OpInsert, row)
	return nil
}

type plainJSON struct {
	rb *rowBuilder
	p  fastjson.Parser
}

func (d *plainJSON) decode(r *kgo.Record, out *types.Chunk) error {
	obj, err := parseObject(&d.p, r.Value)
	if err != nil {
		return err
	}
	row := d.rb.newRow(r)
	d.rb.setJSON(row, obj)
	out.Append(types.OpInsert, row)
	return nil
}

// upsertJSON: FORMAT UPSERT ENCODE JSON — the value is the new row (an
// upsert by primary key); a null value deletes the row whose key is the
// record's key (a JSON object of the key columns, a bare key value for a
// one-column key, or the raw key when the key column is INCLUDE key).
type upsertJSON struct {
	rb *rowBuilder
	pk []int
	p  fastjson.Parser // the value
	kp fastjson.Parser // the key
}

func (d *upsertJSON) decode(r *kgo.Record, out *types.Chunk) error {
	if r.Value != nil {
		obj, err := parseObject(&d.p, r.Value)
		if err != nil {
			return err
		}
		row := d.rb.newRow(r)
		d.rb.setJSON(row, obj)
		d.keyFromRecord(r, row)
		out.Append(types.OpInsert, row)
		return nil
	}
	if r.Key == nil {
		return errors.New("upsert delete (null value) without a key")
	}
	row := d.rb.newRow(r)
	d.keyFromRecord(r, row)
	for _, k := range d.pk {
		if row[k].IsNull() {
			return fmt.Errorf("upsert delete: key %q lacks column %s", r.Key, d.rb.cols[k].Name)
		}
	}
	out.Append(types.OpDelete, row)
	return nil
}

// keyFromRecord fills key columns missing from row from the record key.
func (d *upsertJSON) keyFromRecord(r *kgo.Record, row types.Row) {
	if r.Key == nil {
		return
	}
	missing := false
	for _, k := range d.pk {
		if row[k].IsNull() {
			missing = true
		}
	}
	if !missing || len(r.Key) > maxRecordBytes {
		return
	}
	v, err := d.kp.ParseBytes(r.Key)
	if err == nil && v.Type() == fastjson.TypeObject {
		for _, k := range d.pk {
			if f := v.Get(d.rb.cols[k].Name); f != nil && row[k].IsNull() {
				row[k] = d.rb.jsonDatum(f, d.rb.cols[k].Type)
			}
		}
		return
	}
	if len(d.pk) == 1 && row[d.pk[0]].IsNull() {
		k := d.pk[0]
		if err == nil {
			row[k] = d.rb.jsonDatum(v, d.rb.cols[k].Type)
		}
		if row[k].IsNull() {
			if v, err := types.ParseText(string(r.Key), d.rb.cols[k].Type, nil); err == nil {
				row[k] = v
			}
		}
	}
}

// debeziumJSON: FORMAT DEBEZIUM ENCODE JSON — Debezium change events,
// with or without the schema envelope ({"payload": {...}}): op c/r
// inserts after, u replaces before by after, d deletes before. A null
// value (Kafka tombstone after a delete) is ignored.
type debeziumJSON struct {
	rb *rowBuilder
	p  fastjson.Parser
}

func (d *debeziumJSON) decode(r *kgo.Record, out *types.Chunk) error {
	if r.Value == nil {
		return nil
	}
	obj, err := parseObject(&d.p, r.Value)
	if err != nil {
		return err
	}
	if p := obj.Get("payload"); p != nil {
		if obj, err = p.Object(); err != nil {
			return errors.New("debezium payload: not a JSON object")
		}
	}
	opv := obj.Get("op")
	if opv == nil || opv.Type() != fastjson.TypeString {
		return errors.New("debezium event without op")
	}
	op := string(opv.GetStringBytes())
	image := func(field string) (types.Row, error) {
		v := obj.Get(field)
		if v == nil || v.Type() == fastjson.TypeNull {
			return nil, nil
		}
		o, err := v.Object()
		if err != nil {
			return nil, fmt.Errorf("debezium %s: not a JSON object", field)
		}
		row := d.rb.newRow(r)
		d.rb.setJSON(row, o)
		return row, nil
	}
	before, err := image("before")
	if err != nil {
		return err
	}
	after, err := image("after")
	if err != nil {
		return err
	}
	return appendDebezium(op, before, after, out)
}

// appendDebezium appends the changes of one Debezium event (JSON or Avro):
// c and r insert after, u replaces before by after (or upserts after by
// the table's key when the event has no before image), d deletes before.
func appendDebezium(op string, before, after types.Row, out *types.Chunk) error {
	switch op {
	case "c", "r":
		if after == nil {
			return fmt.Errorf("debezium op %q without after", op)
		}
		out.Append(types.OpInsert, after)
	case "u":
		if after == nil {
			return errors.New("debezium update without after")
		}
		if before != nil {
			out.Append(types.OpUpdateDelete, before)
			out.Append(types.OpUpdateInsert, after)
		} else {
			out.Append(types.OpInsert, after)
		}
	case "d":
		if before == nil {
			return errors.New("debezium delete without before")
		}
		out.Append(types.OpDelete, before)
	default:
		return fmt.Errorf("debezium op %q unknown", op)
	}
	return nil
}

// plainCSV: FORMAT PLAIN ENCODE CSV (delimiter, without_header) — each
// value is one CSV line; fields map to the payload columns in order, or,
// after a header line (when without_header is false), by the header's
// names. An empty field is NULL.
type plainCSV struct {
	rb            *rowBuilder
	delim         rune
	withoutHeader bool
	// headers maps a partition's header (once seen) to column indices per
	// field (-1: unknown column).
	headers map[int32][]int
}

func (d *plainCSV) decode(r *kgo.Record, out *types.Chunk) error {
	if len(r.Value) > maxRecordBytes {
		return fmt.Errorf("record of %d bytes exceeds %d", len(r.Value), maxRecordBytes)
	}
	cr := csv.NewReader(bytes.NewReader(r.Value))
	cr.Comma = d.delim
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	fields, err := cr.Read()
	if err != nil {
		return fmt.Errorf("invalid CSV: %v", err)
	}
	if !d.withoutHeader && d.isHeader(fields) {
		m := make([]int, len(fields))
		for j, f := range fields {
			m[j] = -1
			if i, ok := d.rb.byName[strings.ToLower(strings.TrimSpace(f))]; ok {
				m[j] = i
			}
		}
		d.headers[r.Partition] = m
		return nil
	}
	row := d.rb.newRow(r)
	m := d.headers[r.Partition]
	if m == nil {
		m = d.positional()
	}
	for j, f := range fields {
		if j >= len(m) || m[j] < 0 || f == "" {
			continue
		}
		i := m[j]
		if v, err := types.ParseText(f, d.rb.cols[i].Type, nil); err == nil {
			row[i] = v
		}
	}
	out.Append(types.OpInsert, row)
	return nil
}

// isHeader: every field names a payload column.
func (d *plainCSV) isHeader(fields []string) bool {
	for _, f := range fields {
		if _, ok := d.rb.byName[strings.ToLower(strings.TrimSpace(f))]; !ok {
			return false
		}
	}
	return len(fields) > 0
}

// positional maps fields to the payload columns in declaration order.
func (d *plainCSV) positional() []int {
	var m []int
	for i := range d.rb.cols {
		if !d.rb.isInclude(i) {
			m = append(m, i)
		}
	}
	return m
}
