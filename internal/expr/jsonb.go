package expr

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// jsonb values are canonical JSON text (see types.ParseJsonb). The
// operators here parse that text into a small ordered tree, work on it and
// print it back through types.ParseJsonb so results are canonical again.

type jnode struct {
	kind string // object, array, string, number, boolean, null
	s    string // string value, number text, "true"/"false"
	keys []string
	vals []*jnode
}

func jsonKindOf(s string) string {
	if s == "" {
		return "null"
	}
	switch s[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func parseJ(s string) (*jnode, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	n, err := readJ(dec)
	if err != nil {
		return nil, sqlerr.Wrap(err, sqlerr.DataCorrupted, "corrupt jsonb value")
	}
	return n, nil
}

func readJ(dec *json.Decoder) (*jnode, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			n := &jnode{kind: "array"}
			for dec.More() {
				v, err := readJ(dec)
				if err != nil {
					return nil, err
				}
				n.vals = append(n.vals, v)
			}
			_, err := dec.Token()
			return n, err
		}
		n := &jnode{kind: "object"}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := readJ(dec)
			if err != nil {
				return nil, err
			}
			n.keys = append(n.keys, kt.(string))
			n.vals = append(n.vals, v)
		}
		_, err := dec.Token()
		return n, err
	case string:
		return &jnode{kind: "string", s: t}, nil
	case json.Number:
		return &jnode{kind: "number", s: string(t)}, nil
	case bool:
		if t {
			return &jnode{kind: "boolean", s: "true"}, nil
		}
		return &jnode{kind: "boolean", s: "false"}, nil
	}
	return &jnode{kind: "null"}, nil
}

func (n *jnode) appendTo(b []byte) []byte {
	switch n.kind {
	case "object":
		b = append(b, '{')
		for i, k := range n.keys {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = types.AppendJSONString(b, k)
			b = append(b, ": "...)
			b = n.vals[i].appendTo(b)
		}
		return append(b, '}')
	case "array":
		b = append(b, '[')
		for i, v := range n.vals {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = v.appendTo(b)
		}
		return append(b, ']')
	case "string":
		return types.AppendJSONString(b, n.s)
	case "number", "boolean":
		return append(b, n.s...)
	}
	return append(b, "null"...)
}

func (n *jnode) datum() (types.Datum, error) {
	c, err := types.ParseJsonb(string(n.appendTo(nil)))
	if err != nil {
		return types.NullDatum, err
	}
	return types.DJsonb(c), nil
}

// text is the ->> rendering: strings unquoted, null as SQL NULL.
func (n *jnode) text() types.Datum {
	switch n.kind {
	case "null":
		return types.NullDatum
	case "string":
		return types.DVarchar(n.s)
	}
	return types.DVarchar(string(n.appendTo(nil)))
}

func (n *jnode) field(k string) *jnode {
	if n.kind != "object" {
		return nil
	}
	for i, kk := range n.keys {
		if kk == k {
			return n.vals[i]
		}
	}
	return nil
}

func (n *jnode) index(i int64) *jnode {
	if n.kind != "array" {
		// PostgreSQL stores a scalar as a one-element "raw scalar" array,
		// so element 0 (or -1) of a scalar is the scalar itself.
		if n.kind != "object" && (i == 0 || i == -1) {
			return n
		}
		return nil
	}
	if i < 0 {
		i += int64(len(n.vals))
	}
	if i < 0 || i >= int64(len(n.vals)) {
		return nil
	}
	return n.vals[i]
}

// step follows one path element: an object key, or an array index given
// as text.
func (n *jnode) step(p string) *jnode {
	if n.kind == "array" {
		i, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return nil
		}
		return n.index(i)
	}
	return n.field(p)
}

