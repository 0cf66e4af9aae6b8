package ingest

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// MaxBodyBytes bounds a request body after decompression, and MaxPoints
// the points of one request (I9: a request's parsed rows are held in
// memory until they are written; 32 MiB of line protocol is about 150k
// TSBS rows, and a client batches 5k–10k).
const (
	MaxBodyBytes = 32 << 20
	MaxPoints    = 1 << 20
)

// Time index and value column names of created tables (GreptimeDB's).
const (
	InfluxTimeColumn = "ts"
	PromTimeColumn   = "greptime_timestamp"
	PromValueColumn  = "greptime_value"
)

// Tag is one tag (label) of a point.
type Tag struct{ Key, Value string }

// Field is one field of a point: a float64, int64, text or bool datum.
type Field struct {
	Key   string
	Value types.Datum
}

// Point is one row: tags, fields and its time in Unix microseconds.
type Point struct {
	Tags   []Tag
	Fields []Field
	Time   int64
	Line   int // 1-based line (line protocol) or series index, for errors
}

// TableWrite holds the points of one table (measurement or metric).
type TableWrite struct {
	Table  string
	Points []Point
}

// Request is one HTTP write, all of it applied or none.
type Request struct {
	// Schema is GreptimeDB's database: a schema of Runnel's dev database.
	Schema string
	// TimeColumn names the time index of tables the request creates.
	TimeColumn string
	// Tables in first-appearance order.
	Tables []*TableWrite
	// Hints apply to tables the request creates (append_mode, ttl).
	Hints map[string]string
	// Protocol names the protocol in errors ("line protocol").
	Protocol string
}

// Rows counts the request's points.
func (r *Request) Rows() int {
	n := 0
	for _, t := range r.Tables {
		n += len(t.Points)
	}
	return n
}

// Writer applies a request: creates tables and columns as needed, writes
// every point, and returns once they are durable (I7). Its errors carry
// SQLSTATEs (internal/sqlerr); data errors name the line.
type Writer interface {
	Write(ctx context.Context, r *Request) error
}

// Register adds the ingest handlers to mux.
func Register(mux *http.ServeMux, w Writer) {
	h := &handlers{w: w}
	mux.HandleFunc("POST /v1/influxdb/write", h.influxWrite(false))
	mux.HandleFunc("POST /v1/influxdb/api/v2/write", h.influxWrite(true))
	mux.HandleFunc("POST /v1/prometheus/write", h.promWrite)
	mux.HandleFunc("POST /v1/otlp/v1/metrics", h.otlpWrite)
	// InfluxDB clients probe these before writing.
	mux.HandleFunc("GET /v1/influxdb/ping", ping)
	mux.HandleFunc("GET /v1/influxdb/health", health)
	mux.HandleFunc("GET /v1/influxdb/api/v2/ping", ping)
}

type handlers struct{ w Writer }

func ping(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }

func health(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"status":"pass"}`)
}

// body reads a request body, gunzipping it when the client says so,
// bounded by MaxBodyBytes (I9).
func body(r *http.Request) ([]byte, error) {
	var rd io.Reader = http.MaxBytesReader(nil, r.Body, MaxBodyBytes)
	if strings.EqualFold(r.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(rd)
		if err != nil {
			return nil, badRequest("bad gzip body: %v", err)
		}
		defer zr.Close()
		rd = zr
	}
	b, err := io.ReadAll(io.LimitReader(rd, MaxBodyBytes+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, &httpError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("request body over %d bytes", MaxBodyBytes)}
		}
		return nil, badRequest("reading the body: %v", err)
	}
	if len(b) > MaxBodyBytes {
		return nil, &httpError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("request body over %d bytes after decompression", MaxBodyBytes)}
	}
	return b, nil
}

// hints reads GreptimeDB's table hints: x-greptime-hints: k=v, k=v and
// x-greptime-hint-<k>: v.
func hints(r *http.Request) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(r.Header.Get("x-greptime-hints"), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
		}
	}
	for k, vs := range r.Header {
		if name, ok := strings.CutPrefix(strings.ToLower(k), "x-greptime-hint-"); ok && len(vs) > 0 {
			out[name] = vs[0]
		}
	}
	return out
}

// httpError is an error with its HTTP status.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// fail answers an error as GreptimeDB does: a JSON body with the message,
// and the SQLSTATE when there is one.
func fail(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	var he *httpError
	var se *sqlerr.Error
	code := ""
	switch {
	case errors.As(err, &he):
		status = he.status
	case errors.As(err, &se):
		code = se.Code
		switch {
		case strings.HasPrefix(code, "22"), strings.HasPrefix(code, "42"), strings.HasPrefix(code, "23"), code == sqlerr.FeatureNotSupported:
			status = http.StatusBadRequest
		case strings.HasPrefix(code, "3D"), code == sqlerr.InvalidSchemaName:
			status = http.StatusNotFound
		case strings.HasPrefix(code, "40"), strings.HasPrefix(code, "55"), strings.HasPrefix(code, "57"), strings.HasPrefix(code, "53"):
			status = http.StatusServiceUnavailable
		}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": err.Error(), "code": code})
}

// write hands a parsed request to the writer and answers 204 once it is
// durable.
func (h *handlers) write(w http.ResponseWriter, r *http.Request, req *Request) {
	if req.Rows() > 0 {
		if err := h.w.Write(r.Context(), req); err != nil {
			fail(w, err)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}
