package expr

import (
	"strconv"
	"strings"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// jsonb functions that rebuild a value: jsonb_pretty, jsonb_strip_nulls,
// jsonb_set and jsonb_insert. Paths are text[] literals read by
// parseTextArray, as the #> operator reads them.

// appendPretty renders n as jsonb_pretty does: four spaces per level, one
// member per line, "key": value.
func (n *jnode) appendPretty(b []byte, level int) []byte {
	indent := func(b []byte, l int) []byte {
		for i := 0; i < l; i++ {
			b = append(b, "    "...)
		}
		return b
	}
	switch n.kind {
	case "object", "array":
		open, close := byte('{'), byte('}')
		if n.kind == "array" {
			open, close = '[', ']'
		}
		b = append(b, open, '\n')
		for i, v := range n.vals {
			if i > 0 {
				b = append(b, ",\n"...)
			}
			b = indent(b, level+1)
			if n.kind == "object" {
				b = types.AppendJSONString(b, n.keys[i])
				b = append(b, ": "...)
			}
			b = v.appendPretty(b, level+1)
		}
		if len(n.vals) > 0 {
			b = append(b, '\n')
		}
		b = indent(b, level)
		return append(b, close)
	}
	return n.appendTo(b)
}

// stripNulls drops object members whose value is null, at every depth
// (array elements stay).
func (n *jnode) stripNulls() *jnode {
	switch n.kind {
	case "object":
		out := &jnode{kind: "object"}
		for i, v := range n.vals {
			if v.kind == "null" {
				continue
			}
			out.keys = append(out.keys, n.keys[i])
			out.vals = append(out.vals, v.stripNulls())
		}
		return out
	case "array":
		out := &jnode{kind: "array", vals: make([]*jnode, len(n.vals))}
		for i, v := range n.vals {
			out.vals[i] = v.stripNulls()
		}
		return out
	}
	return n
}

// jsonbPathEdit is jsonb_set (insert false) and jsonb_insert (insert
// true) over a parsed target: it follows path and at its last element
// replaces, creates or inserts nv. A path through a missing key, an index
// out of range or a scalar leaves the target unchanged, as PostgreSQL's
// setPath does; only a scalar target itself is an error.
func jsonbPathEdit(target *jnode, path []string, nv *jnode, create, insert, after bool) (*jnode, error) {
	if target.kind != "object" && target.kind != "array" {
		return nil, sqlError(codeInvalidParameterValue, "cannot set path in scalar")
	}
	if len(path) == 0 {
		return target, nil
	}
	var walk func(n *jnode, level int) (*jnode, error)
	walk = func(n *jnode, level int) (*jnode, error) {
		last := level == len(path)-1
		p := path[level]
		switch n.kind {
		case "object":
			out := &jnode{kind: "object", keys: append([]string(nil), n.keys...), vals: append([]*jnode(nil), n.vals...)}
			for i, k := range n.keys {
				if k != p {
					continue
				}
				if last {
					if insert {
						return nil, sqlError(codeInvalidParameterValue, "cannot replace existing key").(*sqlerr.Error).
							WithHint("Try using the function jsonb_set to replace key value.")
					}
					out.vals[i] = nv
					return out, nil
				}
				v, err := walk(n.vals[i], level+1)
				if err != nil {
					return nil, err
				}
				out.vals[i] = v
				return out, nil
			}
			if last && (create || insert) {
				out.keys = append(out.keys, p)
				out.vals = append(out.vals, nv)
			}
			return out, nil
		case "array":
			idx, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
			if err != nil {
				return nil, sqlError(codeInvalidTextRepresentaion, "path element at position %d is not an integer: \"%s\"", level+1, p)
			}
			cnt := int64(len(n.vals))
			if idx < 0 {
				if -idx > cnt {
					idx = -1 // before the first element
				} else {
					idx += cnt
				}
			}
			out := &jnode{kind: "array", vals: append([]*jnode(nil), n.vals...)}
			switch {
			case idx >= 0 && idx < cnt && !last:
				v, err := walk(n.vals[idx], level+1)
				if err != nil {
					return nil, err
				}
				out.vals[idx] = v
			case idx >= 0 && idx < cnt && insert:
				at := idx
				if after {
					at++
				}
				out.vals = append(out.vals[:at], append([]*jnode{nv}, n.vals[at:]...)...)
			case idx >= 0 && idx < cnt:
				out.vals[idx] = nv
			case last && (create || insert) && idx < 0:
				out.vals = append([]*jnode{nv}, out.vals...)
			case last && (create || insert):
				out.vals = append(out.vals, nv)
			}
			return out, nil
		}
		return n, nil
	}
	return walk(target, 0)
}

func jsonbEdit(a []types.Datum, create, insert, after bool) (types.Datum, error) {
	t, err := jsonbArg(a[0])
	if err != nil {
		return types.NullDatum, err
	}
	path, err := parseTextArray(a[1].Str())
	if err != nil {
		return types.NullDatum, err
	}
	nv, err := jsonbArg(a[2])
	if err != nil {
		return types.NullDatum, err
	}
	out, err := jsonbPathEdit(t, path, nv, create, insert, after)
	if err != nil {
		return types.NullDatum, err
	}
	return out.datum()
}

func init() {
	T := func(ts ...types.Type) []types.Type { return ts }
	J, X, B := types.Jsonb, types.Text, types.Bool
	regFunc("jsonb_pretty", &overload{args: T(J), ret: X, fn1: func(a types.Datum) (types.Datum, error) {
		n, err := jsonbArg(a)
		if err != nil {
			return types.NullDatum, err
		}
		return txt(string(n.appendPretty(nil, 0))), nil
	}})
	regFunc("jsonb_strip_nulls", &overload{args: T(J), ret: J, fn1: func(a types.Datum) (types.Datum, error) {
		n, err := jsonbArg(a)
		if err != nil {
			return types.NullDatum, err
		}
		return n.stripNulls().datum()
	}})
	regFunc("jsonb_set", &overload{uncataloged: true, args: T(J, X, J), ret: J, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return jsonbEdit(a, true, false, false)
	}})
	regFunc("jsonb_set", &overload{uncataloged: true, args: T(J, X, J, B), ret: J, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return jsonbEdit(a, a[3].Bool(), false, false)
	}})
	regFunc("jsonb_insert", &overload{uncataloged: true, args: T(J, X, J), ret: J, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return jsonbEdit(a, false, true, false)
	}})
	regFunc("jsonb_insert", &overload{uncataloged: true, args: T(J, X, J, B), ret: J, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return jsonbEdit(a, false, true, a[3].Bool())
	}})
}
