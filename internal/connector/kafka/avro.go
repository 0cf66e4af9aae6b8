package kafka

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/runneldb/runnel/internal/connector"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// FORMAT PLAIN ENCODE AVRO, in RisingWave's two forms:
//
//	ENCODE AVRO (schema.registry = 'http://host:8081')
//	ENCODE AVRO (schema.location = 'file:///path/schema.avsc')
//
// With a schema registry (Confluent's REST API; franz-go's sr client) each
// record value is in Confluent's wire format: a zero byte, the writer
// schema's 4-byte id, the Avro binary. The writer schema is fetched by id
// (and cached), so records written with any registered version decode; the
// columns of a source declared without any come from the subject
// <topic>-value's latest version at CREATE (RisingWave's topic name
// strategy). With a schema file each value is the bare Avro binary of that
// one schema.
//
// Fields map to columns by name (exact, then case-insensitive); a value
// that does not fit its column is NULL, a record that does not decode is
// skipped and counted (I9). Types (RisingWave's mapping where Runnel has
// the type):
//
//	boolean → boolean        int → int            long → bigint
//	float → real             double → double precision
//	string, enum → varchar   bytes, fixed → bytea
//	decimal → numeric        uuid → varchar
//	date → date              time-millis, time-micros → time
//	timestamp-millis, timestamp-micros → timestamptz
//	local-timestamp-millis, local-timestamp-micros → timestamp
//	array of a scalar → an array of its type
//	record, map, other arrays, unions of several types → jsonb
//	["null", T] → T (nullable)

// avroFetchTimeout bounds one schema registry request.
const avroFetchTimeout = 10 * time.Second

// maxAvroSchemaBytes bounds a schema file read (I9).
const maxAvroSchemaBytes = 16 << 20

// avroSchemas resolves writer schemas: by id from a registry, or the one
// schema of a file.
type avroSchemas struct {
	client *sr.Client // nil: a schema file
	file   avro.Schema
	mu     sync.Mutex
	byID   map[int]avro.Schema
}

func newAvroSchemas(cfg *Config) (*avroSchemas, error) {
	if cfg.AvroRegistry != "" {
		u, err := url.Parse(cfg.AvroRegistry)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, badOption("schema.registry", "%q is not an http(s) URL", cfg.AvroRegistry)
		}
		var urls []string
		for _, s := range strings.Split(cfg.AvroRegistry, ",") {
			urls = append(urls, strings.TrimSpace(s))
		}
		opts := []sr.ClientOpt{sr.URLs(urls...)}
		if cfg.AvroRegistryUser != "" {
			opts = append(opts, sr.BasicAuth(cfg.AvroRegistryUser, cfg.AvroRegistryPassword))
		}
		cl, err := sr.NewClient(opts...)
		if err != nil {
			return nil, badOption("schema.registry", "%v", err)
		}
		return &avroSchemas{client: cl, byID: map[int]avro.Schema{}}, nil
	}
	b, path, err := readSchemaLocation("AVRO", cfg.AvroLocation, maxAvroSchemaBytes)
	if err != nil {
		return nil, err
	}
	s, err := parseAvroRecord(string(b))
	if err != nil {
		return nil, badOption("schema.location", "%s: %v", path, err)
	}
	return &avroSchemas{file: s}, nil
}

// parseAvro parses a schema, refusing a recursive one (a record that
// contains itself): decoding its values recurses as deep as a record's
// bytes nest, and 16 MB of one-byte levels would overflow the Go stack —
// a fatal error no recover() catches (I9).
func parseAvro(text string) (avro.Schema, error) {
	s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{}) // a private cache: versions of one record name differ
	if err != nil {
		return nil, err
	}
	if name := recursiveAvro(s, map[string]bool{}); name != "" {
		return nil, fmt.Errorf("record %s contains itself: recursive schemas are not supported", name)
	}
	return s, nil
}

