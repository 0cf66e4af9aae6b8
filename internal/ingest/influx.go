package ingest

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/influxdata/line-protocol/v2/lineprotocol"

	"github.com/runneldb/runnel/internal/types"
)

func (h *handlers) influxWrite(v2 bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		prec, err := precision(q.Get("precision"))
		if err != nil {
			fail(w, err)
			return
		}
		schema := q.Get("db")
		if v2 && q.Get("bucket") != "" {
			schema = q.Get("bucket")
		}
		b, err := body(r)
		if err != nil {
			fail(w, err)
			return
		}
		req, err := ParseLineProtocol(b, prec, time.Now())
		if err != nil {
			fail(w, err)
			return
		}
		req.Schema, req.Hints = schema, hints(r)
		h.write(w, r, req)
	}
}

// precision maps the precision parameter (v1: ns, u/us, ms, s; v2: ns,
// us, ms, s; InfluxDB's n and u too) to the decoder's.
func precision(p string) (lineprotocol.Precision, error) {
	switch p {
	case "", "ns", "n":
		return lineprotocol.Nanosecond, nil
	case "us", "u", "µ":
		return lineprotocol.Microsecond, nil
	case "ms":
		return lineprotocol.Millisecond, nil
	case "s":
		return lineprotocol.Second, nil
	}
	return 0, badRequest("invalid precision %q: use ns, us, ms or s", p)
}

// ParseLineProtocol parses a whole line-protocol body into a request
// grouped by measurement; a line without a time gets now. Any bad line
// fails the whole body with 400 naming the line (nothing is applied).
// Times are stored in microseconds: nanoseconds are truncated.
func ParseLineProtocol(b []byte, prec lineprotocol.Precision, now time.Time) (*Request, error) {
	req := &Request{TimeColumn: InfluxTimeColumn, Protocol: "line protocol"}
	byName := map[string]*TableWrite{}
	var tw *TableWrite
	n := 0
	in := interner{}
	var nTags, nFields int
	// One decoder per line, so every point knows its line for the
	// writer's errors (a type conflict is found only against the table).
	for line := 1; len(b) > 0; line++ {
		var text []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			text, b = b[:i], b[i+1:]
		} else {
			text, b = b, nil
		}
		dec := lineprotocol.NewDecoderWithBytes(text)
		if !dec.Next() {
			if err := dec.Err(); err != nil {
				return nil, badRequest("line %d: %v", line, err)
			}
			continue // empty or a comment
		}
		p := Point{Tags: make([]Tag, 0, nTags), Fields: make([]Field, 0, nFields)}
		name, err := parsePoint(dec, prec, now, &p, in)
		if err != nil {
			return nil, badRequest("line %d: %v", line, err)
		}
		p.Line = line
		nTags, nFields = len(p.Tags), len(p.Fields)
		if n++; n > MaxPoints {
			return nil, &httpError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("line %d: more than %d points in one request", line, MaxPoints)}
		}
		if tw == nil || tw.Table != string(name) {
			tw = byName[string(name)]
			if tw == nil {
				tw = &TableWrite{Table: string(name)}
				byName[tw.Table] = tw
				req.Tables = append(req.Tables, tw)
			}
		}
		tw.Points = append(tw.Points, p)
	}
	return req, nil
}

// interner shares one string per distinct tag key, tag value and field
// key of a request: a body repeats them on every line (TSBS's cpu rows: 10
// tags and 10 field names per line, a few hundred distinct values in a
// 5,000-line body), and a string allocated per occurrence was the largest
// allocation of line-protocol ingest. Bounded by the body (MaxBodyBytes).
type interner map[string]string

func (in interner) get(b []byte) string {
	if s, ok := in[string(b)]; ok { // no allocation for the lookup
		return s
	}
	s := string(b)
	in[s] = s
	return s
}

func parsePoint(dec *lineprotocol.Decoder, prec lineprotocol.Precision, now time.Time, p *Point, in interner) ([]byte, error) {
	m, err := dec.Measurement()
	if err != nil {
		return nil, err
	}
	for {
		k, v, err := dec.NextTag()
		if err != nil {
			return nil, err
		}
		if k == nil {
			break
		}
		p.Tags = append(p.Tags, Tag{Key: in.get(k), Value: in.get(v)})
	}
	for {
		k, v, err := dec.NextField()
		if err != nil {
			return nil, err
		}
		if k == nil {
			break
		}
		f := Field{Key: in.get(k)}
		switch v.Kind() {
		case lineprotocol.Float:
			f.Value = types.DFloat64(v.FloatV())
		case lineprotocol.Int:
			f.Value = types.DInt64(v.IntV())
		case lineprotocol.Uint:
			u := v.UintV()
			if u > math.MaxInt64 {
				return nil, fmt.Errorf("field %q: unsigned value %d is out of the range of bigint", k, u)
			}
			f.Value = types.DInt64(int64(u))
		case lineprotocol.String:
			f.Value = types.DVarchar(v.StringV())
		case lineprotocol.Bool:
			f.Value = types.DBool(v.BoolV())
		}
		p.Fields = append(p.Fields, f)
	}
	t, err := dec.Time(prec, now)
	if err != nil {
		return nil, err
	}
	if dec.Next() {
		return nil, fmt.Errorf("more than one point on a line")
	}
	p.Time = t.UnixMicro()
	return m, nil
}
