package ingest

import (
	"fmt"
	"math"
	"net/http"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/runneldb/runnel/internal/types"
)

// promWrite is Prometheus remote write 1.0: a snappy-compressed (block
// format) protobuf WriteRequest.
func (h *handlers) promWrite(w http.ResponseWriter, r *http.Request) {
	b, err := body(r)
	if err != nil {
		fail(w, err)
		return
	}
	req, err := ParseRemoteWrite(b)
	if err != nil {
		fail(w, err)
		return
	}
	req.Schema, req.Hints = r.URL.Query().Get("db"), hints(r)
	h.write(w, r, req)
}

// ParseRemoteWrite decodes a remote-write body into a request: one table
// per metric name (__name__), labels as tags, each sample a row with
// greptime_value. A series without a metric name, an undecodable body or
// a body that decompresses beyond MaxBodyBytes is refused with 400.
// Native histograms are not supported (400); exemplars and metadata are
// ignored.
func ParseRemoteWrite(b []byte) (*Request, error) {
	n, err := snappy.DecodedLen(b)
	if err != nil {
		return nil, badRequest("remote write: body is not snappy-compressed: %v", err)
	}
	if n > MaxBodyBytes {
		return nil, badRequest("remote write: body decompresses to %d bytes, over %d", n, MaxBodyBytes)
	}
	raw, err := snappy.Decode(nil, b)
	if err != nil {
		return nil, badRequest("remote write: body is not snappy-compressed: %v", err)
	}
	var wr prompb.WriteRequest
	if err := wr.Unmarshal(raw); err != nil {
		return nil, badRequest("remote write: body is not a WriteRequest: %v", err)
	}
	req := &Request{TimeColumn: PromTimeColumn, Protocol: "remote write"}
	byName := map[string]*TableWrite{}
	n = 0 // samples so far
	for i, ts := range wr.Timeseries {
		if len(ts.Histograms) > 0 {
			return nil, badRequest("remote write: series %d: native histograms are not supported", i+1)
		}
		name := ""
		tags := make([]Tag, 0, len(ts.Labels))
		for _, l := range ts.Labels {
			if l.Name == "__name__" {
				name = l.Value
				continue
			}
			tags = append(tags, Tag{Key: l.Name, Value: l.Value})
		}
		if name == "" {
			return nil, badRequest("remote write: series %d has no metric name (__name__)", i+1)
		}
		tw := byName[name]
		if tw == nil {
			tw = &TableWrite{Table: name}
			byName[name] = tw
			req.Tables = append(req.Tables, tw)
		}
		if n += len(ts.Samples); n > MaxPoints {
			return nil, &httpError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("remote write: more than %d samples in one request", MaxPoints)}
		}
		for _, s := range ts.Samples {
			if math.IsNaN(s.Value) && math.Float64bits(s.Value) == staleNaN {
				continue // a staleness marker: nothing to store
			}
			tw.Points = append(tw.Points, Point{Tags: tags, Fields: []Field{{Key: PromValueColumn, Value: types.DFloat64(s.Value)}},
				Time: s.Timestamp * 1000, Line: i + 1})
		}
	}
	return req, nil
}

// staleNaN is Prometheus's staleness marker (value.StaleNaN).
const staleNaN = 0x7ff0000000000002