// recursiveAvro is the name of a record that refers to itself, directly
// or through others, in s ("" when none); open holds the records being
// walked.
func recursiveAvro(s avro.Schema, open map[string]bool) string {
	switch t := s.(type) {
	case *avro.RefSchema:
		if open[t.Schema().FullName()] {
			return t.Schema().FullName()
		}
		return recursiveAvro(t.Schema(), open)
	case *avro.RecordSchema:
		name := t.FullName()
		if open[name] {
			return name
		}
		open[name] = true
		defer delete(open, name)
		for _, f := range t.Fields() {
			if n := recursiveAvro(f.Type(), open); n != "" {
				return n
			}
		}
	case *avro.UnionSchema:
		for _, b := range t.Types() {
			if n := recursiveAvro(b, open); n != "" {
				return n
			}
		}
	case *avro.ArraySchema:
		return recursiveAvro(t.Items(), open)
	case *avro.MapSchema:
		return recursiveAvro(t.Values(), open)
	}
	return ""
}

// parseAvroRecord parses a schema that must be a record (a row).
func parseAvroRecord(text string) (*avro.RecordSchema, error) {
	s, err := parseAvro(text)
	if err != nil {
		return nil, err
	}
	rs, ok := s.(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("the schema is a %s, not a record", s.Type())
	}
	return rs, nil
}

// latest is the subject's latest schema (the columns of a source declared
// without any).
func (a *avroSchemas) latest(ctx context.Context, subject string) (*avro.RecordSchema, error) {
	if a.client == nil {
		return a.file.(*avro.RecordSchema), nil
	}
	ctx, cancel := context.WithTimeout(ctx, avroFetchTimeout)
	defer cancel()
	ss, err := a.client.SchemaByVersion(ctx, subject, -1)
	if err != nil {
		return nil, sqlerr.Errorf(sqlerr.ConnectionException, "kafka ENCODE AVRO: schema registry: latest schema of subject %q: %v", subject, err)
	}
	if ss.Type != sr.TypeAvro {
		return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "kafka ENCODE AVRO: subject %q holds a %s schema", subject, ss.Type)
	}
	rs, err := parseAvroRecord(ss.Schema.Schema)
	if err != nil {
		return nil, badOption("schema.registry", "subject %q: %v", subject, err)
	}
	return rs, nil
}

// byWriterIDAny is the writer schema of id (fetched once): a record for
// a value, possibly a primitive for a key.
func (a *avroSchemas) byWriterIDAny(id int) (avro.Schema, error) {
	a.mu.Lock()
	s := a.byID[id]
	a.mu.Unlock()
	if s != nil {
		return s, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), avroFetchTimeout)
	defer cancel()
	sch, err := a.client.SchemaByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("schema registry: schema id %d: %v", id, err)
	}
	if sch.Type != sr.TypeAvro {
		return nil, fmt.Errorf("schema id %d is a %s schema", id, sch.Type)
	}
	if s, err = parseAvro(sch.Schema); err != nil {
		return nil, fmt.Errorf("schema id %d: %v", id, err)
	}
	a.mu.Lock()
	a.byID[id] = s
	a.mu.Unlock()
	return s, nil
}

// AvroColumns are the columns of a source or table with ENCODE AVRO and
// no declared columns: one per field of the (latest) schema.
func avroColumns(cfg *Config) ([]connector.Column, error) {
	as, err := newAvroSchemas(cfg)
	if err != nil {
		return nil, err
	}
	rs, err := as.latest(context.Background(), cfg.Topic+"-value")
	if err != nil {
		return nil, err
	}
	var cols []connector.Column
	for _, f := range rs.Fields() {
		cols = append(cols, connector.Column{Name: f.Name(), Type: avroColumnType(f.Type())})
	}
	return cols, nil
}

