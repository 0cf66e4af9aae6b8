package promql

import (
	"context"
	"errors"
	"sync"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"

	"github.com/runneldb/runnel/internal/sqlerr"
)

// sqlAPI evaluates TQL statements: one engine for the process (an engine
// holds no per-source state).
var sqlAPI = sync.OnceValue(func() *API { return New(nil, Options{}) })

// TQLResult is a PromQL answer as a table (TQL EVAL): one text column per
// label name met in the answer (sorted; NULL where a series lacks it),
// then the time and the value of each point, by series then time.
type TQLResult struct {
	Labels []string
	Rows   []TQLRow
}

// TQLRow is one point: its series' label values ("" for none), its time
// (Unix ms) and value.
type TQLRow struct {
	Labels []string
	T      int64
	V      float64
}

// EvalTQL evaluates TQL EVAL (start, end, step) query over schema's
// tables in src. Start and end are Unix seconds or RFC 3339 times, step
// seconds or a Prometheus duration; start = end is an instant query.
// Errors carry SQLSTATEs: 22023 for a bad argument, 42601 for a PromQL
// syntax error, 22000 for an evaluation error.
func EvalTQL(ctx context.Context, src Source, schema, start, end, step, query string) (*TQLResult, error) {
	st, err := ParseTime(start)
	if err != nil {
		return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "TQL start: %v", err)
	}
	en, err := ParseTime(end)
	if err != nil {
		return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "TQL end: %v", err)
	}
	sp, err := ParseDuration(step)
	if err != nil {
		return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "TQL step: %v", err)
	}
	switch {
	case en.Before(st):
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "TQL end must not be before start")
	case sp <= 0:
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "TQL step must be positive")
	case en.Sub(st)/sp > 11000:
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "TQL: more than 11,000 points per series; increase the step")
	}
	if en.Equal(st) {
		sp = 0
	}
	a := sqlAPI()
	res, _, err := a.eval(ctx, src, schema, query, st, en, sp)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.typ == "bad_data" {
			return nil, sqlerr.Errorf(sqlerr.SyntaxError, "%v", ae.err)
		}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return nil, sqlerr.Errorf(sqlerr.DataException, "%v", err)
	}
	return tabulate(res.Value), nil
}

func tabulate(v any) *TQLResult {
	out := &TQLResult{}
	var ss []promql.Series
	switch v := v.(type) {
	case promql.Matrix:
		ss = v
	case promql.Vector:
		for _, s := range v {
			ss = append(ss, promql.Series{Metric: s.Metric, Floats: []promql.FPoint{{T: s.T, F: s.F}}})
		}
	case promql.Scalar:
		out.Rows = []TQLRow{{T: v.T, V: v.V}}
		return out
	default:
		return out
	}
	set := map[string]bool{}
	for _, s := range ss {
		s.Metric.Range(func(l labels.Label) { set[l.Name] = true })
	}
	out.Labels = sortedKeys(set)
	for _, s := range ss {
		vals := make([]string, len(out.Labels))
		for i, n := range out.Labels {
			vals[i] = s.Metric.Get(n)
		}
		for _, p := range s.Floats {
			out.Rows = append(out.Rows, TQLRow{Labels: vals, T: p.T, V: p.F})
		}
	}
	return out
}
