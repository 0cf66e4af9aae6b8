package expr

import (
	"encoding/binary"
	"errors"
	"math"
	"sort"
	"strings"

	"github.com/cockroachdb/apd/v3"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// Aggregate is a resolved aggregate function with fixed argument types.
//
// The binder calls LookupAggregate with the argument expressions' types,
// then coerces the arguments to ArgTypes (BindAggregateArgs). Executors
// create one AggState per group with NewState (append-only, batch) or
// NewRetractableState (streaming with deletes, sliding window frames).
//
// State contract for streaming:
//   - count, sum, avg, bool_and/bool_or/every, stddev/variance: the state
//     is O(1) and exactly retractable (floats up to rounding); Encode and
//     DecodeState round-trip it compactly, so the streaming engine can keep
//     it in a value column.
//   - min, max, string_agg and any DISTINCT aggregate: a retractable state
//     holds a multiset of its inputs. Encode works but is O(inputs); the
//     streaming engine should keep such inputs in a state table keyed by
//     (group, value) and rebuild the state from it after recovery.
type Aggregate struct {
	Name       string
	ArgTypes   []types.Type
	ResultType types.Type
	Distinct   bool
	// Retractable: NewRetractableState's Retract is exact and O(1)
	// (amortised) without keeping the inputs.
	Retractable bool
	// NeedsInputs: retraction requires keeping inputs (min, max,
	// string_agg, DISTINCT).
	NeedsInputs bool
	// InexactRetract: Retract works but the result after retractions can
	// differ in the last bits from recomputing over the remaining inputs
	// (sum/avg/stddev/variance over real and double precision). The
	// window kernels recompute such aggregates per frame, as PostgreSQL
	// does (it has no inverse transition for them); the streaming engine
	// may accept the drift.
	InexactRetract bool
	newState       func(retractable bool) aggImpl
}

// AggState accumulates one group. Add and Retract take the aggregate's
// arguments (already coerced to ArgTypes); count(*) gets no arguments.
// Rows whose arguments contain a NULL are ignored by strict aggregates, as
// in PostgreSQL. Result may be called any number of times.
type AggState interface {
	Add(args []types.Datum) error
	Retract(args []types.Datum) error
	Result() (types.Datum, error)
	// Encode appends the serialised state to buf. Equal states encode to
	// equal bytes.
	Encode(buf []byte) []byte
	// Decode replaces the state with one produced by Encode.
	Decode(b []byte) error
}

// ErrNotRetractable is returned by Retract on a state made with NewState.
var ErrNotRetractable = errors.New("aggregate state was created append-only and cannot retract")

// errRetractUnknown reports a retraction of a value the state never saw
// (a consistency violation, I6).
func errRetractUnknown(name string) error {
	return sqlerr.Errorf(sqlerr.DataCorrupted, "%s: retracting a value that was never added", name)
}

// aggImpl is the per-aggregate state; the wrapper handles NULLs,
// DISTINCT and the retractable flag.
type aggImpl interface {
	add(args []types.Datum) error
	retract(args []types.Datum) error
	result() (types.Datum, error)
	encode(buf []byte) []byte
	decode(b []byte) ([]byte, error)
}

// NewState returns an append-only accumulator.
func (a *Aggregate) NewState() AggState { return a.makeState(false) }

// NewRetractableState returns an accumulator that supports Retract.
func (a *Aggregate) NewRetractableState() AggState { return a.makeState(true) }

func (a *Aggregate) makeState(retractable bool) AggState {
	s := &aggState{agg: a, impl: a.newState(retractable), retractable: retractable}
	if a.Distinct {
		s.distinct = map[string]int64{}
	}
	return s
}

type aggState struct {
	agg         *Aggregate
	impl        aggImpl
	retractable bool
	// distinct counts each distinct argument tuple; the inner state sees
	// a tuple when its count goes 0 -> 1 and loses it at 1 -> 0.
	distinct map[string]int64
	keyBuf   []byte
}

func (s *aggState) strictSkip(args []types.Datum) bool {
	return StrictSkip(s.agg.Name, args)
}

// StrictSkip reports whether the aggregate name ignores a row with these
// arguments: any NULL argument for most; string_agg only a NULL value (a
// NULL delimiter is allowed); jsonb_agg and jsonb_object_agg none (NULL
// values become JSON null; a NULL key is an error).
func StrictSkip(name string, args []types.Datum) bool {
	switch name {
	case "string_agg":
		return len(args) > 0 && args[0].IsNull()
	case "jsonb_agg", "jsonb_object_agg", "array_agg":
		return false
	}
	for _, a := range args {
		if a.IsNull() {
			return true
		}
	}
	return false
}

func (s *aggState) distinctKey(args []types.Datum) string {
	s.keyBuf = s.keyBuf[:0]
	for i, a := range args {
		s.keyBuf = types.AppendKey(s.keyBuf, a, s.agg.ArgTypes[i], false, false)
	}
	return string(s.keyBuf)
}

func (s *aggState) Add(args []types.Datum) error {
	if s.strictSkip(args) {
		return nil
	}
	if s.distinct != nil {
		k := s.distinctKey(args)
		s.distinct[k]++
		if s.distinct[k] > 1 {
			return nil
		}
	}
	return s.impl.add(args)
}

func (s *aggState) Retract(args []types.Datum) error {
	if !s.retractable {
		return ErrNotRetractable
	}
	if s.strictSkip(args) {
		return nil
	}
	if s.distinct != nil {
		k := s.distinctKey(args)
		n := s.distinct[k]
		if n == 0 {
			return errRetractUnknown(s.agg.Name)
		}
		if n > 1 {
			s.distinct[k] = n - 1
			return nil
		}
		delete(s.distinct, k)
	}
	return s.impl.retract(args)
}

func (s *aggState) Result() (types.Datum, error) { return s.impl.result() }

func (s *aggState) Encode(buf []byte) []byte {
	if s.distinct != nil {
		buf = binary.AppendUvarint(buf, uint64(len(s.distinct)))
		for _, k := range sortedKeys(s.distinct) {
			buf = binary.AppendUvarint(buf, uint64(len(k)))
			buf = append(buf, k...)
			buf = binary.AppendVarint(buf, s.distinct[k])
		}
	}
	return s.impl.encode(buf)
}

func (s *aggState) Decode(b []byte) error {
	if s.distinct != nil {
		n, sz := binary.Uvarint(b)
		if sz <= 0 {
			return errBadState
		}
		b = b[sz:]
		clear(s.distinct)
		for i := uint64(0); i < n; i++ {
			l, sz := binary.Uvarint(b)
			if sz <= 0 || uint64(len(b)-sz) < l {
				return errBadState
			}
			k := string(b[sz : sz+int(l)])
			b = b[sz+int(l):]
			c, sz := binary.Varint(b)
			if sz <= 0 {
				return errBadState
			}
			b = b[sz:]
			s.distinct[k] = c
		}
	}
	s.impl = s.agg.newState(s.retractable)
	rest, err := s.impl.decode(b)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return errBadState
	}
	return nil
}

