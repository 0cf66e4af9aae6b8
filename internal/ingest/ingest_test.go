package ingest_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang/snappy"
	influxdb2 "github.com/influxdata/influxdb-client-go/v2"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/prometheus/prompb"

	"github.com/runneldb/runnel/internal/ingest"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// env is a Runnel server with the ingest handlers on a real HTTP listener.
type env struct {
	srv  *servertest.Server
	http *httptest.Server
	conn *pgx.Conn
}

func start(t *testing.T) *env {
	t.Helper()
	srv := servertest.Start(t)
	mux := http.NewServeMux()
	ingest.Register(mux, srv.Server.IngestWriter())
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return &env{srv: srv, http: hs, conn: srv.Connect(t)}
}

func (e *env) post(t *testing.T, path, contentEncoding string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", e.http.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentEncoding != "" {
		req.Header.Set("Content-Encoding", contentEncoding)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (e *env) query(t *testing.T, sql string) string {
	t.Helper()
	return fmt.Sprint(servertest.QueryStrings(t, e.conn, sql))
}

// Line protocol through InfluxDB's official Go client (v2 API) and plain
// HTTP (v1 API, precision, gzip) and curl: tables are created on first
// write (tags → tag columns, fields → typed value columns, time index
// ts), a new field adds a column, a rewrite of the same series and time
// replaces the row, and a rows are visible to a plain SELECT as soon as
// the write is acknowledged (acknowledged after commit, I7).
func TestLineProtocol(t *testing.T) {
	e := start(t)
	client := influxdb2.NewClient(e.http.URL+"/v1/influxdb", "")
	defer client.Close()
	wa := client.WriteAPIBlocking("", "public")
	t0 := time.Now().Truncate(time.Millisecond)
	p := influxdb2.NewPoint("monitor", map[string]string{"host": "127.0.0.1"}, map[string]any{"cpu": 0.1, "memory": 0.4}, t0)
	q := influxdb2.NewPoint("monitor", map[string]string{"host": "127.0.0.2"}, map[string]any{"cpu": 0.2, "memory": 0.3, "procs": int64(7)}, t0)
	if err := wa.WritePoint(context.Background(), p, q); err != nil {
		t.Fatalf("influxdb client write: %v", err)
	}
	if got := e.query(t, "SELECT host, cpu, memory, procs FROM monitor ORDER BY host"); got != "[127.0.0.1|0.1|0.4|<nil> 127.0.0.2|0.2|0.3|7]" {
		t.Fatalf("monitor after the client's write = %s", got)
	}
	if got := e.query(t, "SELECT column_name || ' ' || data_type FROM information_schema.columns WHERE table_name = 'monitor' ORDER BY ordinal_position"); got != "[host text ts timestamp with time zone cpu double precision memory double precision procs bigint]" {
		t.Fatalf("monitor columns = %s", got)
	}
	// v1, precision=ms, gzip: a rewrite of (127.0.0.1, t0) replaces it; a
	// new series; a new tag (dc) and a new field (up) add columns.
	ms := t0.UnixMilli()
	body := fmt.Sprintf("monitor,host=127.0.0.1 cpu=0.9,memory=0.5 %d\n\n# a comment\nmonitor,host=127.0.0.3,dc=eu cpu=1i,up=true %d\n", ms, ms+1)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(body))
	zw.Close()
	if code, msg := e.post(t, "/v1/influxdb/write?db=public&precision=ms", "gzip", gz.Bytes()); code != http.StatusNoContent {
		t.Fatalf("v1 write: %d %s", code, msg)
	}
	if got := e.query(t, "SELECT host, dc, cpu, up FROM monitor ORDER BY host"); got != "[127.0.0.1|<nil>|0.9|<nil> 127.0.0.2|<nil>|0.2|<nil> 127.0.0.3|eu|1|true]" {
		t.Fatalf("monitor after the v1 write = %s", got)
	}
	if got := e.query(t, fmt.Sprintf("SELECT count(*) FROM monitor WHERE ts = to_timestamp(%d / 1000.0)", ms+1)); got != "[1]" {
		t.Fatalf("precision=ms: row at %d ms: %s", ms+1, got)
	}
	// curl, as GreptimeDB's documentation writes it.
	if _, err := exec.LookPath("curl"); err == nil {
		out, err := exec.Command("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-XPOST",
			e.http.URL+"/v1/influxdb/api/v2/write?bucket=public&precision=s",
			"--data-binary", "disk,host=a used=1i 1700000000\ndisk,host=b used=2i 1700000001").CombinedOutput()
		if err != nil || string(out) != "204" {
			t.Fatalf("curl: %s %v", out, err)
		}
		if got := e.query(t, "SELECT host, used, ts FROM disk ORDER BY host"); got != "[a|1|2023-11-14 22:13:20 +0000 UTC b|2|2023-11-14 22:13:21 +0000 UTC]" {
			t.Fatalf("disk after curl = %s", got)
		}
	}
}

