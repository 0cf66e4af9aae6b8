package sinktest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/sink"
	"github.com/runneldb/runnel/internal/testutil/s3test"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// s3SinkSQL is CREATE SINK name FROM from into s3 at bucket/path.
func s3SinkSQL(s3 *s3test.Server, name, from, bucket, path, extra string) string {
	return fmt.Sprintf(`CREATE SINK %s FROM %s WITH (connector = 's3', s3.region_name = '%s', s3.bucket_name = '%s',
		s3.path = '%s', s3.credentials.access = '%s', s3.credentials.secret = '%s', s3.endpoint_url = 'http://%s',
		type = 'append-only'%s) FORMAT PLAIN ENCODE PARQUET`, name, from, s3.Region, bucket, path, s3.AccessKey, s3.SecretKey, s3.Endpoint, extra)
}

// parquetRows reads a Parquet file with arrow-go and renders its rows as
// PostgreSQL's text output would (rowsOf's form).
func parquetRows(t *testing.T, data []byte) []string {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("parquet: %v", err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1024}, memory.DefaultAllocator)
	if err != nil {
		t.Fatalf("parquet: %v", err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatalf("parquet: %v", err)
	}
	defer tbl.Release()
	tr := array.NewTableReader(tbl, 1024)
	defer tr.Release()
	var out []string
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			parts := make([]string, rec.NumCols())
			for c := range parts {
				col := rec.Column(c)
				if col.IsNull(i) {
					parts[c] = "NULL"
					continue
				}
				switch a := col.(type) {
				case *array.Int32:
					parts[c] = strconv.FormatInt(int64(a.Value(i)), 10)
				case *array.Int64:
					parts[c] = strconv.FormatInt(a.Value(i), 10)
				case *array.Float64:
					parts[c] = strconv.FormatFloat(a.Value(i), 'g', -1, 64)
				case *array.Boolean:
					parts[c] = map[bool]string{true: "t", false: "f"}[a.Value(i)]
				case *array.String:
					parts[c] = a.Value(i)
				case *array.Date32:
					parts[c] = a.Value(i).ToTime().Format("2006-01-02")
				case *array.Timestamp:
					parts[c] = time.UnixMicro(int64(a.Value(i))).UTC().Format("2006-01-02 15:04:05.999999")
				default:
					t.Fatalf("parquet column %d: unexpected type %s", c, col.DataType())
				}
			}
			out = append(out, strings.Join(parts, "|"))
		}
	}
	return out
}

// parquetKey is a delivered file's name (the package comment of
// internal/sink/file).
var parquetKey = regexp.MustCompile(`^[0-9]{20}_[0-9]+\.parquet$`)

// s3Files reads every object under bucket/prefix: its key and rows.
func s3Files(t *testing.T, s3 *s3test.Server, bucket, prefix string) (keys []string, rows []string) {
	t.Helper()
	st, err := objstore.NewS3(s3.Config(bucket, prefix))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	infos, err := st.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		if !parquetKey.MatchString(info.Key) {
			t.Fatalf("object %q in the sink's path: not a delivered file's name", info.Key)
		}
		data, err := st.Get(ctx, info.Key)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, info.Key)
		rows = append(rows, parquetRows(t, data)...)
	}
	slices.Sort(rows)
	return keys, rows
}

