// Package file is the sink connector writing files: "s3" into an
// S3-compatible bucket (minio-go, through internal/objstore) and "fs"
// (also "file") into a local directory, in RisingWave's dialect:
//
//	CREATE SINK s FROM mv WITH (connector = 's3', s3.region_name = 'us-east-1',
//	    s3.bucket_name = 'b', s3.path = 'out/orders', s3.credentials.access = '...',
//	    s3.credentials.secret = '...', s3.endpoint_url = 'http://host:9000',
//	    type = 'append-only', force_append_only = 'true') FORMAT PLAIN ENCODE PARQUET
//	CREATE SINK s FROM mv WITH (connector = 'fs', fs.path = '/data/out',
//	    type = 'append-only') FORMAT PLAIN ENCODE JSON
//
// A file sink is append-only: its files hold the inserted rows (with
// force_append_only, a query's deletes are dropped and its updates become
// inserts upstream, in the Sink executor). ENCODE PARQUET writes Parquet
// (apache/arrow-go, Snappy, row groups of up to 65536 rows; column types
// below); ENCODE JSON writes one JSON object per line, as the kafka sink
// renders a row.
//
// Delivery: one file per delivered epoch that inserted rows, named
//
//	[<s3.path | fs.path>/][<partition>/]<epoch, 20 digits>_<sink id>.parquet | .json
//
// where the partition is derived from the wall-clock milliseconds every
// epoch carries (epoch >> 16, UTC) by path_partition_prefix: 'none' (the
// default), 'month' (2026-12/), 'day' (2026-12-03/) or 'hour'
// (2026-12-03/14/). The worker hands a Txn one epoch; Commit encodes the
// whole file in memory and writes it with one atomic Put (S3: a single
// PUT, or a multipart upload that S3 publishes at completion; fs: a temp
// file, fsync, rename, directory fsync), so no partial file is ever
// visible.
//
// max_row_count = 'N' (RisingWave's option name) splits an epoch of more
// than N rows into files of N rows, named <epoch>_<sink id>_<part>.ext for
// the parts after the first (part 0 keeps the plain name). Each part is
// written when it fills, so a reader may see the first parts of a large
// epoch before the rest; what the parts hold is still a function of the
// epoch alone (below).
//
// rollover_seconds = 'S' (RisingWave's option) makes a file span epochs:
// it holds the rows of every epoch whose time (the wall clock an epoch
// carries) is less than S seconds past its first epoch's, is named by
// that first epoch, and is written (with one atomic Put, like any file)
// when an epoch S seconds past the first commits, with rows or not; parts
// split by max_row_count as above. Until then its rows wait in memory
// (so S bounds the memory a sink holds as much as its rate does), and
// the target is a sink.Buffered: the worker keeps those epochs in the
// log store, counted in the backlog, until the file is written, and
// releases the truncation of all of a file's epochs at once.
//
// Exactly once (I8, and I7 for what a reader of the files sees): the name
// is a function of the epoch alone (the first epoch of the file), and the
// rows of an epoch in the sink's log store never change once committed.
// An epoch delivered and not yet truncated from the log when Runnel dies
// is delivered again after the restart, and that second Put overwrites the
// same object with the same rows: a crash can repeat a write, never a row.
// With rollover_seconds, what a file holds is a function of its first
// epoch too (the epochs within S seconds of it), and the log keeps a
// written file's epochs all or none, so after a crash the worker hands
// the target the same first epoch and the same epochs after it. The
// target keeps no progress record, so Open reports 0. Two sinks may share
// a path (the sink id is in the name); a sink dropped and created again
// backfills again under its new id.
//
// Parquet column types: boolean → BOOLEAN; smallint, integer, bigint →
// INT16, INT32, INT64; real, double precision → FLOAT, DOUBLE; bytea →
// BINARY; date → DATE (±infinity as the int32 extremes, as PostgreSQL's
// binary format); time → TIME(µs); timestamp → TIMESTAMP(µs);
// timestamptz → TIMESTAMP(µs, UTC); numeric, text, varchar, interval,
// jsonb, uuid → STRING holding PostgreSQL's text form.
package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/sink"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