var errBadState = sqlerr.New(sqlerr.DataCorrupted, "corrupt aggregate state encoding")

// aggSig is one signature of an aggregate.
type aggSig struct {
	args []types.Type
	ret  types.Type
	// retFn computes the result type from the argument types.
	retFn       func(args []types.Type) types.Type
	retractable bool
	needsInputs bool
	inexact     bool
	mk          func(argTypes []types.Type, ret types.Type, retractable bool) aggImpl
}

var aggRegistry = map[string][]*aggSig{}

func regAgg(name string, s *aggSig) { aggRegistry[name] = append(aggRegistry[name], s) }

// IsAggregateName reports whether name is a known aggregate function.
func IsAggregateName(name string) bool {
	_, ok := aggRegistry[strings.ToLower(name)]
	return ok
}

// LookupAggregate resolves an aggregate call. args are the argument
// types; count(*) is name "count" with no args. The usual overload rules
// apply (unknown literals, implicit casts, preferred types).
func LookupAggregate(name string, args []types.Type, distinct bool) (*Aggregate, error) {
	lname := strings.ToLower(name)
	sigs := aggRegistry[lname]
	if len(sigs) == 0 {
		return nil, undefinedFunction(lname, args)
	}
	ovs := make([]*overload, len(sigs))
	for i, s := range sigs {
		ovs[i] = &overload{args: s.args}
	}
	if lname == "count" && len(args) == 1 {
		// count("any")
		return newAggregate(lname, sigs[1], args, distinct), nil
	}
	if lname == "array_agg" && len(args) == 1 {
		if args[0].Kind == types.KindArray {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "array_agg of arrays (multidimensional arrays) is not supported")
		}
		if isUnknown(args[0]) {
			// anynonarray or anyarray: PostgreSQL cannot choose.
			return nil, ambiguousFunction(lname, args)
		}
		if !args[0].CanBeArrayElem() {
			return nil, undefinedFunction(lname, args)
		}
	}
	if anyArgs(sigs[0].args) && len(sigs) == 1 && len(args) == len(sigs[0].args) {
		// jsonb_agg("any"), jsonb_object_agg("any", "any"): the
		// arguments keep their own types.
		return newAggregate(lname, sigs[0], args, distinct), nil
	}
	o, ambiguous := resolveOverload(ovs, args, resolveFunc)
	if o == nil {
		if ambiguous {
			return nil, ambiguousFunction(lname, args)
		}
		return nil, undefinedFunction(lname, args)
	}
	for i, ov := range ovs {
		if ov == o {
			return newAggregate(lname, sigs[i], o.args, distinct), nil
		}
	}
	return nil, undefinedFunction(lname, args)
}

