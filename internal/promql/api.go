package promql

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
)

// Prefix is where GreptimeDB serves the Prometheus API; Grafana's
// Prometheus data source takes http://host:port/v1/prometheus as its URL.
const Prefix = "/v1/prometheus"

// Options tune the API.
type Options struct {
	// Timeout bounds one query (default 2 minutes, Prometheus' default).
	Timeout time.Duration
	// MaxSamples bounds the samples one query holds in memory (default
	// 50 million, Prometheus' default).
	MaxSamples int
	Logger     *slog.Logger
}

// API serves the Prometheus HTTP API over a Source.
type API struct {
	src    Source
	engine *promql.Engine
	opts   Options
}

// New returns the API over src.
func New(src Source, opts Options) *API {
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.MaxSamples <= 0 {
		opts.MaxSamples = 50_000_000
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	eng := promql.NewEngine(promql.EngineOpts{
		Logger:               opts.Logger,
		MaxSamples:           opts.MaxSamples,
		Timeout:              opts.Timeout,
		LookbackDelta:        5 * time.Minute,
		EnableAtModifier:     true,
		EnableNegativeOffset: true,
		// Parser: the default (Prometheus' own).
	})
	return &API{src: src, engine: eng, opts: opts}
}

// Register adds the API's routes under Prefix to mux: the query API
// (GET and POST form), remote read, and the few status endpoints
// Grafana's data source calls.
func (a *API) Register(mux *http.ServeMux) {
	p := Prefix + "/api/v1/"
	for _, m := range []string{"GET", "POST"} {
		mux.HandleFunc(m+" "+p+"query", a.handle(a.query))
		mux.HandleFunc(m+" "+p+"query_range", a.handle(a.queryRange))
		mux.HandleFunc(m+" "+p+"series", a.handle(a.series))
		mux.HandleFunc(m+" "+p+"labels", a.handle(a.labelNames))
		mux.HandleFunc(m+" "+p+"label/{name}/values", a.handle(a.labelValues))
		mux.HandleFunc(m+" "+p+"metadata", a.handle(func(*http.Request) (any, annotations.Annotations, error) {
			return map[string]any{}, nil, nil
		}))
		mux.HandleFunc(m+" "+p+"query_exemplars", a.handle(func(*http.Request) (any, annotations.Annotations, error) {
			return []any{}, nil, nil
		}))
	}
	mux.HandleFunc("GET "+p+"status/buildinfo", a.handle(func(*http.Request) (any, annotations.Annotations, error) {
		// Grafana reads the version to choose the features it uses.
		return map[string]string{"version": "2.45.0", "revision": "runnel", "branch": "", "buildUser": "", "buildDate": "", "goVersion": ""}, nil, nil
	}))
	mux.HandleFunc("POST "+Prefix+"/read", a.remoteRead)
}

// apiError is an error answer: its Prometheus errorType and status.
type apiError struct {
	typ    string
	status int
	err    error
}

func (e *apiError) Error() string { return e.err.Error() }

func badData(format string, args ...any) error {
	return &apiError{typ: "bad_data", status: http.StatusBadRequest, err: fmt.Errorf(format, args...)}
}

// handle runs fn and writes Prometheus' JSON envelope.
func (a *API) handle(fn func(*http.Request) (any, annotations.Annotations, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			writeError(w, badData("invalid form: %v", err))
			return
		}
		data, warns, err := fn(r)
		if err != nil {
			writeError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		bw := bufio.NewWriterSize(w, 64<<10)
		bw.WriteString(`{"status":"success","data":`)
		if err := writeData(bw, data); err != nil {
			a.opts.Logger.Warn("promql: write answer", "err", err)
			return
		}
		if ws := warningStrings(warns); len(ws) > 0 {
			bw.WriteString(`,"warnings":`)
			writeJSON(bw, ws)
		}
		bw.WriteString("}\n")
		bw.Flush()
	}
}

func warningStrings(w annotations.Annotations) []string {
	var out []string
	for _, err := range w {
		out = append(out, err.Error())
	}
	return out
}

func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = classify(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ae.status)
	json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": ae.typ, "error": ae.err.Error()})
}

// classify maps an engine error to Prometheus' errorType and status.
func classify(err error) *apiError {
	switch e := err.(type) {
	case promql.ErrQueryCanceled:
		return &apiError{"canceled", 499, err}
	case promql.ErrQueryTimeout:
		return &apiError{"timeout", http.StatusServiceUnavailable, err}
	case promql.ErrStorage:
		return &apiError{"internal", http.StatusInternalServerError, e.Err}
	}
	if errors.Is(err, context.Canceled) {
		return &apiError{"canceled", 499, err}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &apiError{"timeout", http.StatusServiceUnavailable, err}
	}
	return &apiError{"execution", http.StatusUnprocessableEntity, err}
}