// contains is jsonb @>: every value in b is found in a (arrays as sets,
// objects by key, scalars by equality; a top-level array contains a scalar
// element).
func contains(a, b *jnode, top bool) bool {
	if a.kind != b.kind {
		if top && a.kind == "array" && b.kind != "array" && b.kind != "object" {
			for _, v := range a.vals {
				if contains(v, b, false) {
					return true
				}
			}
		}
		return false
	}
	switch a.kind {
	case "object":
		for i, k := range b.keys {
			av := a.field(k)
			if av == nil || !contains(av, b.vals[i], false) {
				return false
			}
		}
		return true
	case "array":
		for _, bv := range b.vals {
			found := false
			for _, av := range a.vals {
				if bv.kind != "array" && bv.kind != "object" && av.kind != bv.kind {
					continue
				}
				if contains(av, bv, false) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	case "number":
		x, e1 := types.ParseText(a.s, types.Numeric, nil)
		y, e2 := types.ParseText(b.s, types.Numeric, nil)
		return e1 == nil && e2 == nil && types.Compare(x, y) == 0
	}
	return a.s == b.s
}

// parseTextArray reads a PostgreSQL text[] literal such as {a,"b c",d}
// (Runnel has no array type; path and key-list operands arrive as text).
func parseTextArray(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, sqlError(sqlerr.InvalidTextRepresentation, "malformed array literal: \"%s\"", s)
	}
	body := s[1 : len(s)-1]
	var out []string
	var cur strings.Builder
	inQ, any := false, false
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case inQ && c == '\\' && i+1 < len(body):
			i++
			cur.WriteByte(body[i])
		case c == '"':
			inQ = !inQ
			any = true
		case c == ',' && !inQ:
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
			any = false
		default:
			cur.WriteByte(c)
			any = true
		}
	}
	if any || len(out) > 0 {
		out = append(out, strings.TrimSpace(cur.String()))
	}
	return out, nil
}

func jsonbArg(d types.Datum) (*jnode, error) { return parseJ(d.Str()) }

func jsonGet(asText bool, byIndex bool) func(a, b types.Datum) (types.Datum, error) {
	return func(a, b types.Datum) (types.Datum, error) {
		n, err := jsonbArg(a)
		if err != nil {
			return types.NullDatum, err
		}
		var r *jnode
		if byIndex {
			r = n.index(b.Int())
		} else {
			r = n.field(b.Str())
		}
		if r == nil {
			return types.NullDatum, nil
		}
		if asText {
			return r.text(), nil
		}
		return r.datum()
	}
}

func jsonPath(asText bool) func(a, b types.Datum) (types.Datum, error) {
	return func(a, b types.Datum) (types.Datum, error) {
		path, err := parseTextArray(b.Str())
		if err != nil {
			return types.NullDatum, err
		}
		n, err := jsonbArg(a)
		if err != nil {
			return types.NullDatum, err
		}
		for _, p := range path {
			if n = n.step(p); n == nil {
				return types.NullDatum, nil
			}
		}
		if asText {
			return n.text(), nil
		}
		return n.datum()
	}
}

// toJSONNode converts a SQL value to JSON as to_jsonb does.
func toJSONNode(ctx *EvalContext, d types.Datum, t types.Type) (*jnode, error) {
	if d.IsNull() {
		return &jnode{kind: "null"}, nil
	}
	switch t.Kind {
	case types.KindJsonb:
		return parseJ(d.Str())
	case types.KindBool:
		if d.Bool() {
			return &jnode{kind: "boolean", s: "true"}, nil
		}
		return &jnode{kind: "boolean", s: "false"}, nil
	case types.KindInt16, types.KindInt32, types.KindInt64, types.KindNumeric, types.KindFloat32, types.KindFloat64:
		s := types.FormatText(d, t, nil)
		if _, err := strconv.ParseFloat(s, 64); err != nil || strings.ContainsAny(s, "nN") {
			return &jnode{kind: "string", s: s}, nil // NaN, Infinity
		}
		return &jnode{kind: "number", s: s}, nil
	case types.KindTimestamp, types.KindTimestamptz, types.KindDate:
		s := types.FormatText(d, t, fmtOpts(ctx))
		if t.Kind != types.KindDate {
			s = strings.Replace(s, " ", "T", 1)
			if t.Kind == types.KindTimestamptz {
				// +00 -> +00:00
				if i := strings.LastIndexAny(s, "+-"); i > 10 && len(s)-i == 3 {
					s += ":00"
				}
			}
		}
		return &jnode{kind: "string", s: s}, nil
	}
	return &jnode{kind: "string", s: types.FormatText(d, t, fmtOpts(ctx))}, nil
}

// jsonBuild is jsonb_build_object / jsonb_build_array / to_jsonb: the
// arguments keep their own types.
type jsonBuild struct {
	name    string // the jsonb function computed
	display string // the name called (json_build_object is computed as jsonb_build_object)
	args    []Expr
}

func (j *jsonBuild) Type() types.Type { return types.Jsonb }
func (j *jsonBuild) String() string {
	parts := make([]string, len(j.args))
	for i, a := range j.args {
		parts[i] = a.String()
	}
	return j.display + "(" + strings.Join(parts, ", ") + ")"
}

