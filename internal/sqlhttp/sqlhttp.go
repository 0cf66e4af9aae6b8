package sqlhttp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

const (
	// maxBody bounds a request body (a form with the statements).
	maxBody = 16 << 20
	// maxResponse bounds the JSON of one answer.
	maxResponse = 64 << 20
	// database is the Runnel database whose schemas are GreptimeDB's
	// databases, as in package ingest.
	database = "dev"
)

// Register mounts /v1/sql on mux.
func Register(mux *http.ServeMux, eng pgwire.Engine, log *slog.Logger) {
	h := &handler{eng: eng, log: log}
	mux.HandleFunc("GET /v1/sql", h.serve)
	mux.HandleFunc("POST /v1/sql", h.serve)
}

type handler struct {
	eng pgwire.Engine
	log *slog.Logger
}

type columnSchema struct {
	Name     string `json:"name"`
	DataType string `json:"data_type"`
}

type records struct {
	Schema struct {
		ColumnSchemas []columnSchema `json:"column_schemas"`
	} `json:"schema"`
	Rows      [][]json.RawMessage `json:"rows"`
	TotalRows int                 `json:"total_rows"`
}

type output struct {
	Records      *records `json:"records,omitempty"`
	AffectedRows *uint64  `json:"affectedrows,omitempty"`
}

type answer struct {
	Output          []output `json:"output"`
	ExecutionTimeMS int64    `json:"execution_time_ms"`
}

type errorAnswer struct {
	Code            int    `json:"code"`
	SQLState        string `json:"sqlstate"`
	Error           string `json:"error"`
	ExecutionTimeMS int64  `json:"execution_time_ms"`
}

func (h *handler) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := r.ParseForm(); err != nil {
		h.fail(w, start, sqlerr.Errorf(sqlerr.ProgramLimitExceeded, "bad request: %v", err))
		return
	}
	sql := r.Form.Get("sql")
	if strings.TrimSpace(sql) == "" {
		h.fail(w, start, sqlerr.New(sqlerr.SyntaxError, "no statement: give it in the sql parameter"))
		return
	}
	out, err := h.run(r.Context(), r, sql)
	if err != nil {
		h.fail(w, start, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer{Output: out, ExecutionTimeMS: time.Since(start).Milliseconds()})
}

func (h *handler) run(ctx context.Context, r *http.Request, sql string) ([]output, error) {
	user, password, hasAuth := r.BasicAuth()
	if !hasAuth {
		user = "root"
	}
	info, err := h.eng.UserAuth(ctx, user)
	if err != nil {
		return nil, err
	}
	if info.SCRAMVerifier != "" {
		if !hasAuth || !pgwire.CheckSCRAMPassword(info.SCRAMVerifier, password) {
			return nil, sqlerr.Errorf(sqlerr.InvalidPassword, "password authentication failed for user %q", user)
		}
	} else if !loopback(r.RemoteAddr) {
		return nil, sqlerr.Errorf(sqlerr.InvalidAuthorizationSpec, "user %q has no password and is trusted from loopback addresses only", user)
	}
	var remote net.Addr
	if ap, err := net.ResolveTCPAddr("tcp", r.RemoteAddr); err == nil {
		remote = ap
	}
	sess, err := h.eng.NewSession(ctx, pgwire.StartupParams{User: user, Database: database, ApplicationName: "http /v1/sql",
		Options: map[string]string{}, Other: map[string]string{}, RemoteAddr: remote}, clientConn{})
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	if db := r.Form.Get("db"); db != "" && db != "public" {
		if err := execAll(ctx, sess, `SET search_path TO "`+strings.ReplaceAll(db, `"`, `""`)+`"`, nil); err != nil {
			return nil, err
		}
	}
	var out []output
	budget := maxResponse
	err = execAll(ctx, sess, sql, func(res pgwire.Result) error {
		o, err := toOutput(ctx, res, &budget)
		if err != nil {
			return err
		}
		out = append(out, o)
		return nil
	})
	return out, err
}

// execAll parses sql and runs its statements in order, handing each result
// to fn (nil: results are dropped).
func execAll(ctx context.Context, sess pgwire.Session, sql string, fn func(pgwire.Result) error) error {
	stmts, err := sess.Parse(ctx, sql, nil)
	if err != nil {
		return err
	}
	defer func() {
		for _, st := range stmts {
			st.Close()
		}
	}()
	for _, st := range stmts {
		res, err := st.Execute(ctx, nil)
		if err != nil {
			sess.OnError(err)
			return err
		}
		if res.Copy != nil {
			if res.Copy.Sink != nil {
				res.Copy.Sink.Abort()
			}
			if res.Rows != nil {
				res.Rows.Close()
			}
			return sqlerr.New(sqlerr.FeatureNotSupported, "COPY is not supported over HTTP")
		}
		if fn == nil {
			if res.Rows != nil {
				res.Rows.Close()
			}
			continue
		}
		if err := fn(res); err != nil {
			sess.OnError(err)
			return err
		}
	}
	return nil
}

