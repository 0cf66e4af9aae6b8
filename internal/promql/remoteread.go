package promql

import (
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
)

const (
	// maxReadRequestBytes bounds a remote-read request, compressed and
	// decompressed (a request is a few matchers per query).
	maxReadRequestBytes = 8 << 20
	// MaxReadSamples bounds the samples of one remote-read answer
	// (Prometheus' --storage.remote.read-sample-limit default).
	MaxReadSamples = 50_000_000
)

// remoteRead is Prometheus remote read 1.0 with the SAMPLES response: a
// snappy-compressed protobuf ReadRequest in, a snappy-compressed
// ReadResponse out, one QueryResult per query, each query read from the
// same snapshot (Select with its time range and matchers pushed down).
func (a *API) remoteRead(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, format string, args ...any) {
		http.Error(w, fmt.Sprintf(format, args...), status)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReadRequestBytes+1))
	if err != nil {
		fail(http.StatusBadRequest, "remote read: %v", err)
		return
	}
	if len(body) > maxReadRequestBytes {
		fail(http.StatusRequestEntityTooLarge, "remote read: request over %d bytes", maxReadRequestBytes)
		return
	}
	if n, err := snappy.DecodedLen(body); err != nil || n > maxReadRequestBytes {
		fail(http.StatusBadRequest, "remote read: body is not snappy-compressed or decompresses over %d bytes", maxReadRequestBytes)
		return
	}
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		fail(http.StatusBadRequest, "remote read: body is not snappy-compressed: %v", err)
		return
	}
	var req prompb.ReadRequest
	if err := req.Unmarshal(raw); err != nil {
		fail(http.StatusBadRequest, "remote read: body is not a ReadRequest: %v", err)
		return
	}
	if len(req.AcceptedResponseTypes) > 0 && !slices.Contains(req.AcceptedResponseTypes, prompb.ReadRequest_SAMPLES) {
		fail(http.StatusBadRequest, "remote read: only the SAMPLES response type is supported")
		return
	}
	if err := r.ParseForm(); err != nil {
		fail(http.StatusBadRequest, "remote read: %v", err)
		return
	}
	rd, err := a.src.Open(r.Context(), schema(r))
	if err != nil {
		fail(http.StatusInternalServerError, "remote read: %v", err)
		return
	}
	defer rd.Close()
	resp := prompb.ReadResponse{Results: make([]*prompb.QueryResult, len(req.Queries))}
	samples := 0
	for i, q := range req.Queries {
		ms, err := fromLabelMatchers(q.Matchers)
		if err != nil {
			fail(http.StatusBadRequest, "remote read: query %d: %v", i+1, err)
			return
		}
		qr := &querier{r: rd, mint: q.StartTimestampMs, maxt: q.EndTimestampMs}
		ss := qr.Select(r.Context(), true, &storage.SelectHints{Start: q.StartTimestampMs, End: q.EndTimestampMs}, ms...)
		res := &prompb.QueryResult{}
		for ss.Next() {
			s := ss.At().(*series)
			if samples += len(s.s); samples > MaxReadSamples {
				fail(http.StatusBadRequest, "remote read: exceeded sample limit (%d)", MaxReadSamples)
				return
			}
			ts := &prompb.TimeSeries{Samples: make([]prompb.Sample, len(s.s))}
			s.lset.Range(func(l labels.Label) { ts.Labels = append(ts.Labels, prompb.Label{Name: l.Name, Value: l.Value}) })
			for j, x := range s.s {
				ts.Samples[j] = prompb.Sample{Timestamp: x.t, Value: x.f}
			}
			res.Timeseries = append(res.Timeseries, ts)
		}
		if err := ss.Err(); err != nil {
			fail(http.StatusInternalServerError, "remote read: %v", err)
			return
		}
		resp.Results[i] = res
	}
	out, err := resp.Marshal()
	if err != nil {
		fail(http.StatusInternalServerError, "remote read: %v", err)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Header().Set("Content-Encoding", "snappy")
	w.Write(snappy.Encode(nil, out))
}

func fromLabelMatchers(pms []*prompb.LabelMatcher) ([]*labels.Matcher, error) {
	out := make([]*labels.Matcher, 0, len(pms))
	for _, pm := range pms {
		var t labels.MatchType
		switch pm.Type {
		case prompb.LabelMatcher_EQ:
			t = labels.MatchEqual
		case prompb.LabelMatcher_NEQ:
			t = labels.MatchNotEqual
		case prompb.LabelMatcher_RE:
			t = labels.MatchRegexp
		case prompb.LabelMatcher_NRE:
			t = labels.MatchNotRegexp
		default:
			return nil, fmt.Errorf("unknown matcher type %d", pm.Type)
		}
		m, err := labels.NewMatcher(t, pm.Name, pm.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
