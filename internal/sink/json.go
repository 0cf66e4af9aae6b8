package sink

import (
	"encoding/json"

	"github.com/runneldb/runnel/internal/types"
)

// JSONValue renders a datum for a JSON document: integers, floats and
// booleans as JSON numbers and booleans, NULL as null, every other type as
// its PostgreSQL text (the kafka and file connectors' ENCODE JSON).
func JSONValue(d types.Datum, ty types.Type) any {
	if d.IsNull() {
		return nil
	}
	switch ty.Kind {
	case types.KindInt16, types.KindInt32, types.KindInt64:
		return d.Int()
	case types.KindFloat32, types.KindFloat64:
		return d.Float()
	case types.KindBool:
		return d.Bool()
	}
	return types.FormatText(d, ty, nil)
}

// AppendJSONObject appends to b a JSON object of the columns idx of r
// (named and typed by cols), in that order.
func AppendJSONObject(b []byte, cols []Column, r types.Row, idx []int) []byte {
	b = append(b, '{')
	for i, c := range idx {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(cols[c].Name)
		v, err := json.Marshal(JSONValue(r[c], cols[c].Type))
		if err != nil {
			// NaN and ±Inf have no JSON number: their text, as a string.
			v, _ = json.Marshal(types.FormatText(r[c], cols[c].Type, nil))
		}
		b = append(b, k...)
		b = append(b, ':')
		b = append(b, v...)
	}
	return append(b, '}')
}

// AllColumns returns 0..n-1: every column of a sink with n columns.
func AllColumns(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
