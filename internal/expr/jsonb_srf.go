package expr

import (
	"strings"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// JSON set-returning functions: jsonb_array_elements[_text],
// jsonb_object_keys and jsonb_each[_text] (json_* are the same functions:
// Runnel's json is jsonb). jsonb_each returns two columns; the binder
// calls it as two functions in lockstep, JSONEachKey and JSONEachValue,
// whose series always have the same length and order (the object's keys
// in jsonb order), so ProjectSet pairs them row by row.

// The names of jsonb_each's two columns as set-returning calls.
const (
	JSONEachKey       = "jsonb_each.key"
	JSONEachValue     = "jsonb_each.value"
	JSONEachValueText = "jsonb_each_text.value"
)

// JSONSRFName returns the canonical name of a JSON set-returning function
// (json_x is jsonb_x) and whether name is one.
func JSONSRFName(name string) (string, bool) {
	n := name
	if strings.HasPrefix(n, "json_") {
		n = "jsonb_" + strings.TrimPrefix(n, "json_")
	}
	switch n {
	case "jsonb_array_elements", "jsonb_array_elements_text", "jsonb_object_keys", "jsonb_each", "jsonb_each_text":
		return n, true
	}
	return "", false
}

func isJSONSRFCall(name string) bool {
	switch name {
	case "jsonb_array_elements", "jsonb_array_elements_text", "jsonb_object_keys", JSONEachKey, JSONEachValue, JSONEachValueText:
		return true
	}
	return false
}

// jsonSRF returns the generator of JSON set-returning call name over the
// jsonb value d; a NULL value yields nothing.
func jsonSRF(name string, d types.Datum) (func() (types.Datum, bool, error), error) {
	if d.IsNull() {
		return func() (types.Datum, bool, error) { return types.NullDatum, false, nil }, nil
	}
	n, err := jsonbArg(d)
	if err != nil {
		return nil, err
	}
	user := strings.TrimSuffix(strings.TrimSuffix(name, ".key"), ".value")
	var out []*jnode
	var keys []string
	switch name {
	case "jsonb_array_elements", "jsonb_array_elements_text":
		switch n.kind {
		case "array":
			out = n.vals
		case "object":
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "cannot extract elements from an object")
		default:
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "cannot extract elements from a scalar")
		}
	default:
		if n.kind != "object" {
			what := "a scalar"
			if n.kind == "array" {
				what = "an array"
			}
			if name == "jsonb_object_keys" {
				return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "cannot call %s on %s", user, what)
			}
			return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "cannot call %s on a non-object", user)
		}
		out, keys = n.vals, n.keys
	}
	i := 0
	return func() (types.Datum, bool, error) {
		if i >= len(out) {
			return types.NullDatum, false, nil
		}
		k, v := "", out[i]
		if keys != nil {
			k = keys[i]
		}
		i++
		switch name {
		case "jsonb_object_keys", JSONEachKey:
			return types.DVarchar(k), true, nil
		case "jsonb_array_elements_text", JSONEachValueText:
			return v.text(), true, nil
		}
		d, err := v.datum()
		return d, err == nil, err
	}, nil
}