// avroColumnType is the column type of a field schema.
func avroColumnType(s avro.Schema) types.Type {
	s = deref(s)
	if u, ok := s.(*avro.UnionSchema); ok {
		if u.Nullable() {
			for _, t := range u.Types() {
				if t.Type() != avro.Null {
					return avroColumnType(t)
				}
			}
		}
		return types.Jsonb
	}
	if ls, ok := s.(avro.LogicalTypeSchema); ok && ls.Logical() != nil {
		switch ls.Logical().Type() {
		case avro.Decimal:
			return types.Numeric
		case avro.UUID:
			return types.Varchar
		case avro.Date:
			return types.Date
		case avro.TimeMillis, avro.TimeMicros:
			return types.Time
		case avro.TimestampMillis, avro.TimestampMicros:
			return types.Timestamptz
		case avro.LocalTimestampMillis, avro.LocalTimestampMicros:
			return types.Timestamp
		}
	}
	switch s.Type() {
	case avro.Boolean:
		return types.Bool
	case avro.Int:
		return types.Int32
	case avro.Long:
		return types.Int64
	case avro.Float:
		return types.Float32
	case avro.Double:
		return types.Float64
	case avro.String, avro.Enum:
		return types.Varchar
	case avro.Bytes, avro.Fixed:
		return types.Bytea
	case avro.Array:
		et := avroColumnType(s.(*avro.ArraySchema).Items())
		if et.Kind != types.KindJsonb && !et.IsArray() && et.CanBeArrayElem() {
			return types.ArrayOf(et)
		}
	}
	return types.Jsonb
}

// plainAvro decodes FORMAT PLAIN ENCODE AVRO records.
type plainAvro struct {
	rb      *rowBuilder
	schemas *avroSchemas
	pk      []int // the table's key (UPSERT; a primitive key's column)
}

func newAvro(rb *rowBuilder, cfg *Config, pk []int) (decoder, error) {
	as, err := newAvroSchemas(cfg)
	if err != nil {
		return nil, err
	}
	d := plainAvro{rb: rb, schemas: as, pk: pk}
	switch cfg.Format {
	case "upsert":
		return &upsertAvro{d}, nil
	case "debezium":
		return &debeziumAvro{d}, nil
	}
	return &d, nil
}

func (d *plainAvro) decode(r *kgo.Record, out *types.Chunk) error {
	if r.Value == nil {
		return fmt.Errorf("record without a value")
	}
	row := d.rb.newRow(r)
	if err := d.fill(r.Value, row, false); err != nil {
		return err
	}
	out.Append(types.OpInsert, row)
	return nil
}

// fill decodes an Avro body (framed when a registry is used) into row's
// columns by field name; onlyEmpty leaves columns that are set alone.
func (d *plainAvro) fill(b []byte, row types.Row, onlyEmpty bool) (err error) {
	// I9: the Avro runtime sees outside input; nothing it does with it
	// may end the process.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("avro: %v", p)
		}
	}()
	if len(b) > maxRecordBytes {
		return fmt.Errorf("record of %d bytes exceeds %d", len(b), maxRecordBytes)
	}
	schema, b, err := d.writer(b)
	if err != nil {
		return err
	}
	rs, isRecord := schema.(*avro.RecordSchema)
	if !isRecord {
		// A key of one primitive value: the table's one-column key.
		var v any
		if err := avro.Unmarshal(schema, b, &v); err != nil {
			return fmt.Errorf("invalid avro %s: %v", schema.Type(), err)
		}
		if len(d.pk) == 1 && (!onlyEmpty || row[d.pk[0]].IsNull()) {
			row[d.pk[0]] = avroDatum(v, schema, d.rb.cols[d.pk[0]].Type)
		}
		return nil
	}
	var v map[string]any
	if err := avro.Unmarshal(rs, b, &v); err != nil {
		return fmt.Errorf("invalid avro %s: %v", rs.FullName(), err)
	}
	d.setRecord(v, rs, row, onlyEmpty)
	return nil
}

// writer is the writer schema of an Avro body and the body without the
// registry's framing.
func (d *plainAvro) writer(b []byte) (avro.Schema, []byte, error) {
	if d.schemas.client == nil {
		return d.schemas.file, b, nil
	}
	if len(b) < 5 || b[0] != 0 {
		return nil, nil, fmt.Errorf("not in the schema registry's wire format (magic byte 0 and a schema id)")
	}
	schema, err := d.schemas.byWriterIDAny(int(binary.BigEndian.Uint32(b[1:5])))
	return schema, b[5:], err
}