// schema is the request's schema: the db parameter or GreptimeDB's
// x-greptime-db-name header, else public.
func schema(r *http.Request) string {
	if db := r.Form.Get("db"); db != "" {
		return db
	}
	if db := r.Header.Get("x-greptime-db-name"); db != "" {
		return db
	}
	return "public"
}

var (
	minTime = time.Unix(math.MinInt64/1000+62135596801, 0).UTC()
	maxTime = time.Unix(math.MaxInt64/1000-62135596801, 999999999).UTC()
)

// ParseTime parses an API time: Unix seconds (fractions allowed) or
// RFC 3339.
func ParseTime(s string) (time.Time, error) {
	if t, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(t) || math.IsInf(t, 0) || math.Abs(t) > 1e15 {
			return time.Time{}, fmt.Errorf("cannot parse %q to a valid timestamp", s)
		}
		sec, frac := math.Modf(t)
		return time.Unix(int64(sec), int64(math.Round(frac*1000))*int64(time.Millisecond)).UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("cannot parse %q to a valid timestamp", s)
}

// ParseDuration parses an API duration: seconds (fractions allowed) or
// a Prometheus duration ("15s", "1h30m").
func ParseDuration(s string) (time.Duration, error) {
	if d, err := strconv.ParseFloat(s, 64); err == nil {
		ts := d * float64(time.Second)
		if ts > float64(math.MaxInt64) || ts < float64(math.MinInt64) || math.IsNaN(ts) {
			return 0, fmt.Errorf("cannot parse %q to a valid duration: out of range", s)
		}
		return time.Duration(ts), nil
	}
	if d, err := model.ParseDuration(s); err == nil {
		return time.Duration(d), nil
	}
	return 0, fmt.Errorf("cannot parse %q to a valid duration", s)
}

func timeParam(r *http.Request, name string, def time.Time) (time.Time, error) {
	v := r.Form.Get(name)
	if v == "" {
		return def, nil
	}
	t, err := ParseTime(v)
	if err != nil {
		return time.Time{}, badData("invalid parameter %q: %v", name, err)
	}
	return t, nil
}

// queryContext bounds a query by the request's timeout parameter (never
// above the engine's).
func (a *API) queryContext(r *http.Request) (context.Context, context.CancelFunc, error) {
	d := a.opts.Timeout
	if v := r.Form.Get("timeout"); v != "" {
		t, err := ParseDuration(v)
		if err != nil {
			return nil, nil, badData("invalid parameter \"timeout\": %v", err)
		}
		d = min(d, t)
	}
	ctx, cancel := context.WithTimeout(r.Context(), d)
	return ctx, cancel, nil
}

func (a *API) query(r *http.Request) (any, annotations.Annotations, error) {
	ts, err := timeParam(r, "time", time.Now())
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel, err := a.queryContext(r)
	if err != nil {
		return nil, nil, err
	}
	defer cancel()
	return a.Eval(ctx, schema(r), r.Form.Get("query"), ts, ts, 0)
}

func (a *API) queryRange(r *http.Request) (any, annotations.Annotations, error) {
	start, err := timeParam(r, "start", time.Time{})
	if err != nil {
		return nil, nil, err
	}
	end, err := timeParam(r, "end", time.Time{})
	if err != nil {
		return nil, nil, err
	}
	if r.Form.Get("start") == "" || r.Form.Get("end") == "" {
		return nil, nil, badData("start and end are required")
	}
	if end.Before(start) {
		return nil, nil, badData("invalid parameter \"end\": end timestamp must not be before start time")
	}
	step, err := ParseDuration(r.Form.Get("step"))
	if err != nil {
		return nil, nil, badData("invalid parameter \"step\": %v", err)
	}
	if step <= 0 {
		return nil, nil, badData("invalid parameter \"step\": zero or negative query resolution step widths are not accepted. Try a positive integer")
	}
	// Prometheus' bound on points per series.
	if end.Sub(start)/step > 11000 {
		return nil, nil, badData("exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)")
	}
	ctx, cancel, err := a.queryContext(r)
	if err != nil {
		return nil, nil, err
	}
	defer cancel()
	return a.Eval(ctx, schema(r), r.Form.Get("query"), start, end, step)
}