// anyArgs reports whether every argument of a signature is "any".
func anyArgs(ts []types.Type) bool {
	for _, t := range ts {
		if t.Kind != types.KindUnknown {
			return false
		}
	}
	return len(ts) > 0
}

func newAggregate(name string, s *aggSig, argTypes []types.Type, distinct bool) *Aggregate {
	ats := make([]types.Type, len(argTypes))
	for i, t := range argTypes {
		if isUnknown(t) {
			t = types.Text
		}
		ats[i] = t
	}
	ret := s.ret
	if s.retFn != nil {
		ret = s.retFn(ats)
	}
	a := &Aggregate{
		Name: name, ArgTypes: ats, ResultType: ret, Distinct: distinct,
		Retractable:    s.retractable && !distinct,
		NeedsInputs:    s.needsInputs || distinct,
		InexactRetract: s.inexact,
	}
	a.newState = func(retractable bool) aggImpl { return s.mk(ats, ret, retractable) }
	return a
}

// BindAggregateArgs coerces argument expressions to the aggregate's
// argument types.
func BindAggregateArgs(a *Aggregate, args []Expr) ([]Expr, error) {
	out := make([]Expr, len(args))
	for i, e := range args {
		if i >= len(a.ArgTypes) {
			return nil, undefinedFunction(a.Name, exprTypes(args))
		}
		if a.Name == "count" || a.Name == "min" || a.Name == "max" {
			if !isUnknown(e.Type()) {
				out[i] = e
				continue
			}
		}
		c, err := coerceTo(e, a.ArgTypes[i], CastImplicit)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// ---- count ----

type countAgg struct{ n int64 }

func (c *countAgg) add([]types.Datum) error { c.n++; return nil }
func (c *countAgg) retract([]types.Datum) error {
	if c.n == 0 {
		return errRetractUnknown("count")
	}
	c.n--
	return nil
}
func (c *countAgg) result() (types.Datum, error) { return types.DInt64(c.n), nil }
func (c *countAgg) encode(buf []byte) []byte     { return binary.AppendVarint(buf, c.n) }
func (c *countAgg) decode(b []byte) ([]byte, error) {
	v, sz := binary.Varint(b)
	if sz <= 0 {
		return nil, errBadState
	}
	c.n = v
	return b[sz:], nil
}

// ---- sum / avg over integers ----

// intSumAgg sums integers in an int64, switching to an exact decimal when
// the int64 would overflow. n counts non-NULL inputs (sum of nothing is
// NULL; avg divides by n).
type intSumAgg struct {
	n     int64
	small int64
	big   *apd.Decimal
	// mode: 0 sum->int8 (int2/int4 input), 1 sum->numeric (int8 input), 2 avg->numeric
	mode uint8
}

func (s *intSumAgg) add(args []types.Datum) error {
	s.n++
	return s.addVal(args[0].Int())
}

func (s *intSumAgg) addVal(v int64) error {
	if s.big == nil {
		if r, ok := add64(s.small, v); ok {
			s.small = r
			return nil
		}
		s.big = apd.New(s.small, 0)
	}
	_, err := exactCtx.Add(s.big, s.big, apd.New(v, 0))
	return err
}

func (s *intSumAgg) retract(args []types.Datum) error {
	if s.n == 0 {
		return errRetractUnknown("sum")
	}
	s.n--
	v := args[0].Int()
	if v == math.MinInt64 {
		if err := s.addVal(math.MaxInt64); err != nil {
			return err
		}
		return s.addVal(1)
	}
	return s.addVal(-v)
}

func (s *intSumAgg) total() *apd.Decimal {
	if s.big != nil {
		return new(apd.Decimal).Set(s.big)
	}
	return apd.New(s.small, 0)
}

func (s *intSumAgg) result() (types.Datum, error) {
	if s.n == 0 {
		return types.NullDatum, nil
	}
	switch s.mode {
	case 0:
		if s.big != nil {
			v, err := s.big.Int64()
			if err != nil {
				return types.NullDatum, errBigintOutOfRange
			}
			return types.DInt64(v), nil
		}
		return types.DInt64(s.small), nil
	case 1:
		return types.DNumeric(normalizeDec(s.total())), nil
	}
	return numericDiv(types.DNumeric(s.total()), types.DNumeric(apd.New(s.n, 0)))
}

func (s *intSumAgg) encode(buf []byte) []byte {
	buf = binary.AppendVarint(buf, s.n)
	if s.big == nil {
		buf = append(buf, 0)
		return binary.AppendVarint(buf, s.small)
	}
	buf = append(buf, 1)
	return appendDecimal(buf, s.big)
}

func (s *intSumAgg) decode(b []byte) ([]byte, error) {
	n, sz := binary.Varint(b)
	if sz <= 0 || len(b) <= sz {
		return nil, errBadState
	}
	s.n = n
	b = b[sz:]
	tag := b[0]
	b = b[1:]
	if tag == 0 {
		v, sz := binary.Varint(b)
		if sz <= 0 {
			return nil, errBadState
		}
		s.small, s.big = v, nil
		return b[sz:], nil
	}
	d, rest, err := readDecimal(b)
	if err != nil {
		return nil, err
	}
	s.big = d
	return rest, nil
}

func appendDecimal(buf []byte, d *apd.Decimal) []byte {
	t := d.String()
	buf = binary.AppendUvarint(buf, uint64(len(t)))
	return append(buf, t...)
}

func readDecimal(b []byte) (*apd.Decimal, []byte, error) {
	l, sz := binary.Uvarint(b)
	if sz <= 0 || uint64(len(b)-sz) < l {
		return nil, nil, errBadState
	}
	d, _, err := apd.NewFromString(string(b[sz : sz+int(l)]))
	if err != nil {
		return nil, nil, errBadState
	}
	return d, b[sz+int(l):], nil
}

// ---- sum / avg over numeric ----

type numSumAgg struct {
	n   int64
	sum *apd.Decimal
	// NaN and infinities are counted apart so retraction stays exact.
	nan, pinf, ninf int64
	avg             bool
}

func (s *numSumAgg) upd(d *apd.Decimal, sign int64) error {
	s.n += sign
	switch {
	case isNaNDec(d):
		s.nan += sign
	case isInfDec(d) && d.Negative:
		s.ninf += sign
	case isInfDec(d):
		s.pinf += sign
	default:
		if s.sum == nil {
			s.sum = apd.New(0, 0)
		}
		var err error
		if sign > 0 {
			_, err = exactCtx.Add(s.sum, s.sum, d)
		} else {
			_, err = exactCtx.Sub(s.sum, s.sum, d)
		}
		return err
	}
	return nil
}

func (s *numSumAgg) add(args []types.Datum) error { return s.upd(args[0].Decimal(), 1) }
func (s *numSumAgg) retract(args []types.Datum) error {
	if s.n == 0 {
		return errRetractUnknown("sum")
	}
	return s.upd(args[0].Decimal(), -1)
}

func (s *numSumAgg) result() (types.Datum, error) {
	if s.n == 0 {
		return types.NullDatum, nil
	}
	switch {
	case s.nan > 0 || (s.pinf > 0 && s.ninf > 0):
		return types.DNumeric(decNaN()), nil
	case s.pinf > 0:
		return types.DNumeric(decInf(false)), nil
	case s.ninf > 0:
		return types.DNumeric(decInf(true)), nil
	}
	sum := apd.New(0, 0)
	if s.sum != nil {
		sum = new(apd.Decimal).Set(s.sum)
	}
	if !s.avg {
		return types.DNumeric(sum), nil
	}
	return numericDiv(types.DNumeric(sum), types.DNumeric(apd.New(s.n, 0)))
}

func (s *numSumAgg) encode(buf []byte) []byte {
	for _, v := range []int64{s.n, s.nan, s.pinf, s.ninf} {
		buf = binary.AppendVarint(buf, v)
	}
	sum := s.sum
	if sum == nil {
		sum = apd.New(0, 0)
	}
	return appendDecimal(buf, sum)
}

func (s *numSumAgg) decode(b []byte) ([]byte, error) {
	for _, p := range []*int64{&s.n, &s.nan, &s.pinf, &s.ninf} {
		v, sz := binary.Varint(b)
		if sz <= 0 {
			return nil, errBadState
		}
		*p = v
		b = b[sz:]
	}
	d, rest, err := readDecimal(b)
	if err != nil {
		return nil, err
	}
	s.sum = d
	return rest, nil
}

// ---- float sum / avg ----

type floatSumAgg struct {
	n   int64
	sum float64
	f32 bool // sum(real) accumulates and returns real
	avg bool
}

func (s *floatSumAgg) add(args []types.Datum) error {
	s.n++
	if s.f32 {
		s.sum = float64(float32(s.sum) + float32(args[0].Float()))
	} else {
		s.sum += args[0].Float()
	}
	return nil
}

func (s *floatSumAgg) retract(args []types.Datum) error {
	if s.n == 0 {
		return errRetractUnknown("sum")
	}
	s.n--
	if s.n == 0 {
		s.sum = 0
		return nil
	}
	if s.f32 {
		s.sum = float64(float32(s.sum) - float32(args[0].Float()))
	} else {
		s.sum -= args[0].Float()
	}
	return nil
}

func (s *floatSumAgg) result() (types.Datum, error) {
	if s.n == 0 {
		return types.NullDatum, nil
	}
	if s.avg {
		return types.DFloat64(s.sum / float64(s.n)), nil
	}
	if s.f32 {
		return types.DFloat32(float32(s.sum)), nil
	}
	return types.DFloat64(s.sum), nil
}

func (s *floatSumAgg) encode(buf []byte) []byte {
	buf = binary.AppendVarint(buf, s.n)
	return binary.LittleEndian.AppendUint64(buf, math.Float64bits(s.sum))
}

func (s *floatSumAgg) decode(b []byte) ([]byte, error) {
	n, sz := binary.Varint(b)
	if sz <= 0 || len(b) < sz+8 {
		return nil, errBadState
	}
	s.n = n
	s.sum = math.Float64frombits(binary.LittleEndian.Uint64(b[sz:]))
	return b[sz+8:], nil
}

// ---- interval sum / avg ----

type intervalSumAgg struct {
	n   int64
	sum types.IntervalValue
	avg bool
}

func (s *intervalSumAgg) add(args []types.Datum) error {
	r, err := intervalAdd(s.sum, args[0].Interval())
	if err != nil {
		return err
	}
	s.sum = r
	s.n++
	return nil
}

func (s *intervalSumAgg) retract(args []types.Datum) error {
	if s.n == 0 {
		return errRetractUnknown("sum")
	}
	r, err := intervalSub(s.sum, args[0].Interval())
	if err != nil {
		return err
	}
	s.sum = r
	s.n--
	return nil
}

func (s *intervalSumAgg) result() (types.Datum, error) {
	if s.n == 0 {
		return types.NullDatum, nil
	}
	if s.avg {
		r, err := intervalDivFloat(s.sum, float64(s.n))
		if err != nil {
			return types.NullDatum, err
		}
		return types.DInterval(r), nil
	}
	return types.DInterval(s.sum), nil
}

func (s *intervalSumAgg) encode(buf []byte) []byte {
	buf = binary.AppendVarint(buf, s.n)
	buf = binary.AppendVarint(buf, int64(s.sum.Months))
	buf = binary.AppendVarint(buf, int64(s.sum.Days))
	return binary.AppendVarint(buf, s.sum.Micros)
}

func (s *intervalSumAgg) decode(b []byte) ([]byte, error) {
	var vals [4]int64
	for i := range vals {
		v, sz := binary.Varint(b)
		if sz <= 0 {
			return nil, errBadState
		}
		vals[i] = v
		b = b[sz:]
	}
	s.n = vals[0]
	s.sum = types.IntervalValue{Months: int32(vals[1]), Days: int32(vals[2]), Micros: vals[3]}
	return b, nil
}

// ---- bool_and / bool_or ----

type boolAgg struct {
	and         bool
	trues, fals int64
}

func (s *boolAgg) add(args []types.Datum) error {
	if args[0].Bool() {
		s.trues++
	} else {
		s.fals++
	}
	return nil
}

func (s *boolAgg) retract(args []types.Datum) error {
	p := &s.fals
	if args[0].Bool() {
		p = &s.trues
	}
	if *p == 0 {
		return errRetractUnknown("bool_and/bool_or")
	}
	*p--
	return nil
}

func (s *boolAgg) result() (types.Datum, error) {
	if s.trues+s.fals == 0 {
		return types.NullDatum, nil
	}
	if s.and {
		return types.DBool(s.fals == 0), nil
	}
	return types.DBool(s.trues > 0), nil
}

func (s *boolAgg) encode(buf []byte) []byte {
	buf = binary.AppendVarint(buf, s.trues)
	return binary.AppendVarint(buf, s.fals)
}

func (s *boolAgg) decode(b []byte) ([]byte, error) {
	t, sz := binary.Varint(b)
	if sz <= 0 {
		return nil, errBadState
	}
	b = b[sz:]
	f, sz := binary.Varint(b)
	if sz <= 0 {
		return nil, errBadState
	}
	s.trues, s.fals = t, f
	return b[sz:], nil
}

// ---- min / max ----

// minMaxAgg keeps the best value; in retractable mode it also keeps a
// multiset of every input (value -> count) so that retracting the current
// best can find the next one.
type minMaxAgg struct {
	sign  int // +1 max, -1 min
	typ   types.Type
	best  types.Datum
	have  bool
	multi map[string]*msEntry
	dirty bool // best must be recomputed from multi
	kb    []byte
}

type msEntry struct {
	d types.Datum
	n int64
}

func (s *minMaxAgg) add(args []types.Datum) error {
	v := args[0]
	if s.multi != nil {
		s.kb = types.AppendKey(s.kb[:0], v, s.typ, false, false)
		if e := s.multi[string(s.kb)]; e != nil {
			e.n++
		} else {
			s.multi[string(s.kb)] = &msEntry{d: v, n: 1}
		}
	}
	if !s.dirty && (!s.have || types.Compare(v, s.best)*s.sign > 0) {
		s.best, s.have = v, true
	}
	return nil
}

func (s *minMaxAgg) retract(args []types.Datum) error {
	v := args[0]
	s.kb = types.AppendKey(s.kb[:0], v, s.typ, false, false)
	e := s.multi[string(s.kb)]
	if e == nil {
		return errRetractUnknown("min/max")
	}
	e.n--
	if e.n == 0 {
		delete(s.multi, string(s.kb))
		if s.have && types.Compare(v, s.best) == 0 {
			s.dirty = true
		}
	}
	return nil
}

func (s *minMaxAgg) result() (types.Datum, error) {
	if s.dirty {
		s.have, s.dirty = false, false
		for _, e := range s.multi {
			if !s.have || types.Compare(e.d, s.best)*s.sign > 0 {
				s.best, s.have = e.d, true
			}
		}
	}
	if !s.have {
		return types.NullDatum, nil
	}
	return s.best, nil
}

func (s *minMaxAgg) encode(buf []byte) []byte {
	if s.multi == nil {
		if !s.have {
			return append(buf, 0)
		}
		buf = append(buf, 1)
		return types.AppendKey(buf, s.best, s.typ, false, false)
	}
	return appendMultiset(append(buf, 2), s.multi)
}

// appendMultiset encodes a multiset of values keyed by their
// memcomparable encoding (min/max, the ordered-set aggregates).
func appendMultiset(buf []byte, multi map[string]*msEntry) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(multi)))
	for _, k := range sortedKeys(multi) {
		buf = append(buf, k...)
		buf = binary.AppendVarint(buf, multi[k].n)
	}
	return buf
}