// setRecord sets row's columns from a decoded record's fields, by name.
func (d *plainAvro) setRecord(v map[string]any, rs *avro.RecordSchema, row types.Row, onlyEmpty bool) {
	for _, f := range rs.Fields() {
		j, ok := d.rb.byName[f.Name()]
		if !ok {
			j, ok = d.rb.byName[strings.ToLower(f.Name())]
		}
		if !ok || onlyEmpty && !row[j].IsNull() {
			continue
		}
		row[j] = avroDatum(v[f.Name()], f.Type(), d.rb.cols[j].Type)
	}
}

// upsertAvro: FORMAT UPSERT ENCODE AVRO — the value is the new row (an
// upsert by primary key); a null value deletes the row whose key is the
// record's key: an INCLUDE key column (RisingWave's form: PRIMARY KEY
// (rw_key) over INCLUDE KEY AS rw_key), or the key's Avro fields by name
// (a primitive key for a one-column key).
type upsertAvro struct{ plainAvro }

func (d *upsertAvro) decode(r *kgo.Record, out *types.Chunk) error {
	row := d.rb.newRow(r)
	if r.Value != nil {
		if err := d.fill(r.Value, row, false); err != nil {
			return err
		}
		if err := d.keyFromRecord(r, row); err != nil {
			return err
		}
		out.Append(types.OpInsert, row)
		return nil
	}
	if r.Key == nil {
		return errors.New("upsert delete (null value) without a key")
	}
	if err := d.keyFromRecord(r, row); err != nil {
		return err
	}
	for _, k := range d.pk {
		if row[k].IsNull() {
			return fmt.Errorf("upsert delete: the key lacks column %s", d.rb.cols[k].Name)
		}
	}
	out.Append(types.OpDelete, row)
	return nil
}

// keyFromRecord fills key columns still NULL from the Avro record key.
func (d *upsertAvro) keyFromRecord(r *kgo.Record, row types.Row) error {
	missing := false
	for _, k := range d.pk {
		missing = missing || row[k].IsNull()
	}
	if !missing || r.Key == nil || d.schemas.client == nil {
		return nil // with a schema file the key's schema is unknown
	}
	return d.fill(r.Key, row, true)
}

// avroDatum converts a generically decoded Avro value of schema s to a
// column of type t; NULL when it does not fit.
func avroDatum(v any, s avro.Schema, t types.Type) types.Datum {
	s = deref(s)
	if v == nil {
		return types.NullDatum
	}
	if _, ok := s.(*avro.UnionSchema); ok {
		if inner, branch := unwrapUnion(v, s); branch != s {
			return avroDatum(inner, branch, t)
		}
	}
	if t.Kind == types.KindJsonb {
		b, err := json.Marshal(avroJSON(v))
		if err != nil {
			return types.NullDatum
		}
		if j, err := types.ParseJsonb(string(b)); err == nil {
			return types.DJsonb(j)
		}
		return types.NullDatum
	}
	if t.IsArray() {
		items, ok := v.([]any)
		as, isArr := s.(*avro.ArraySchema)
		if !ok || !isArr || len(items) > types.MaxArrayElems {
			return types.NullDatum
		}
		et := t.ElemType()
		elems := make([]types.Datum, len(items))
		for i, it := range items {
			elems[i] = avroDatum(it, as.Items(), et)
		}
		return types.DArray(et.Kind, elems)
	}
	var text string
	switch x := v.(type) {
	case []byte:
		if t.Kind == types.KindBytea {
			return types.DBytea(x)
		}
		text = string(x)
	case time.Time:
		switch t.Kind {
		case types.KindTimestamptz:
			return types.DTimestamptz(x.UnixMicro())
		case types.KindDate:
			text = x.UTC().Format("2006-01-02")
		default:
			text = x.UTC().Format("2006-01-02 15:04:05.999999")
		}
	case time.Duration:
		text = fmt.Sprintf("%02d:%02d:%02d.%06d", int64(x/time.Hour), int64(x/time.Minute)%60, int64(x/time.Second)%60, int64(x/time.Microsecond)%1_000_000)
	case *big.Rat:
		scale := 18
		if ls, ok := s.(avro.LogicalTypeSchema); ok {
			if d, ok := ls.Logical().(*avro.DecimalLogicalSchema); ok {
				scale = d.Scale()
			}
		}
		text = x.FloatString(scale)
	case map[string]any, []any:
		return types.NullDatum // a composite value in a scalar column
	default:
		text = fmt.Sprint(x)
	}
	d, err := types.ParseText(text, t, nil)
	if err != nil {
		return types.NullDatum
	}
	return d
}