func init() {
	known := func(k string) bool {
		switch k {
		case "s3.bucket_name", "s3.region_name", "s3.credentials.access", "s3.credentials.secret", "s3.endpoint_url",
			"s3.path", "fs.path", "max_row_count", "path_partition_prefix", "rollover_seconds":
			return true
		}
		return false
	}
	sink.Register("s3", sink.Connector{New: New, NeedsFormat: true, Known: known})
	sink.Register("fs", sink.Connector{New: New, NeedsFormat: true, Known: known})
	sink.Register("file", sink.Connector{New: New, NeedsFormat: true, Known: known})
}

// rowGroupRows bounds a Parquet row group: 65536 rows keep a group's
// column chunks in the hundreds of KB for typical rows (readers skip by
// group), and an epoch of a few thousand rows stays one group.
const rowGroupRows = 1 << 16

// openTimeout bounds Open's reachability check.
const openTimeout = 10 * time.Second

type target struct {
	cfg       *sink.Config
	s3        *objstore.S3Config // nil: a local directory
	dir       string             // fs.path
	encode    string             // PARQUET or JSON
	partition string             // none, month, day, hour
	schema    *arrow.Schema
	all       []int // every column (ENCODE JSON)
	// maxRows is max_row_count: the most rows in one file (0: no bound).
	maxRows int
	// rollover is rollover_seconds in milliseconds: a file holds the
	// epochs whose times fall within it of its first (0: one epoch).
	rollover uint64

	store objstore.Store // set by Open
	// open is the file being built (nil: none); handed is the last epoch
	// committed into it or written; broken: a delivery failed, nothing
	// more is taken until Open.
	open   *group
	handed uint64
	broken bool
}

// rolloverTarget is a target with rollover_seconds: its files span
// epochs, so it is a sink.Buffered (see the package comment).
type rolloverTarget struct{ *target }

// New checks a file sink's options (it does not connect).
func New(cfg *sink.Config) (sink.Target, error) {
	o := cfg.Options
	bad := func(format string, args ...any) error {
		return sqlerr.Errorf(sqlerr.InvalidParameterValue, "sink %q: "+format, append([]any{cfg.Name}, args...)...)
	}
	t := &target{cfg: cfg, encode: cfg.Encode, partition: strings.ToLower(o["path_partition_prefix"])}
	if cfg.Upsert() {
		return nil, bad("a %s sink is append-only: type = 'append-only' (with force_append_only = 'true' for a query that updates or deletes)", o["connector"])
	}
	if cfg.Format != "PLAIN" {
		return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "sink %q: FORMAT %s is not supported by a %s sink (FORMAT PLAIN)", cfg.Name, cfg.Format, o["connector"])
	}
	switch t.encode {
	case "PARQUET", "JSON":
	default:
		return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "sink %q: ENCODE %s is not supported by a %s sink (ENCODE PARQUET or JSON)", cfg.Name, t.encode, o["connector"])
	}
	switch t.partition {
	case "":
		t.partition = "none"
	case "none", "month", "day", "hour":
	default:
		return nil, bad("path_partition_prefix must be 'none', 'month', 'day' or 'hour', not %q", o["path_partition_prefix"])
	}
	if v, ok := o["rollover_seconds"]; ok {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n == 0 {
			return nil, bad("rollover_seconds must be a positive integer, not %q", v)
		}
		t.rollover = n * 1000
	}
	if v, ok := o["max_row_count"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return nil, bad("max_row_count must be a positive integer, not %q", v)
		}
		t.maxRows = n
	}
	if strings.ToLower(o["connector"]) == "s3" {
		c := &objstore.S3Config{Bucket: o["s3.bucket_name"], Region: o["s3.region_name"],
			AccessKey: o["s3.credentials.access"], SecretKey: o["s3.credentials.secret"], Secure: true}
		if c.Bucket == "" {
			return nil, bad("s3.bucket_name is required")
		}
		if c.Region == "" {
			return nil, bad("s3.region_name is required")
		}
		if ep := o["s3.endpoint_url"]; ep != "" {
			u, err := url.Parse(ep)
			if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || (u.Path != "" && u.Path != "/") {
				return nil, bad("s3.endpoint_url must be http(s)://host[:port], not %q", ep)
			}
			c.Endpoint, c.Secure = u.Host, u.Scheme == "https"
		}
		c.Prefix = strings.Trim(o["s3.path"], "/")
		if c.Prefix != "" {
			if err := objstore.ValidateKey(c.Prefix); err != nil {
				return nil, bad("invalid s3.path %q: %v", o["s3.path"], err)
			}
		}
		t.s3 = c
	} else {
		t.dir = o["fs.path"]
		if t.dir == "" {
			return nil, bad("fs.path is required (the directory the files go to)")
		}
	}
	fields := make([]arrow.Field, len(cfg.Columns))
	for i, c := range cfg.Columns {
		fields[i] = arrow.Field{Name: c.Name, Type: arrowType(c.Type), Nullable: true}
	}
	t.schema = arrow.NewSchema(fields, nil)
	t.all = sink.AllColumns(len(cfg.Columns))
	if t.rollover > 0 {
		return rolloverTarget{t}, nil
	}
	return t, nil
}