// decodeMultiset fills multi from appendMultiset's encoding at the start
// of b; it returns the rest of b and the number of values.
func decodeMultiset(b []byte, typ types.Type, multi map[string]*msEntry) ([]byte, int64, error) {
	n, sz := binary.Uvarint(b)
	if sz <= 0 {
		return nil, 0, errBadState
	}
	b = b[sz:]
	var total int64
	for i := uint64(0); i < n; i++ {
		d, rest, err := types.DecodeKey(b, typ, false, false)
		if err != nil {
			return nil, 0, errBadState
		}
		key := string(b[:len(b)-len(rest)])
		c, sz := binary.Varint(rest)
		if sz <= 0 {
			return nil, 0, errBadState
		}
		b = rest[sz:]
		multi[key] = &msEntry{d: d, n: c}
		total += c
	}
	return b, total, nil
}

func (s *minMaxAgg) decode(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, errBadState
	}
	tag := b[0]
	b = b[1:]
	switch tag {
	case 0:
		return b, nil
	case 1:
		d, rest, err := types.DecodeKey(b, s.typ, false, false)
		if err != nil {
			return nil, errBadState
		}
		s.best, s.have = d, true
		return rest, nil
	}
	if s.multi == nil {
		s.multi = map[string]*msEntry{}
	}
	b, _, err := decodeMultiset(b, s.typ, s.multi)
	if err != nil {
		return nil, err
	}
	s.dirty = true
	return b, nil
}