func toOutput(ctx context.Context, res pgwire.Result, budget *int) (output, error) {
	if res.Rows == nil {
		n := pgwire.AffectedRows(res.Tag)
		return output{AffectedRows: &n}, nil
	}
	defer res.Rows.Close()
	rec := &records{Rows: [][]json.RawMessage{}}
	rec.Schema.ColumnSchemas = make([]columnSchema, len(res.Columns))
	for i, c := range res.Columns {
		rec.Schema.ColumnSchemas[i] = columnSchema{Name: c.Name, DataType: dataType(c.Type)}
	}
	for {
		row, err := res.Rows.Next(ctx)
		if err != nil {
			return output{}, err
		}
		if row == nil {
			break
		}
		vals := make([]json.RawMessage, len(res.Columns))
		for i, c := range res.Columns {
			var d types.Datum
			if i < len(row) {
				d = row[i]
			}
			vals[i] = jsonValue(d, c.Type)
			*budget -= len(vals[i]) + 1
		}
		if *budget < 0 {
			return output{}, sqlerr.Errorf(sqlerr.ProgramLimitExceeded, "result larger than %d MiB: add a LIMIT or use pgwire", maxResponse>>20)
		}
		rec.Rows = append(rec.Rows, vals)
	}
	rec.TotalRows = len(rec.Rows)
	return output{Records: rec}, nil
}

// dataType names t as GreptimeDB names its types.
func dataType(t types.Type) string {
	switch t.Kind {
	case types.KindBool:
		return "Boolean"
	case types.KindInt16:
		return "Int16"
	case types.KindInt32:
		return "Int32"
	case types.KindInt64:
		return "Int64"
	case types.KindFloat32:
		return "Float32"
	case types.KindFloat64:
		return "Float64"
	case types.KindNumeric:
		return "Decimal128"
	case types.KindDate:
		return "Date"
	case types.KindTimestamp, types.KindTimestamptz:
		return "TimestampMicrosecond"
	case types.KindTime:
		return "TimeMicrosecond"
	case types.KindBytea:
		return "Binary"
	case types.KindJsonb:
		return "Json"
	case types.KindInterval:
		return "Interval"
	case types.KindNull:
		return "Null"
	}
	return "String"
}

// jsonValue renders d: numbers and booleans as JSON numbers and booleans,
// timestamps as microseconds since the Unix epoch (GreptimeDB's
// TimestampMicrosecond), jsonb as itself, bytea as base64, anything else
// (and NaN, ±Infinity, ±infinity timestamps) as its text.
func jsonValue(d types.Datum, t types.Type) json.RawMessage {
	if d.IsNull() {
		return json.RawMessage("null")
	}
	switch d.Kind() {
	case types.KindBool:
		if d.Bool() {
			return json.RawMessage("true")
		}
		return json.RawMessage("false")
	case types.KindInt16, types.KindInt32, types.KindInt64:
		return json.RawMessage(strconv.FormatInt(d.Int(), 10))
	case types.KindFloat32, types.KindFloat64:
		if f := d.Float(); !math.IsNaN(f) && !math.IsInf(f, 0) {
			return json.RawMessage(types.FormatText(d, t, nil))
		}
	case types.KindNumeric:
		if s := types.FormatText(d, t, nil); s != "NaN" && !strings.Contains(s, "Infinity") {
			return json.RawMessage(s)
		}
	case types.KindTimestamp, types.KindTimestamptz:
		if d.Int() != math.MinInt64 && d.Int() != math.MaxInt64 {
			return json.RawMessage(strconv.FormatInt(d.Int(), 10))
		}
	case types.KindJsonb:
		return json.RawMessage(d.Str())
	case types.KindBytea:
		b, _ := json.Marshal(base64.StdEncoding.EncodeToString(d.Bytes()))
		return b
	}
	b, _ := json.Marshal(types.FormatText(d, t, nil))
	return b
}

// greptimeCodes maps SQLSTATEs to GreptimeDB's status codes.
var greptimeCodes = map[string]int{
	sqlerr.SyntaxError:              2000, // InvalidSyntax
	sqlerr.UndefinedTable:           4001, // TableNotFound
	sqlerr.UndefinedColumn:          4002, // TableColumnNotFound
	sqlerr.DuplicateTable:           4000, // TableAlreadyExists
	sqlerr.DuplicateColumn:          4003, // TableColumnExists
	sqlerr.InvalidSchemaName:        4004, // DatabaseNotFound
	sqlerr.InvalidCatalogName:       4004,
	sqlerr.FeatureNotSupported:      1001, // Unsupported
	sqlerr.QueryCanceled:            1005, // Cancelled
	sqlerr.InvalidPassword:          7000, // UserNotFound / auth failures
	sqlerr.InvalidAuthorizationSpec: 7000,
	sqlerr.InternalError:            1003, // Internal
}

func (h *handler) fail(w http.ResponseWriter, start time.Time, err error) {
	se := sqlerr.From(err)
	if se == nil {
		if errors.Is(err, context.Canceled) {
			se = sqlerr.New(sqlerr.QueryCanceled, "canceling statement: the client went away")
		} else {
			h.log.Error("sql over http: internal error", "err", err)
			se = sqlerr.New(sqlerr.InternalError, err.Error())
		}
	}
	code, ok := greptimeCodes[se.Code]
	if !ok {
		code = 1004 // InvalidArguments
	}
	status := http.StatusBadRequest
	switch {
	case se.Code == sqlerr.InternalError || strings.HasPrefix(se.Code, "XX") || strings.HasPrefix(se.Code, "58"):
		status = http.StatusInternalServerError
	case se.Code == sqlerr.InvalidPassword || se.Code == sqlerr.InvalidAuthorizationSpec:
		status = http.StatusUnauthorized
	}
	msg := se.Message
	if se.Detail != "" {
		msg += " (" + se.Detail + ")"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorAnswer{Code: code, SQLState: se.Code, Error: msg, ExecutionTimeMS: time.Since(start).Milliseconds()})
}

func loopback(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

type clientConn struct{}

func (clientConn) Notice(pgwire.Notice)           {}
func (clientConn) SetParameterStatus(_, _ string) {}