// arrowType maps a column type to its Arrow (and so Parquet) type; see
// the package comment.
func arrowType(ty types.Type) arrow.DataType {
	switch ty.Kind {
	case types.KindBool:
		return arrow.FixedWidthTypes.Boolean
	case types.KindInt16:
		return arrow.PrimitiveTypes.Int16
	case types.KindInt32:
		return arrow.PrimitiveTypes.Int32
	case types.KindInt64:
		return arrow.PrimitiveTypes.Int64
	case types.KindFloat32:
		return arrow.PrimitiveTypes.Float32
	case types.KindFloat64:
		return arrow.PrimitiveTypes.Float64
	case types.KindBytea:
		return arrow.BinaryTypes.Binary
	case types.KindDate:
		return arrow.FixedWidthTypes.Date32
	case types.KindTime:
		return arrow.FixedWidthTypes.Time64us
	case types.KindTimestamp:
		return &arrow.TimestampType{Unit: arrow.Microsecond}
	case types.KindTimestamptz:
		return arrow.FixedWidthTypes.Timestamp_us // UTC
	}
	return arrow.BinaryTypes.String
}

// appendDatum appends d (of type ty) to the builder made for arrowType(ty).
func appendDatum(b array.Builder, d types.Datum, ty types.Type) {
	if d.IsNull() {
		b.AppendNull()
		return
	}
	switch ty.Kind {
	case types.KindBool:
		b.(*array.BooleanBuilder).Append(d.Bool())
	case types.KindInt16:
		b.(*array.Int16Builder).Append(int16(d.Int()))
	case types.KindInt32:
		b.(*array.Int32Builder).Append(int32(d.Int()))
	case types.KindInt64:
		b.(*array.Int64Builder).Append(d.Int())
	case types.KindFloat32:
		b.(*array.Float32Builder).Append(float32(d.Float()))
	case types.KindFloat64:
		b.(*array.Float64Builder).Append(d.Float())
	case types.KindBytea:
		b.(*array.BinaryBuilder).Append(d.Bytes())
	case types.KindDate:
		// Days since 1970; ±infinity (the int64 extremes) clamp to the
		// int32 extremes, which no finite date reaches.
		b.(*array.Date32Builder).Append(arrow.Date32(max(min(d.Int(), math.MaxInt32), math.MinInt32)))
	case types.KindTime:
		b.(*array.Time64Builder).Append(arrow.Time64(d.Int()))
	case types.KindTimestamp, types.KindTimestamptz:
		b.(*array.TimestampBuilder).Append(arrow.Timestamp(d.Int()))
	default:
		b.(*array.StringBuilder).Append(types.FormatText(d, ty, nil))
	}
}