func (j *jsonBuild) Eval(ctx *EvalContext, row types.Row) (types.Datum, error) {
	vals := make([]*jnode, len(j.args))
	for i, a := range j.args {
		v, err := a.Eval(ctx, row)
		if err != nil {
			return types.NullDatum, err
		}
		if j.name == "to_jsonb" && v.IsNull() {
			return types.NullDatum, nil
		}
		if j.name == "jsonb_build_object" && i%2 == 0 {
			if v.IsNull() {
				return types.NullDatum, sqlError(codeInvalidParameterValue, "argument %d: key must not be null", i+1)
			}
			vals[i] = &jnode{kind: "string", s: types.FormatText(v, a.Type(), fmtOpts(ctx))}
			continue
		}
		n, err := toJSONNode(ctx, v, a.Type())
		if err != nil {
			return types.NullDatum, err
		}
		vals[i] = n
	}
	var out *jnode
	switch j.name {
	case "to_jsonb":
		out = vals[0]
	case "jsonb_build_array":
		out = &jnode{kind: "array", vals: vals}
	default:
		out = &jnode{kind: "object"}
		for i := 0; i+1 < len(vals); i += 2 {
			out.keys = append(out.keys, vals[i].s)
			out.vals = append(out.vals, vals[i+1])
		}
	}
	return out.datum()
}