// ---- string_agg ----

// stringAgg keeps its inputs in arrival order (PostgreSQL concatenates in
// input order); retraction removes the earliest equal input.
type stringAgg struct {
	vals    []types.Datum // value, delimiter pairs
	size    int64         // bytes of vals
	result_ []byte
}

// maxAggBytes bounds what string_agg, array_agg and jsonb_agg hold for
// one group: PostgreSQL's limit on one value (1 GB). Before it, a
// string_agg of 5,000 1 MB strings grew the server past the machine's
// memory and the kernel killed it (found by the corpus replay).
const maxAggBytes = 1<<30 - 1

// aggTooLarge is PostgreSQL's error for a value past its 1 GB limit.
func aggTooLarge(name string, have, more int64) error {
	return sqlError(sqlerr.ProgramLimitExceeded, "out of memory: %s cannot grow its %d bytes by %d more (a value is at most 1 GB)", name, have, more)
}

func (s *stringAgg) add(args []types.Datum) error {
	n := int64(len(args[0].Str()) + len(args[1].Str()))
	if s.size+n > maxAggBytes {
		return aggTooLarge("string_agg", s.size, n)
	}
	s.size += n
	s.vals = append(s.vals, args[0], args[1])
	return nil
}

func (s *stringAgg) retract(args []types.Datum) error {
	for i := 0; i < len(s.vals); i += 2 {
		if s.vals[i].Str() == args[0].Str() && s.vals[i+1].IsNull() == args[1].IsNull() && s.vals[i+1].Str() == args[1].Str() {
			s.size -= int64(len(s.vals[i].Str()) + len(s.vals[i+1].Str()))
			s.vals = append(s.vals[:i], s.vals[i+2:]...)
			return nil
		}
	}
	return errRetractUnknown("string_agg")
}