// Eval evaluates a PromQL expression over schema's tables: an instant
// query when step is 0 (start = end), else a range query. The value is a
// promql.Vector, Matrix, Scalar or String wrapped for the API's JSON
// (Result); TQL EVAL reads it through Result.Value.
func (a *API) Eval(ctx context.Context, schema, qs string, start, end time.Time, step time.Duration) (*Result, annotations.Annotations, error) {
	return a.eval(ctx, a.src, schema, qs, start, end, step)
}

func (a *API) eval(ctx context.Context, src Source, schema, qs string, start, end time.Time, step time.Duration) (*Result, annotations.Annotations, error) {
	if qs == "" {
		return nil, nil, badData("invalid parameter \"query\": query is empty")
	}
	rd, err := src.Open(ctx, schema)
	if err != nil {
		return nil, nil, &apiError{"execution", http.StatusUnprocessableEntity, err}
	}
	defer rd.Close()
	var q promql.Query
	if step == 0 {
		q, err = a.engine.NewInstantQuery(ctx, queryable{rd}, nil, qs, start)
	} else {
		q, err = a.engine.NewRangeQuery(ctx, queryable{rd}, nil, qs, start, end, step)
	}
	if err != nil {
		var pe parser.ParseErrors
		if errors.As(err, &pe) {
			return nil, nil, badData("invalid parameter \"query\": %v", err)
		}
		return nil, nil, classify(err)
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return nil, res.Warnings, classify(res.Err)
	}
	return &Result{Value: res.Value}, res.Warnings, nil
}

// Result is a query's answer.
type Result struct{ Value parser.Value }

// matchers parses the match[] parameters: each is a series selector, and
// a series matches if it matches any.
func matchers(r *http.Request) ([][]*labels.Matcher, error) {
	var out [][]*labels.Matcher
	p := parser.NewParser(parser.Options{})
	for _, s := range r.Form["match[]"] {
		ms, err := p.ParseMetricSelector(s)
		if err != nil {
			return nil, badData("invalid parameter \"match[]\": %v", err)
		}
		out = append(out, ms)
	}
	return out, nil
}

// selectRange opens a querier over the request's start/end (default: all
// time, as Prometheus).
func (a *API) selectRange(r *http.Request) (Reader, *querier, error) {
	start, err := timeParam(r, "start", minTime)
	if err != nil {
		return nil, nil, err
	}
	end, err := timeParam(r, "end", maxTime)
	if err != nil {
		return nil, nil, err
	}
	rd, err := a.src.Open(r.Context(), schema(r))
	if err != nil {
		return nil, nil, &apiError{"execution", http.StatusUnprocessableEntity, err}
	}
	return rd, &querier{r: rd, mint: start.UnixMilli(), maxt: end.UnixMilli()}, nil
}

func limitParam(r *http.Request) (int, error) {
	v := r.Form.Get("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, badData("invalid parameter \"limit\": must be a non-negative integer")
	}
	return n, nil
}

// metaRequest reads the parameters of the series and label APIs
// (match[], limit, start, end) and opens their querier.
func (a *API) metaRequest(r *http.Request) ([][]*labels.Matcher, int, Reader, *querier, error) {
	sets, err := matchers(r)
	if err != nil {
		return nil, 0, nil, nil, err
	}
	lim, err := limitParam(r)
	if err != nil {
		return nil, 0, nil, nil, err
	}
	rd, q, err := a.selectRange(r)
	return sets, lim, rd, q, err
}

func (a *API) series(r *http.Request) (any, annotations.Annotations, error) {
	if len(r.Form["match[]"]) == 0 {
		return nil, nil, badData("no match[] parameter provided")
	}
	sets, lim, rd, q, err := a.metaRequest(r)
	if err != nil {
		return nil, nil, err
	}
	defer rd.Close()
	seen := map[string]bool{}
	var out []labels.Labels
	for _, ms := range sets {
		ss := q.Select(r.Context(), true, nil, ms...)
		for ss.Next() {
			l := ss.At().Labels()
			if k := l.String(); !seen[k] {
				seen[k] = true
				out = append(out, l)
			}
		}
		if err := ss.Err(); err != nil {
			return nil, nil, classify(err)
		}
	}
	sortLabelSets(out)
	if lim > 0 && len(out) > lim {
		out = out[:lim]
	}
	return out, nil, nil
}

func (a *API) labelNames(r *http.Request) (any, annotations.Annotations, error) {
	return a.labels(r, "")
}