func newJSONBuild(display string) func(args []Expr) (Expr, error) {
	name := display
	switch display {
	case "json_build_object", "json_build_array", "to_json":
		name = strings.Replace(display, "json", "jsonb", 1)
	}
	return func(args []Expr) (Expr, error) {
		switch {
		case name == "to_jsonb" && len(args) != 1:
			return nil, undefinedFunction(name, exprTypes(args))
		case name == "jsonb_build_object" && len(args)%2 != 0:
			return nil, sqlError(codeInvalidParameterValue, "argument list must have even number of elements").(*sqlerr.Error).WithHint("The arguments of jsonb_build_object() must consist of alternating keys and values.")
		}
		out := make([]Expr, len(args))
		for i, a := range args {
			c, err := CoerceUnknown(a, types.Text)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return &jsonBuild{name: name, display: display, args: out}, nil
	}
}

func init() {
	T := func(ts ...types.Type) []types.Type { return ts }
	J, X, I := types.Jsonb, types.Text, types.Int32
	regBinop("->", &overload{args: T(J, X), ret: J, fn2: jsonGet(false, false)})
	regBinop("->", &overload{args: T(J, I), ret: J, fn2: jsonGet(false, true)})
	regBinop("->>", &overload{args: T(J, X), ret: X, fn2: jsonGet(true, false)})
	regBinop("->>", &overload{args: T(J, I), ret: X, fn2: jsonGet(true, true)})
	regBinop("#>", &overload{args: T(J, X), ret: J, fn2: jsonPath(false)})
	regBinop("#>>", &overload{args: T(J, X), ret: X, fn2: jsonPath(true)})
	regBinop("@>", &overload{args: T(J, J), ret: types.Bool, fn2: func(a, b types.Datum) (types.Datum, error) {
		x, err := jsonbArg(a)
		if err != nil {
			return types.NullDatum, err
		}
		y, err := jsonbArg(b)
		if err != nil {
			return types.NullDatum, err
		}
		return types.DBool(contains(x, y, true)), nil
	}})
	regBinop("<@", &overload{args: T(J, J), ret: types.Bool, fn2: func(a, b types.Datum) (types.Datum, error) {
		x, err := jsonbArg(b)
		if err != nil {
			return types.NullDatum, err
		}
		y, err := jsonbArg(a)
		if err != nil {
			return types.NullDatum, err
		}
		return types.DBool(contains(x, y, true)), nil
	}})
	hasKey := func(n *jnode, k string) bool {
		switch n.kind {
		case "object":
			return n.field(k) != nil
		case "array":
			for _, v := range n.vals {
				if v.kind == "string" && v.s == k {
					return true
				}
			}
		case "string":
			return n.s == k
		}
		return false
	}
	regBinop("?", &overload{args: T(J, X), ret: types.Bool, fn2: func(a, b types.Datum) (types.Datum, error) {
		n, err := jsonbArg(a)
		if err != nil {
			return types.NullDatum, err
		}
		return types.DBool(hasKey(n, b.Str())), nil
	}})
	for _, op := range []string{"?|", "?&"} {
		all := op == "?&"
		regBinop(op, &overload{args: T(J, X), ret: types.Bool, fn2: func(a, b types.Datum) (types.Datum, error) {
			n, err := jsonbArg(a)
			if err != nil {
				return types.NullDatum, err
			}
			keys, err := parseTextArray(b.Str())
			if err != nil {
				return types.NullDatum, err
			}
			for _, k := range keys {
				if hasKey(n, k) != all {
					return types.DBool(!all), nil
				}
			}
			return types.DBool(all), nil
		}})
	}
	regBinop("||", &overload{args: T(J, J), ret: J, fn2: func(a, b types.Datum) (types.Datum, error) {
		x, err := jsonbArg(a)
		if err != nil {
			return types.NullDatum, err
		}
		y, err := jsonbArg(b)
		if err != nil {
			return types.NullDatum, err
		}
		switch {
		case x.kind == "object" && y.kind == "object":
			for i, k := range y.keys {
				if j := indexOf(x.keys, k); j >= 0 {
					x.vals[j] = y.vals[i]
				} else {
					x.keys = append(x.keys, k)
					x.vals = append(x.vals, y.vals[i])
				}
			}
			return x.datum()
		}
		wrap := func(n *jnode) []*jnode {
			if n.kind == "array" {
				return n.vals
			}
			return []*jnode{n}
		}
		return (&jnode{kind: "array", vals: append(wrap(x), wrap(y)...)}).datum()
	}})
	regBinop("-", &overload{args: T(J, X), ret: J, fn2: func(a, b types.Datum) (types.Datum, error) {
		n, err := jsonbArg(a)
		if err != nil {
			return types.NullDatum, err
		}
		switch n.kind {
		case "object":
			if j := indexOf(n.keys, b.Str()); j >= 0 {
				n.keys = append(n.keys[:j], n.keys[j+1:]...)
				n.vals = append(n.vals[:j], n.vals[j+1:]...)
			}
		case "array":
			var keep []*jnode
			for _, v := range n.vals {
				if !(v.kind == "string" && v.s == b.Str()) {
					keep = append(keep, v)
				}
			}
			n.vals = keep
		default:
			return types.NullDatum, sqlError(codeInvalidParameterValue, "cannot delete from scalar")
		}
		return n.datum()
	}})
	regBinop("-", &overload{args: T(J, I), ret: J, fn2: func(a, b types.Datum) (types.Datum, error) {
		n, err := jsonbArg(a)
		if err != nil {
			return types.NullDatum, err
		}
		switch n.kind {
		case "array":
			i := b.Int()
			if i < 0 {
				i += int64(len(n.vals))
			}
			if i >= 0 && i < int64(len(n.vals)) {
				n.vals = append(n.vals[:i], n.vals[i+1:]...)
			}
		case "object":
			return types.NullDatum, sqlError(codeInvalidParameterValue, "cannot delete from object using integer index")
		default:
			return types.NullDatum, sqlError(codeInvalidParameterValue, "cannot delete from scalar")
		}
		return n.datum()
	}})
	regFunc("jsonb_typeof", &overload{args: T(J), ret: X, fn1: func(a types.Datum) (types.Datum, error) {
		return types.DVarchar(jsonKindOf(a.Str())), nil
	}})
	regFunc("jsonb_array_length", &overload{args: T(J), ret: I, fn1: func(a types.Datum) (types.Datum, error) {
		n, err := jsonbArg(a)
		if err != nil {
			return types.NullDatum, err
		}
		switch n.kind {
		case "array":
			return types.DInt32(int32(len(n.vals))), nil
		case "object":
			return types.NullDatum, sqlError(codeInvalidParameterValue, "cannot get array length of a non-array")
		}
		return types.NullDatum, sqlError(codeInvalidParameterValue, "cannot get array length of a scalar")
	}})
	regFunc("jsonb_extract_path", &overload{args: T(J, X), variadic: true, ret: J, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		n, err := jsonbArg(a[0])
		if err != nil {
			return types.NullDatum, err
		}
		for _, p := range a[1:] {
			if n = n.step(p.Str()); n == nil {
				return types.NullDatum, nil
			}
		}
		return n.datum()
	}})
	regFunc("jsonb_extract_path_text", &overload{args: T(J, X), variadic: true, ret: X, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		n, err := jsonbArg(a[0])
		if err != nil {
			return types.NullDatum, err
		}
		for _, p := range a[1:] {
			if n = n.step(p.Str()); n == nil {
				return types.NullDatum, nil
			}
		}
		return n.text(), nil
	}})
	// Runnel has no json type: json_build_object, json_build_array and
	// to_json (SQLAlchemy's column reflection calls json_build_object)
	// build the same values as jsonb. The difference shows only in text
	// output: json keeps the keys' order, duplicates and spacing as built,
	// jsonb prints them normalized.
	for _, n := range []string{"jsonb_build_object", "jsonb_build_array", "to_jsonb", "json_build_object", "json_build_array", "to_json"} {
		specialFuncs[n] = newJSONBuild(n)
	}
}