// A bad line fails the whole request with 400 naming the line: nothing
// of it is written, no table or column is created. Type conflicts with
// existing columns are found before anything is applied too.
func TestLineProtocolErrors(t *testing.T) {
	e := start(t)
	if code, msg := e.post(t, "/v1/influxdb/write", "", []byte("m,host=a v=1 1\n")); code != http.StatusNoContent {
		t.Fatalf("first write: %d %s", code, msg)
	}
	for _, c := range []struct {
		body, want string
		status     int
	}{
		{"m,host=a v=2 2\nnew,host=b v=1 3\nm,host=c v= 4\n", "line 3", 400},
		{"m,host=a v=2 2\nm,host=a v=\"text\" 5\n", "line 2", 400},
		{"m,host=a v=2 2\nm,host=a newfield=1,v=1 5 6 7\n", "line 2", 400},
		{"m,host=a v=2 2\nm,v=x w=1 9\n", "line 2", 400},
	} {
		code, msg := e.post(t, "/v1/influxdb/write", "", []byte(c.body))
		if code != c.status || !strings.Contains(msg, c.want) {
			t.Errorf("%q: %d %s; want %d naming %s", c.body, code, msg, c.status, c.want)
		}
	}
	if code, msg := e.post(t, "/v1/influxdb/write?precision=fortnights", "", []byte("m v=1")); code != 400 || !strings.Contains(msg, "precision") {
		t.Errorf("bad precision: %d %s", code, msg)
	}
	if code, _ := e.post(t, "/v1/influxdb/write?db=nope", "", []byte("m v=1")); code != 404 {
		t.Errorf("unknown db: %d; want 404", code)
	}
	if got := e.query(t, "SELECT count(*), max(v) FROM m"); got != "[1|1]" {
		t.Fatalf("rows of m after refused requests = %s; want only the first write", got)
	}
	if got := e.query(t, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'new'"); got != "[0]" {
		t.Fatalf("a refused request created its table: %s", got)
	}
	if got := e.query(t, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'm'"); got != "[3]" {
		t.Fatalf("a refused request added columns: %s", got)
	}
}

// The write is answered only once its epoch is committed (I7): with the
// version commit held, the request does not return; once released, it
// does, and the rows are there. Fails if the handler answers after the
// write is applied but before its epoch commits.
func TestIngestAckAfterCommit(t *testing.T) {
	e := start(t)
	if code, msg := e.post(t, "/v1/influxdb/write", "", []byte("m,host=a v=1 1\n")); code != http.StatusNoContent {
		t.Fatalf("first write: %d %s", code, msg)
	}
	var hold atomic.Bool
	release := make(chan struct{})
	remove := e.srv.Server.Internals().Store.SetMetaWriteHook(func(op string, after bool) error {
		if op == "commit-delta" && !after && hold.Load() {
			<-release
		}
		return nil
	})
	defer remove()
	hold.Store(true)
	done := make(chan int, 1)
	go func() {
		code, _ := e.post(t, "/v1/influxdb/write", "", []byte("m,host=b v=2 2\n"))
		done <- code
	}()
	select {
	case code := <-done:
		t.Fatalf("write answered %d while its epoch could not commit", code)
	case <-time.After(500 * time.Millisecond):
	}
	hold.Store(false)
	close(release)
	if code := <-done; code != http.StatusNoContent {
		t.Fatalf("write after the commit: %d", code)
	}
	if got := e.query(t, "SELECT count(*) FROM m"); got != "[2]" {
		t.Fatalf("rows = %s", got)
	}
}