// Open implements sink.Target: it checks that the bucket (or directory)
// is there and reachable; it writes nothing. A local directory is created
// if missing, and temp files a crash left of this sink's Puts are removed.
func (t *target) Open(ctx context.Context) (uint64, error) {
	t.drop()
	t.broken = false
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	if t.s3 != nil {
		st, err := objstore.NewS3(*t.s3)
		if err != nil {
			return 0, fmt.Errorf("sink %s: %w", t.cfg.Name, err)
		}
		// A Stat of a key that does not exist answers "not found" only
		// when the endpoint, credentials and bucket are right.
		if _, err := st.Stat(ctx, "runnel-sink-check"); err != nil && !errors.Is(err, objstore.ErrNotFound) {
			return 0, fmt.Errorf("sink %s: bucket %s at %s: %w", t.cfg.Name, t.s3.Bucket, t.s3.Endpoint, err)
		}
		t.store = st
		return 0, nil
	}
	st, err := objstore.NewLocal(t.dir)
	if err != nil {
		return 0, fmt.Errorf("sink %s: %w", t.cfg.Name, err)
	}
	suffix := fmt.Sprintf("_%d.%s-", t.cfg.ID, t.ext())
	_ = filepath.WalkDir(st.Root(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), ".tmp-") && strings.Contains(d.Name(), suffix) {
			_ = os.Remove(p)
		}
		return nil
	})
	t.store = st
	return 0, nil
}

// Close implements sink.Target: a file being built is dropped.
func (t *target) Close() error {
	t.drop()
	t.store = nil
	return nil
}

// Durable implements sink.Buffered: every epoch handed before the open
// file's first is in a written file.
func (t rolloverTarget) Durable() uint64 {
	if t.open != nil {
		return t.open.first - 1
	}
	return t.handed
}

// Advance implements sink.Buffered: the open file is written once the
// committed epoch's time is rollover_seconds past its first epoch's.
// Every epoch with rows up to committed is in it by then, and every
// later one is later still, so what the file holds depends on its first
// epoch alone, as after a crash, when the worker hands the target the
// same epochs again from the log (I8).
func (t rolloverTarget) Advance(ctx context.Context, committed uint64) error {
	if t.broken {
		return errBroken
	}
	if t.open != nil && !t.within(committed) {
		return t.put(ctx, true)
	}
	return nil
}

// within reports whether epoch belongs in the open file (by its time).
func (t *target) within(epoch uint64) bool {
	return epoch>>16 < t.open.first>>16+t.rollover
}

// errBroken: a delivery failed; the worker opens the target again.
var errBroken = errors.New("an earlier delivery failed; the target must be opened again")

func (t *target) ext() string {
	if t.encode == "JSON" {
		return "json"
	}
	return "parquet"
}

// Key returns the object key (relative to s3.path or fs.path) of an
// epoch's file for the sink with the given id: see the package comment.
func Key(partition string, epoch, sinkID uint64, ext string) string {
	return PartKey(partition, epoch, sinkID, 0, ext)
}

// PartKey is Key for part n of an epoch split by max_row_count.
func PartKey(partition string, epoch, sinkID uint64, part int, ext string) string {
	name := fmt.Sprintf("%020d_%d.%s", epoch, sinkID, ext)
	if part > 0 {
		name = fmt.Sprintf("%020d_%d_%d.%s", epoch, sinkID, part, ext)
	}
	at := time.UnixMilli(int64(epoch >> 16)).UTC()
	switch partition {
	case "month":
		return at.Format("2006-01") + "/" + name
	case "day":
		return at.Format("2006-01-02") + "/" + name
	case "hour":
		return at.Format("2006-01-02/15") + "/" + name
	}
	return name
}

// Begin implements sink.Target.
func (t *target) Begin(ctx context.Context, epoch uint64) (sink.Txn, error) {
	if t.store == nil {
		return nil, sink.ErrClosed
	}
	if t.broken {
		return nil, errBroken
	}
	return &txn{t: t, epoch: epoch}, nil
}

// txn adds one epoch's rows to the open file.
type txn struct {
	t     *target
	epoch uint64
}

// group is a file being built: the rows of the epochs from first (one
// epoch without rollover_seconds), split in parts by max_row_count.
type group struct {
	first uint64
	// rows counts the rows of the current part, part numbers it.
	rows int
	part int

	// ENCODE PARQUET: rec collects up to rowGroupRows rows, w encodes
	// them into buf.
	rec *array.RecordBuilder
	w   *pqarrow.FileWriter
	buf bytes.Buffer
	// ENCODE JSON: the lines.
	json []byte
}

