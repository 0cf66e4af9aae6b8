package ingest

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/runneldb/runnel/internal/types"
)

// otlpWrite is OTLP/HTTP metrics: an ExportMetricsServiceRequest as
// protobuf (application/x-protobuf, the default) or JSON
// (application/json), optionally gzipped. Success is 200 with an empty
// ExportMetricsServiceResponse in the request's encoding, as the OTLP
// specification asks; failures are GreptimeDB's JSON errors.
func (h *handlers) otlpWrite(w http.ResponseWriter, r *http.Request) {
	b, err := body(r)
	if err != nil {
		fail(w, err)
		return
	}
	isJSON := strings.HasPrefix(strings.ToLower(r.Header.Get("Content-Type")), "application/json")
	req, err := ParseOTLPMetrics(b, isJSON)
	if err != nil {
		fail(w, err)
		return
	}
	req.Schema, req.Hints = r.URL.Query().Get("db"), hints(r)
	if db := r.Header.Get("x-greptime-db-name"); db != "" {
		req.Schema = db
	}
	if req.Rows() > 0 {
		if err := h.w.Write(r.Context(), req); err != nil {
			fail(w, err)
			return
		}
	}
	if isJSON {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("{}"))
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK) // an empty ExportMetricsServiceResponse encodes as no bytes
}

// ParseOTLPMetrics decodes an OTLP metrics export into a request mapped as
// Prometheus maps OTLP (and GreptimeDB with it): one table per metric,
// its name with '.' and other characters outside [a-zA-Z0-9_:] as '_';
// resource and data point attributes as tags (a data point's wins); each
// point a row with greptime_value and greptime_timestamp. Gauges and sums
// give one table; a histogram gives <name>_bucket (one row per bucket,
// cumulative, tag le, +Inf last), <name>_sum and <name>_count; a summary
// gives <name> (tag quantile), <name>_sum and <name>_count. Exponential
// histograms are refused with 400; points flagged "no recorded value" are
// skipped.
func ParseOTLPMetrics(b []byte, isJSON bool) (*Request, error) {
	var md pmetric.Metrics
	var err error
	if isJSON {
		md, err = (&pmetric.JSONUnmarshaler{}).UnmarshalMetrics(b)
	} else {
		md, err = (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics(b)
	}
	if err != nil {
		return nil, badRequest("otlp: body is not an ExportMetricsServiceRequest: %v", err)
	}
	req := &Request{TimeColumn: PromTimeColumn, Protocol: "otlp"}
	byName := map[string]*TableWrite{}
	points := 0
	add := func(table string, tags []Tag, v float64, unixNano uint64, line int) error {
		if points++; points > MaxPoints {
			return &httpError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("otlp: more than %d points in one request", MaxPoints)}
		}
		tw := byName[table]
		if tw == nil {
			tw = &TableWrite{Table: table}
			byName[table] = tw
			req.Tables = append(req.Tables, tw)
		}
		tw.Points = append(tw.Points, Point{Tags: tags, Fields: []Field{{Key: PromValueColumn, Value: types.DFloat64(v)}},
			Time: int64(unixNano / 1000), Line: line})
		return nil
	}
	metricNo := 0
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		rm := rms.At(i)
		resTags := attrTags(rm.Resource().Attributes(), nil)
		sms := rm.ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				metricNo++
				name := metricName(m.Name())
				if name == "" {
					return nil, badRequest("otlp: metric %d has no name", metricNo)
				}
				var err error
				switch m.Type() {
				case pmetric.MetricTypeGauge, pmetric.MetricTypeSum:
					var dps pmetric.NumberDataPointSlice
					if m.Type() == pmetric.MetricTypeSum {
						dps = m.Sum().DataPoints()
					} else {
						dps = m.Gauge().DataPoints()
					}
					for p := 0; p < dps.Len() && err == nil; p++ {
						dp := dps.At(p)
						if dp.Flags().NoRecordedValue() {
							continue
						}
						v := dp.DoubleValue()
						if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
							v = float64(dp.IntValue())
						}
						err = add(name, attrTags(dp.Attributes(), resTags), v, uint64(dp.Timestamp()), metricNo)
					}
				case pmetric.MetricTypeHistogram:
					dps := m.Histogram().DataPoints()
					for p := 0; p < dps.Len() && err == nil; p++ {
						dp := dps.At(p)
						if dp.Flags().NoRecordedValue() {
							continue
						}
						tags, ts := attrTags(dp.Attributes(), resTags), uint64(dp.Timestamp())
						bounds, counts := dp.ExplicitBounds(), dp.BucketCounts()
						var cum uint64
						for q := 0; q < counts.Len() && err == nil; q++ {
							cum += counts.At(q)
							le := math.Inf(1)
							if q < bounds.Len() {
								le = bounds.At(q)
							}
							err = add(name+"_bucket", withTag(tags, "le", formatLe(le)), float64(cum), ts, metricNo)
						}
						if err == nil && dp.HasSum() {
							err = add(name+"_sum", tags, dp.Sum(), ts, metricNo)
						}
						if err == nil {
							err = add(name+"_count", tags, float64(dp.Count()), ts, metricNo)
						}
					}
				case pmetric.MetricTypeSummary:
					dps := m.Summary().DataPoints()
					for p := 0; p < dps.Len() && err == nil; p++ {
						dp := dps.At(p)
						if dp.Flags().NoRecordedValue() {
							continue
						}
						tags, ts := attrTags(dp.Attributes(), resTags), uint64(dp.Timestamp())
						qs := dp.QuantileValues()
						for q := 0; q < qs.Len() && err == nil; q++ {
							err = add(name, withTag(tags, "quantile", strconv.FormatFloat(qs.At(q).Quantile(), 'g', -1, 64)), qs.At(q).Value(), ts, metricNo)
						}
						if err == nil {
							err = add(name+"_sum", tags, dp.Sum(), ts, metricNo)
						}
						if err == nil {
							err = add(name+"_count", tags, float64(dp.Count()), ts, metricNo)
						}
					}
				case pmetric.MetricTypeExponentialHistogram:
					return nil, badRequest("otlp: metric %q: exponential histograms are not supported", m.Name())
				}
				if err != nil {
					return nil, err
				}
			}
		}
	}
	return req, nil
}

// metricName maps an OTLP name to a table name as Prometheus does.
func metricName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == ':' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}

// attrTags turns attributes into tags (keys mapped as metric names)
// after base; a key already in base is overridden.
func attrTags(attrs pcommon.Map, base []Tag) []Tag {
	tags := append([]Tag(nil), base...)
	attrs.Range(func(k string, v pcommon.Value) bool {
		tags = withTag(tags, metricName(k), v.AsString())
		return true
	})
	return tags
}

func withTag(tags []Tag, k, v string) []Tag {
	out := make([]Tag, 0, len(tags)+1)
	for _, t := range tags {
		if t.Key != k {
			out = append(out, t)
		}
	}
	return append(out, Tag{Key: k, Value: v})
}

func formatLe(le float64) string {
	if math.IsInf(le, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(le, 'g', -1, 64)
}