func (a *API) labelValues(r *http.Request) (any, annotations.Annotations, error) {
	name := r.PathValue("name")
	if strings.HasPrefix(name, "U__") {
		name = model.UnescapeName(name, model.ValueEncodingEscaping)
	}
	if name == "" {
		return nil, nil, badData("invalid label name %q", r.PathValue("name"))
	}
	return a.labels(r, name)
}

// labels lists label names (name == "") or one label's values, over the
// union of the match[] selectors.
func (a *API) labels(r *http.Request, name string) (any, annotations.Annotations, error) {
	sets, lim, rd, q, err := a.metaRequest(r)
	if err != nil {
		return nil, nil, err
	}
	defer rd.Close()
	if len(sets) == 0 {
		sets = [][]*labels.Matcher{nil}
	}
	set := map[string]bool{}
	hints := &storage.LabelHints{Limit: lim}
	for _, ms := range sets {
		var vals []string
		if name == "" {
			vals, _, err = q.LabelNames(r.Context(), hints, ms...)
		} else {
			vals, _, err = q.LabelValues(r.Context(), name, hints, ms...)
		}
		if err != nil {
			return nil, nil, classify(err)
		}
		for _, v := range vals {
			set[v] = true
		}
	}
	out := sortedKeys(set)
	if lim > 0 && len(out) > lim {
		out = out[:lim]
	}
	return out, nil, nil
}

func sortLabelSets(ls []labels.Labels) {
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && labels.Compare(ls[j], ls[j-1]) < 0; j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
		}
	}
}

// --- JSON --------------------------------------------------------------

func writeJSON(w *bufio.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// writeData writes the data member: a Result in Prometheus' shape
// ({"resultType": ..., "result": ...}), series as label objects, else
// plain JSON.
func writeData(w *bufio.Writer, data any) error {
	switch d := data.(type) {
	case *Result:
		return writeResult(w, d.Value)
	case []labels.Labels:
		w.WriteByte('[')
		for i, l := range d {
			if i > 0 {
				w.WriteByte(',')
			}
			writeLabels(w, l)
		}
		w.WriteByte(']')
		return nil
	case []string:
		if d == nil {
			d = []string{}
		}
		return writeJSON(w, d)
	}
	return writeJSON(w, data)
}

func writeResult(w *bufio.Writer, v parser.Value) error {
	switch v := v.(type) {
	case promql.Matrix:
		w.WriteString(`{"resultType":"matrix","result":[`)
		for i, s := range v {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(`{"metric":`)
			writeLabels(w, s.Metric)
			w.WriteString(`,"values":[`)
			for j, p := range s.Floats {
				if j > 0 {
					w.WriteByte(',')
				}
				writePoint(w, p.T, p.F)
			}
			w.WriteString("]}")
		}
		w.WriteString("]}")
	case promql.Vector:
		w.WriteString(`{"resultType":"vector","result":[`)
		for i, s := range v {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(`{"metric":`)
			writeLabels(w, s.Metric)
			w.WriteString(`,"value":`)
			writePoint(w, s.T, s.F)
			w.WriteByte('}')
		}
		w.WriteString("]}")
	case promql.Scalar:
		w.WriteString(`{"resultType":"scalar","result":`)
		writePoint(w, v.T, v.V)
		w.WriteByte('}')
	case promql.String:
		w.WriteString(`{"resultType":"string","result":[`)
		w.WriteString(formatTime(v.T))
		w.WriteByte(',')
		writeJSON(w, v.V)
		w.WriteString("]}")
	default:
		return fmt.Errorf("promql: unexpected result type %T", v)
	}
	return nil
}

func writeLabels(w *bufio.Writer, l labels.Labels) {
	w.WriteByte('{')
	first := true
	l.Range(func(l labels.Label) {
		if !first {
			w.WriteByte(',')
		}
		first = false
		writeJSON(w, l.Name)
		w.WriteByte(':')
		writeJSON(w, l.Value)
	})
	w.WriteByte('}')
}

func writePoint(w *bufio.Writer, t int64, f float64) {
	w.WriteByte('[')
	w.WriteString(formatTime(t))
	w.WriteString(`,"`)
	w.WriteString(FormatValue(f))
	w.WriteString(`"]`)
}

// formatTime writes a ms time as Unix seconds, as Prometheus does.
func formatTime(t int64) string {
	return strconv.FormatFloat(float64(t)/1000, 'f', -1, 64)
}

// FormatValue formats a sample value as Prometheus' API does.
func FormatValue(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