// avroBranchName is how a generic union decode names a branch.
func avroBranchName(s avro.Schema) string {
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	if ls, ok := s.(avro.LogicalTypeSchema); ok && ls.Logical() != nil {
		return string(s.Type()) + "." + string(ls.Logical().Type())
	}
	return string(s.Type())
}

// avroJSON makes a decoded value JSON-marshalable as a reader expects:
// bytes as text, times in RFC 3339, decimals as numbers.
func avroJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = avroJSON(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = avroJSON(e)
		}
		return a
	case []byte:
		return string(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case time.Duration:
		return x.String()
	case *big.Rat:
		return json.Number(x.FloatString(18))
	}
	return v
}

// unwrapUnion is the value of a union-typed field and its branch's schema:
// a union decodes to its branch's value, or to a one-entry map {branch
// name: value} for a branch the decoder cannot name (a record). s itself
// comes back when the branch cannot be told.
func unwrapUnion(v any, s avro.Schema) (any, avro.Schema) {
	u, ok := s.(*avro.UnionSchema)
	if !ok || v == nil {
		return v, s
	}
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for name, inner := range m {
			for _, b := range u.Types() {
				if b = deref(b); avroBranchName(b) == name {
					return inner, b
				}
			}
		}
	}
	if u.Nullable() {
		for _, b := range u.Types() {
			if b.Type() != avro.Null {
				return v, deref(b)
			}
		}
	}
	return v, s
}

// deref is the schema a reference to a named type (a record defined
// earlier in the same schema) stands for.
func deref(s avro.Schema) avro.Schema {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

// debeziumAvro: FORMAT DEBEZIUM ENCODE AVRO — Debezium change events
// written by its Avro converter (Confluent wire format): an envelope
// record whose before and after fields are the row (nullable), and op:
// c or r inserts after, u replaces before by after, d deletes before. A
// null value (the tombstone after a delete) is ignored.
type debeziumAvro struct{ plainAvro }

func (d *debeziumAvro) decode(r *kgo.Record, out *types.Chunk) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("avro: %v", p)
		}
	}()
	if r.Value == nil {
		return nil // a tombstone
	}
	if len(r.Value) > maxRecordBytes {
		return fmt.Errorf("record of %d bytes exceeds %d", len(r.Value), maxRecordBytes)
	}
	schema, body, err := d.writer(r.Value)
	if err != nil {
		return err
	}
	env, ok := schema.(*avro.RecordSchema)
	if !ok {
		return fmt.Errorf("a debezium event is a record, not a %s", schema.Type())
	}
	var v map[string]any
	if err := avro.Unmarshal(env, body, &v); err != nil {
		return fmt.Errorf("invalid avro %s: %v", env.FullName(), err)
	}
	image := func(field string) (types.Row, error) {
		var fs avro.Schema
		for _, f := range env.Fields() {
			if f.Name() == field {
				fs = f.Type()
			}
		}
		if fs == nil {
			return nil, fmt.Errorf("debezium event without %q", field)
		}
		inner, branch := unwrapUnion(v[field], fs)
		rs, ok := branch.(*avro.RecordSchema)
		m, isMap := inner.(map[string]any)
		if inner == nil || !ok || !isMap {
			return nil, nil
		}
		row := d.rb.newRow(r)
		d.setRecord(m, rs, row, false)
		return row, nil
	}
	op, _ := v["op"].(string)
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