// waitS3Rows waits until the files under bucket/prefix hold exactly want.
func waitS3Rows(t *testing.T, s3 *s3test.Server, bucket, prefix string, want []string, limit time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		keys, got := s3Files(t, s3, bucket, prefix)
		if slices.Equal(got, want) {
			return keys
		}
		if time.Now().After(deadline) {
			t.Fatalf("files differ from the table after %v:\ntable (%d rows): %v\nfiles (%d rows in %d files): %v", limit, len(want), head(want), len(got), len(keys), head(got))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const evTypes = "id bigint, g int, v double precision, name text, at timestamp, d date, ok boolean, amt numeric"

func insertEv(t *testing.T, rw *pgx.Conn, lo, hi int) {
	t.Helper()
	mustExec(t, rw, fmt.Sprintf(`INSERT INTO ev SELECT i, i %% 5, i / 4.0, CASE WHEN i %% 7 = 0 THEN NULL ELSE 'n' || i END,
		'2026-12-03 10:00:00'::timestamp + i * interval '1 second' + interval '0.25 second', '2026-01-01'::date + i, i %% 2 = 0, i * 1.5
		FROM generate_series(%d, %d) g(i)`, lo, hi))
}

// TestS3ParquetSink: an append-only table with columns of most types sunk
// FORMAT PLAIN ENCODE PARQUET into a real versitygw bucket; read back with
// arrow-go the files hold exactly the table's rows, across inserts in
// several epochs and a RECOVER, each file named by its epoch. An
// aggregation view sunk with force_append_only (as RisingWave's ENCODE
// option) into a local directory as JSON lines, partitioned by day, holds
// every row the view has now.
func TestS3ParquetSink(t *testing.T) {
	s3 := s3test.Start(t)
	bucket := s3.NewBucket(t)
	dir := t.TempDir()

	srv := servertest.Start(t)
	rw := srv.Connect(t)
	mustExec(t, rw, "CREATE TABLE ev ("+evTypes+") APPEND ONLY")
	insertEv(t, rw, 1, 500) // the backfill's rows
	mustExec(t, rw, s3SinkSQL(s3, "ev_s3", "ev", bucket, "out/ev", ""))
	mustExec(t, rw, "CREATE MATERIALIZED VIEW agg AS SELECT g, count(*) AS n, sum(v) AS s FROM ev GROUP BY g")
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK agg_fs FROM agg WITH (connector = 'fs', fs.path = '%s', type = 'append-only',
		path_partition_prefix = 'day') FORMAT PLAIN ENCODE JSON (force_append_only = 'true')`, dir))
	for round := 0; round < 4; round++ {
		insertEv(t, rw, 1000*(round+1), 1000*(round+1)+300)
		if round == 1 {
			mustExec(t, rw, "FLUSH")
			mustExec(t, rw, "RECOVER")
		}
	}
	mustExec(t, rw, "FLUSH")
	want := rowsOf(t, rw, "SELECT * FROM ev")
	keys := waitS3Rows(t, s3, bucket, "out/ev", want, 30*time.Second)
	if len(keys) < 2 {
		t.Fatalf("%d files for inserts in several epochs: %v", len(keys), keys)
	}

	// The JSON files hold, among the view's successive versions, every row
	// it has now.
	wantAgg := rowsOf(t, rw, "SELECT g, n, s FROM agg")
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got []string
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if !regexp.MustCompile(`/[0-9]{4}-[0-9]{2}-[0-9]{2}/[0-9]{20}_[0-9]+\.json$`).MatchString(p) {
				return fmt.Errorf("unexpected file %s", p)
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				var m struct {
					G, N int64
					S    float64
				}
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					return fmt.Errorf("%s: %q: %v", p, line, err)
				}
				got = append(got, fmt.Sprintf("%d|%d|%s", m.G, m.N, strconv.FormatFloat(m.S, 'g', -1, 64)))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		missing := 0
		for _, row := range wantAgg {
			if !slices.Contains(got, row) {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the JSON files lack %d of the view's rows %v; they hold %v", missing, wantAgg, head(got))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startS3Sink starts a versitygw with a bucket and a server with an
// append-only table ev (evTypes) sunk by ev_s3 into the bucket's path ev,
// with the extra WITH options extra (", name = 'value'", or "").
func startS3Sink(t *testing.T, extra string) (*s3test.Server, string, *servertest.Server, *pgx.Conn) {
	t.Helper()
	s3 := s3test.Start(t)
	bucket := s3.NewBucket(t)
	srv := servertest.Start(t)
	rw := srv.Connect(t)
	mustExec(t, rw, "CREATE TABLE ev ("+evTypes+") APPEND ONLY")
	mustExec(t, rw, s3SinkSQL(s3, "ev_s3", "ev", bucket, "ev", extra))
	return s3, bucket, srv, rw
}

// TestS3SinkRedeliveryOverwrites pins the file sinks' exactly once: the
// server stops right after an epoch's file was written and before the
// log's rows of that epoch were released for truncation (a test hook holds
// the worker there), so the restarted server delivers that epoch again;
// the file's name derives from the epoch, so the second write replaces the
// first and the bucket holds every row once. A name not derived from the
// epoch (a fresh name per write) would leave the epoch's rows twice.
func TestS3SinkRedeliveryOverwrites(t *testing.T) {
	s3, bucket, srv, rw := startS3Sink(t, "")

	held := holdAfterDelivery(t, "ev_s3")["ev_s3"]
	insertEv(t, rw, 1, 100)
	mustExec(t, rw, "FLUSH")
	var epoch uint64
	select {
	case epoch = <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("the sink delivered nothing")
	}
	before, rows := s3Files(t, s3, bucket, "ev")
	if len(rows) != 100 || len(before) != 1 || !strings.HasPrefix(before[0], fmt.Sprintf("%020d_", epoch)) {
		t.Fatalf("after the held delivery of epoch %d: files %v with %d rows, want one file of it with 100", epoch, before, len(rows))
	}
	// Unhooked before the restart: the held workers stay blocked in the
	// hook until the old server stops, and the new server's workers,
	// which deliver the held epoch again at once, must not be held too.
	sink.SetDeliveredHook(nil)
	srv = srv.Restart(t)
	rw = srv.Connect(t)
	insertEv(t, rw, 101, 150)
	mustExec(t, rw, "FLUSH")
	keys := waitS3Rows(t, s3, bucket, "ev", rowsOf(t, rw, "SELECT * FROM ev"), 30*time.Second)
	if !slices.Contains(keys, before[0]) {
		t.Fatalf("the redelivered epoch's file %s is gone: %v", before[0], keys)
	}
}

// TestFileSinkMaxRowCount: fs sinks with max_row_count = '1000' (ENCODE
// JSON and ENCODE PARQUET) from a table; one INSERT of 4,500 rows (one
// epoch) and one of 300 become parts of at most 1,000 rows each, named
// <epoch>_<id>.ext then <epoch>_<id>_<part>.ext, that together hold every
// row once. A bad max_row_count or rollover_seconds fails CREATE SINK
// with 22023.
func TestFileSinkMaxRowCount(t *testing.T) {
	srv := servertest.Start(t)
	rw := srv.Connect(t)
	mustExec(t, rw, "CREATE TABLE ev (id int, v text) APPEND ONLY")
	dirs := map[string]string{"JSON": t.TempDir(), "PARQUET": t.TempDir()}
	for enc, dir := range dirs {
		mustExec(t, rw, fmt.Sprintf(`CREATE SINK ev_%s FROM ev WITH (connector = 'fs', fs.path = '%s', type = 'append-only',
			max_row_count = '1000') FORMAT PLAIN ENCODE %s`, strings.ToLower(enc), dir, enc))
	}
	if _, err := rw.Exec(context.Background(), fmt.Sprintf(`CREATE SINK bad FROM ev WITH (connector = 'fs', fs.path = '%s',
		type = 'append-only', max_row_count = '0') FORMAT PLAIN ENCODE JSON`, dirs["JSON"])); !isCode(err, "22023") {
		t.Fatalf("max_row_count = '0': %v, want 22023", err)
	}
	for _, v := range []string{"0", "-1", "soon"} {
		if _, err := rw.Exec(context.Background(), fmt.Sprintf(`CREATE SINK bad FROM ev WITH (connector = 'fs', fs.path = '%s',
			type = 'append-only', rollover_seconds = '%s') FORMAT PLAIN ENCODE JSON`, dirs["JSON"], v)); !isCode(err, "22023") {
			t.Fatalf("rollover_seconds = '%s': %v, want 22023", v, err)
		}
	}
	mustExec(t, rw, "INSERT INTO ev SELECT i, 'v' || i FROM generate_series(1, 4500) g(i)")
	mustExec(t, rw, "FLUSH")
	mustExec(t, rw, "INSERT INTO ev SELECT i, 'v' || i FROM generate_series(4501, 4800) g(i)")
	mustExec(t, rw, "FLUSH")
	want := rowsOf(t, rw, "SELECT id, v FROM ev")
	name := regexp.MustCompile(`^([0-9]{20})_[0-9]+(_([0-9]+))?\.(json|parquet)$`)
	for enc, dir := range dirs {
		deadline := time.Now().Add(30 * time.Second)
		for {
			var got []string
			parts := map[string]int{} // epoch -> files
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".tmp-") {
					// A part being written (the local store's temp file,
					// renamed into place once whole): the loop looks again.
					continue
				}
				m := name.FindStringSubmatch(e.Name())
				if m == nil {
					t.Fatalf("%s: unexpected file %s", enc, e.Name())
				}
				data, err := os.ReadFile(filepath.Join(dir, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				var rows []string
				if enc == "PARQUET" {
					rows = parquetRows(t, data)
				} else {
					rows = idvRows(t, e.Name(), data)
				}
				if len(rows) > 1000 {
					t.Fatalf("%s: %s holds %d rows, more than max_row_count", enc, e.Name(), len(rows))
				}
				parts[m[1]]++
				got = append(got, rows...)
			}
			slices.Sort(got)
			if slices.Equal(got, want) {
				counts := slices.Sorted(maps.Values(parts))
				if !slices.Equal(counts, []int{1, 5}) {
					t.Fatalf("%s: files per epoch %v, want 1 (300 rows) and 5 (4,500 rows)", enc, counts)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the files hold %d rows, want %d once each", enc, len(got), len(want))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// idvRows reads a JSON-lines file of rows {"id": int, "v": text} as
// "id|v" lines.
func idvRows(t *testing.T, name string, data []byte) []string {
	t.Helper()
	var rows []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r struct {
			ID int
			V  string
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s: %q: %v", name, line, err)
		}
		rows = append(rows, fmt.Sprintf("%d|%s", r.ID, r.V))
	}
	return rows
}

func isCode(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}