// Prometheus remote write as Prometheus sends it (snappy-compressed
// prompb.WriteRequest): a table per metric with greptime_timestamp and
// greptime_value, labels as tags; a series with a new label adds a tag
// column; staleness markers are skipped.
func TestPrometheusRemoteWrite(t *testing.T) {
	e := start(t)
	now := time.Now().UnixMilli()
	series := func(name string, labels map[string]string, samples ...prompb.Sample) prompb.TimeSeries {
		ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: name}}, Samples: samples}
		for k, v := range labels {
			ts.Labels = append(ts.Labels, prompb.Label{Name: k, Value: v})
		}
		return ts
	}
	send := func(wr *prompb.WriteRequest) (int, string) {
		raw, err := wr.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", e.http.URL+"/v1/prometheus/write", bytes.NewReader(snappy.Encode(nil, raw)))
		req.Header.Set("Content-Encoding", "snappy")
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	wr := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		series("up", map[string]string{"job": "prometheus", "instance": "localhost:9090"}, prompb.Sample{Value: 1, Timestamp: now - 1000}, prompb.Sample{Value: 1, Timestamp: now}),
		series("up", map[string]string{"job": "node", "instance": "localhost:9100"}, prompb.Sample{Value: 0, Timestamp: now}),
		series("http_requests_total", map[string]string{"code": "200"}, prompb.Sample{Value: 1027, Timestamp: now}),
	}}
	if code, msg := send(wr); code != http.StatusNoContent {
		t.Fatalf("remote write: %d %s", code, msg)
	}
	if got := e.query(t, "SELECT job, instance, greptime_value FROM up ORDER BY job, greptime_timestamp"); got != "[node|localhost:9100|0 prometheus|localhost:9090|1 prometheus|localhost:9090|1]" {
		t.Fatalf("up = %s", got)
	}
	stale := prompb.Sample{Value: staleNaN(), Timestamp: now + 1000}
	wr = &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		series("up", map[string]string{"job": "node", "instance": "localhost:9100", "zone": "a"}, prompb.Sample{Value: 1, Timestamp: now + 1000}),
		series("up", map[string]string{"job": "prometheus", "instance": "localhost:9090"}, prompb.Sample{Value: 1, Timestamp: now}, stale),
	}}
	if code, msg := send(wr); code != http.StatusNoContent {
		t.Fatalf("remote write with a new label: %d %s", code, msg)
	}
	if got := e.query(t, "SELECT job, zone, greptime_value FROM up ORDER BY job, greptime_timestamp"); got != "[node|<nil>|0 node|a|1 prometheus|<nil>|1 prometheus|<nil>|1]" {
		t.Fatalf("up after a new label (and a rewrite of an existing sample) = %s", got)
	}
	if code, msg := e.post(t, "/v1/prometheus/write", "snappy", []byte("not snappy")); code != 400 {
		t.Fatalf("garbage body: %d %s; want 400", code, msg)
	}
}

func staleNaN() float64 { return math.Float64frombits(0x7ff0000000000002) }

// I9: a gzip body that inflates beyond MaxBodyBytes is refused with 413
// after reading at most the bound, and the server stays up.
func TestIngestBodyBound(t *testing.T) {
	e := start(t)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	line := []byte("m,host=a v=1 1\n")
	for n := 0; n <= ingest.MaxBodyBytes; n += len(line) {
		zw.Write(line)
	}
	zw.Close()
	if code, msg := e.post(t, "/v1/influxdb/write", "gzip", gz.Bytes()); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("gzip bomb: %d %s; want 413", code, msg)
	}
	if code, msg := e.post(t, "/v1/influxdb/write", "", line); code != http.StatusNoContent {
		t.Fatalf("write after the refused body: %d %s", code, msg)
	}
}