func (s *stringAgg) result() (types.Datum, error) {
	if len(s.vals) == 0 {
		return types.NullDatum, nil
	}
	b := s.result_[:0]
	for i := 0; i < len(s.vals); i += 2 {
		if i > 0 && !s.vals[i+1].IsNull() {
			b = append(b, s.vals[i+1].Str()...)
		}
		b = append(b, s.vals[i].Str()...)
	}
	s.result_ = b
	return types.DVarchar(string(b)), nil
}

func (s *stringAgg) encode(buf []byte) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s.vals)))
	for _, v := range s.vals {
		if v.IsNull() {
			buf = append(buf, 0)
			continue
		}
		buf = append(buf, 1)
		buf = binary.AppendUvarint(buf, uint64(len(v.Str())))
		buf = append(buf, v.Str()...)
	}
	return buf
}

func (s *stringAgg) decode(b []byte) ([]byte, error) {
	n, sz := binary.Uvarint(b)
	if sz <= 0 {
		return nil, errBadState
	}
	b = b[sz:]
	s.vals = s.vals[:0]
	s.size = 0
	defer func() {
		for _, v := range s.vals {
			s.size += int64(len(v.Str()))
		}
	}()
	for i := uint64(0); i < n; i++ {
		if len(b) == 0 {
			return nil, errBadState
		}
		if b[0] == 0 {
			s.vals = append(s.vals, types.NullDatum)
			b = b[1:]
			continue
		}
		l, sz := binary.Uvarint(b[1:])
		if sz <= 0 || uint64(len(b)-1-sz) < l {
			return nil, errBadState
		}
		s.vals = append(s.vals, types.DVarchar(string(b[1+sz:1+sz+int(l)])))
		b = b[1+sz+int(l):]
	}
	return b, nil
}

// sortedKeys makes encodings deterministic (equal states encode equally).
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