func indexOf(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}

// jsonbCompare orders jsonb values as PostgreSQL's jsonb btree opclass
// does: by type (null < string < number < boolean < array < object, a
// top-level scalar counting as its scalar), arrays by length then
// elements, objects by pair count then key/value pairs in storage order,
// numbers by numeric value, strings bytewise (C collation).
func jsonbCompare(a, b *jnode) int {
	rank := func(n *jnode) int {
		switch n.kind {
		case "null":
			return 0
		case "string":
			return 1
		case "number":
			return 2
		case "boolean":
			return 3
		case "array":
			return 4
		}
		return 5
	}
	ra, rb := rank(a), rank(b)
	if ra != rb {
		return cmpInt(ra, rb)
	}
	switch a.kind {
	case "string":
		return strings.Compare(a.s, b.s)
	case "number":
		x, e1 := types.ParseText(a.s, types.Numeric, nil)
		y, e2 := types.ParseText(b.s, types.Numeric, nil)
		if e1 != nil || e2 != nil {
			return strings.Compare(a.s, b.s)
		}
		return types.Compare(x, y)
	case "boolean":
		return strings.Compare(a.s, b.s) // "false" < "true"
	case "array":
		if len(a.vals) != len(b.vals) {
			return cmpInt(len(a.vals), len(b.vals))
		}
		for i := range a.vals {
			if c := jsonbCompare(a.vals[i], b.vals[i]); c != 0 {
				return c
			}
		}
		return 0
	case "object":
		if len(a.keys) != len(b.keys) {
			return cmpInt(len(a.keys), len(b.keys))
		}
		for i := range a.keys {
			if c := strings.Compare(a.keys[i], b.keys[i]); c != 0 {
				return c
			}
			if c := jsonbCompare(a.vals[i], b.vals[i]); c != 0 {
				return c
			}
		}
	}
	return 0
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func jsonbCmpOp(op string) func(a, b types.Datum) (types.Datum, error) {
	return func(a, b types.Datum) (types.Datum, error) {
		if a.Str() == b.Str() {
			return types.DBool(op == "=" || op == "<=" || op == ">="), nil
		}
		x, err := jsonbArg(a)
		if err != nil {
			return types.NullDatum, err
		}
		y, err := jsonbArg(b)
		if err != nil {
			return types.NullDatum, err
		}
		c := jsonbCompareTop(x, y)
		var r bool
		switch op {
		case "=":
			r = c == 0
		case "<>":
			r = c != 0
		case "<":
			r = c < 0
		case "<=":
			r = c <= 0
		case ">":
			r = c > 0
		case ">=":
			r = c >= 0
		}
		return types.DBool(r), nil
	}
}

// jsonbCompareTop compares two top-level jsonb values. PostgreSQL stores a
// top-level scalar as a one-element "raw scalar" array, so at the top
// level a scalar and an array compare as arrays: a raw scalar sorts before
// a real array of the same length, and lengths decide first (which is why
// '[]' sorts below every scalar, even null). Objects sort above both.
func jsonbCompareTop(a, b *jnode) int {
	arrayLike := func(n *jnode) bool { return n.kind != "object" }
	if !arrayLike(a) || !arrayLike(b) {
		return jsonbCompare(a, b)
	}
	elems := func(n *jnode) ([]*jnode, bool) {
		if n.kind == "array" {
			return n.vals, false
		}
		return []*jnode{n}, true
	}
	ea, rawA := elems(a)
	eb, rawB := elems(b)
	res := 0
	if rawA != rawB {
		res = 1
		if rawA {
			res = -1
		}
	}
	if len(ea) != len(eb) {
		res = cmpInt(len(ea), len(eb))
	}
	if res != 0 {
		return res
	}
	for i := range ea {
		if c := jsonbCompare(ea[i], eb[i]); c != 0 {
			return c
		}
	}
	return 0
}