func (x *txn) Write(ctx context.Context, changes []sink.Change) error {
	t := x.t
	for _, c := range changes {
		if !c.Op.IsInsert() {
			continue // append-only: deletes were dropped upstream or are not rows of the file
		}
		if t.open != nil && t.rollover > 0 && !t.within(x.epoch) {
			// This epoch's time is past the open file's: the file is
			// complete.
			if err := t.put(ctx, true); err != nil {
				return err
			}
		}
		if t.open == nil {
			t.open = &group{first: x.epoch}
		}
		g := t.open
		g.rows++
		if t.encode == "JSON" {
			g.json = sink.AppendJSONObject(g.json, t.cfg.Columns, c.Row, t.all)
			g.json = append(g.json, '\n')
			if err := t.full(ctx); err != nil {
				return err
			}
			continue
		}
		if g.rec == nil {
			g.rec = array.NewRecordBuilder(memory.DefaultAllocator, t.schema)
		}
		for i, col := range t.cfg.Columns {
			appendDatum(g.rec.Field(i), c.Row[i], col.Type)
		}
		if g.rec.Field(0).Len() >= rowGroupRows {
			if err := t.flushGroup(); err != nil {
				return err
			}
		}
		if err := t.full(ctx); err != nil {
			return err
		}
	}
	return nil
}

// full writes the current part when it holds max_row_count rows.
func (t *target) full(ctx context.Context) error {
	if t.maxRows == 0 || t.open.rows < t.maxRows {
		return nil
	}
	return t.put(ctx, false)
}

// flushGroup encodes the rows collected so far as a row group.
func (t *target) flushGroup() error {
	g := t.open
	if g.rec == nil || g.rec.Field(0).Len() == 0 {
		return nil
	}
	if g.w == nil {
		props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy),
			parquet.WithMaxRowGroupLength(rowGroupRows), parquet.WithCreatedBy("runnel"))
		w, err := pqarrow.NewFileWriter(t.schema, &g.buf, props, pqarrow.DefaultWriterProps())
		if err != nil {
			return fmt.Errorf("sink %s: parquet writer: %w", t.cfg.Name, err)
		}
		g.w = w
	}
	rec := g.rec.NewRecordBatch()
	defer rec.Release()
	if err := g.w.Write(rec); err != nil {
		return fmt.Errorf("sink %s: parquet: %w", t.cfg.Name, err)
	}
	return nil
}

// Commit implements sink.Txn: without rollover_seconds it writes the
// epoch's (last) file with one atomic Put (nothing when it holds no
// rows); with it, the epoch's rows wait in the open file (Advance).
func (x *txn) Commit(ctx context.Context) error {
	t := x.t
	if t.broken {
		return errBroken
	}
	if t.rollover == 0 && t.open != nil {
		if err := t.put(ctx, true); err != nil {
			return err
		}
	}
	t.handed = x.epoch
	return nil
}

// put writes the open file's current part with one atomic Put, then
// starts its next part, or closes the file (last).
func (t *target) put(ctx context.Context, last bool) error {
	g := t.open
	if g.rows > 0 {
		data := g.json
		if t.encode == "PARQUET" {
			if err := t.flushGroup(); err != nil {
				return err
			}
			if err := g.w.Close(); err != nil {
				return fmt.Errorf("sink %s: parquet: %w", t.cfg.Name, err)
			}
			data = g.buf.Bytes()
		}
		key := PartKey(t.partition, g.first, t.cfg.ID, g.part, t.ext())
		if err := t.store.Put(ctx, key, data); err != nil {
			t.broken = true
			return fmt.Errorf("sink %s: write %s: %w", t.cfg.Name, key, err)
		}
	}
	first, part := g.first, g.part+1
	t.drop()
	if !last {
		t.open = &group{first: first, part: part}
	}
	return nil
}

// drop forgets the open file.
func (t *target) drop() {
	if t.open != nil && t.open.rec != nil {
		t.open.rec.Release()
	}
	t.open = nil
}

// Rollback implements sink.Txn: the open file is dropped (with the
// epochs before this one it held, under rollover_seconds: the worker
// opens the target again and hands them again).
func (x *txn) Rollback() {
	x.t.drop()
	x.t.broken = true
}
