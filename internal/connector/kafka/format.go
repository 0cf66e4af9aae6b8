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

// newDecoder builds the decoder of cfg's format for spec's columns.
func newDecoder(cfg *Config, spec connector.Spec) (decoder, error) {
	rb := &rowBuilder{cols: spec.Columns, include: cfg.Include, byName: map[string]int{}}
	for i, c := range spec.Columns {
		if !rb.isInclude(i) {
			rb.byName[strings.ToLower(c.Name)] = i
		}
	}
	switch cfg.Format + " " + cfg.Encode {
	case "plain json":
		return &plainJSON{rb}, nil
	case "upsert json":
		return &upsertJSON{rb: rb, pk: spec.PK}, nil
	case "debezium json":
		return &debeziumJSON{rb}, nil
	case "plain csv":
		return &plainCSV{rb: rb, delim: cfg.Delimiter, withoutHeader: cfg.WithoutHeader, headers: map[int32][]int{}}, nil
	case "plain protobuf":
		return newProtobuf(rb, cfg)
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
	row := make(types.Row, len(rb.cols))
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
// name, exact or case-insensitive). Absent fields stay NULL.
func (rb *rowBuilder) setJSON(row types.Row, obj map[string]json.RawMessage) {
	for k, raw := range obj {
		i, ok := rb.byName[k]
		if !ok {
			i, ok = rb.byName[strings.ToLower(k)]
			if !ok {
				continue
			}
		}
		row[i] = jsonDatum(raw, rb.cols[i].Type)
	}
}

// jsonDatum converts one JSON value to t; a value that does not fit is
// NULL. Strings are parsed as the type's text form (timestamps, numerics
// in strings); numbers fit numeric types; objects and arrays fit jsonb.
func jsonDatum(raw json.RawMessage, t types.Type) types.Datum {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == 'n' {
		return types.NullDatum
	}
	if t.Kind == types.KindJsonb {
		s, err := types.ParseJsonb(string(raw))
		if err != nil {
			return types.NullDatum
		}
		return types.DJsonb(s)
	}
	var text string
	switch raw[0] {
	case '"':
		if err := json.Unmarshal(raw, &text); err != nil {
			return types.NullDatum
		}
		if t.Kind == types.KindBytea {
			return types.DBytea([]byte(text))
		}
	case 't', 'f':
		if t.Kind != types.KindBool {
			return types.NullDatum
		}
		text = string(raw)
	case '{', '[':
		return types.NullDatum
	default: // a number
		switch t.Kind {
		case types.KindInt16, types.KindInt32, types.KindInt64, types.KindFloat32, types.KindFloat64, types.KindNumeric:
			text = string(raw)
			isInt := t.Kind == types.KindInt16 || t.Kind == types.KindInt32 || t.Kind == types.KindInt64
			if isInt && strings.ContainsAny(text, ".eE") {
				// 3.0 or 1e3 for an integer column: exact values only.
				f, err := strconv.ParseFloat(text, 64)
				if err != nil || f != float64(int64(f)) {
					return types.NullDatum
				}
				text = strconv.FormatInt(int64(f), 10)
			}
		case types.KindTimestamp, types.KindTimestamptz:
			// An epoch number: milliseconds, as RisingWave reads them.
			ms, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil {
				return types.NullDatum
			}
			if t.Kind == types.KindTimestamp {
				return types.DTimestamp(ms * 1000)
			}
			return types.DTimestamptz(ms * 1000)
		default:
			return types.NullDatum
		}
	}
	d, err := types.ParseText(text, t, nil)
	if err != nil {
		return types.NullDatum
	}
	return d
}

// decodeObject parses a JSON object; errMalformed when it is not one.
func decodeObject(b []byte) (map[string]json.RawMessage, error) {
	if len(b) > maxRecordBytes {
		return nil, fmt.Errorf("record of %d bytes exceeds %d", len(b), maxRecordBytes)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if obj == nil {
		return nil, errors.New("not a JSON object")
	}
	return obj, nil
}

// plainJSON: FORMAT PLAIN ENCODE JSON — each value is a JSON object, one
// inserted row.
type plainJSON struct{ rb *rowBuilder }

func (d *plainJSON) decode(r *kgo.Record, out *types.Chunk) error {
	obj, err := decodeObject(r.Value)
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
}

func (d *upsertJSON) decode(r *kgo.Record, out *types.Chunk) error {
	if r.Value != nil {
		obj, err := decodeObject(r.Value)
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
	if err := d.keyFromRecord(r, row); err != nil {
		return err
	}
	for _, k := range d.pk {
		if row[k].IsNull() {
			return fmt.Errorf("upsert delete: key %q lacks column %s", r.Key, d.rb.cols[k].Name)
		}
	}
	out.Append(types.OpDelete, row)
	return nil
}

// keyFromRecord fills key columns missing from row from the record key.
func (d *upsertJSON) keyFromRecord(r *kgo.Record, row types.Row) error {
	if r.Key == nil {
		return nil
	}
	missing := false
	for _, k := range d.pk {
		if row[k].IsNull() {
			missing = true
		}
	}
	if !missing {
		return nil
	}
	if obj, err := decodeObject(r.Key); err == nil {
		for _, k := range d.pk {
			if raw, ok := obj[d.rb.cols[k].Name]; ok && row[k].IsNull() {
				row[k] = jsonDatum(raw, d.rb.cols[k].Type)
			}
		}
		return nil
	}
	if len(d.pk) == 1 && row[d.pk[0]].IsNull() {
		k := d.pk[0]
		row[k] = jsonDatum(json.RawMessage(r.Key), d.rb.cols[k].Type)
		if row[k].IsNull() {
			if v, err := types.ParseText(string(r.Key), d.rb.cols[k].Type, nil); err == nil {
				row[k] = v
			}
		}
	}
	return nil
}

// debeziumJSON: FORMAT DEBEZIUM ENCODE JSON — Debezium change events,
// with or without the schema envelope ({"payload": {...}}): op c/r
// inserts after, u replaces before by after, d deletes before. A null
// value (Kafka tombstone after a delete) is ignored.
type debeziumJSON struct{ rb *rowBuilder }

func (d *debeziumJSON) decode(r *kgo.Record, out *types.Chunk) error {
	if r.Value == nil {
		return nil
	}
	obj, err := decodeObject(r.Value)
	if err != nil {
		return err
	}
	if p, ok := obj["payload"]; ok {
		if obj, err = decodeObject(p); err != nil {
			return fmt.Errorf("debezium payload: %v", err)
		}
	}
	var op string
	if err := json.Unmarshal(obj["op"], &op); err != nil {
		return errors.New("debezium event without op")
	}
	image := func(field string) (types.Row, error) {
		raw := bytes.TrimSpace(obj[field])
		if len(raw) == 0 || raw[0] == 'n' {
			return nil, nil
		}
		o, err := decodeObject(raw)
		if err != nil {
			return nil, fmt.Errorf("debezium %s: %v", field, err)
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
