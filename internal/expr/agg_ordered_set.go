package expr

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// Ordered-set aggregates: percentile_cont, percentile_disc and mode, written
// f(direct args) WITHIN GROUP (ORDER BY v). The binder passes them as
// ordinary calls with the sorted value first, then the direct argument,
// then the ORDER BY's direction as a boolean constant:
//
//	percentile_cont(0.5) WITHIN GROUP (ORDER BY v DESC)
//	  -> percentile_cont(v, 0.5, true)
//
// so a NULL v skips the row (as PostgreSQL ignores NULL inputs). The state
// is the multiset of values keyed by their memcomparable encoding, whose
// byte order is the values' order: adding and retracting are exact, and
// the result walks the sorted keys (O(distinct values) per result).

type orderedSetAgg struct {
	kind  string // percentile_cont, percentile_disc, mode
	typ   types.Type
	multi map[string]*msEntry
	total int64
	frac  float64 // the last direct argument seen
	desc  bool
	kb    []byte
}

func newOrderedSetAgg(kind string, typ types.Type) *orderedSetAgg {
	return &orderedSetAgg{kind: kind, typ: typ, multi: map[string]*msEntry{}}
}

func (s *orderedSetAgg) note(args []types.Datum) {
	if s.kind != "mode" {
		s.frac = args[1].Float()
	}
	s.desc = args[len(args)-1].Bool()
}

func (s *orderedSetAgg) add(args []types.Datum) error {
	s.note(args)
	s.kb = types.AppendKey(s.kb[:0], args[0], s.typ, false, false)
	if e := s.multi[string(s.kb)]; e != nil {
		e.n++
	} else {
		s.multi[string(s.kb)] = &msEntry{d: args[0], n: 1}
	}
	s.total++
	return nil
}

func (s *orderedSetAgg) retract(args []types.Datum) error {
	s.kb = types.AppendKey(s.kb[:0], args[0], s.typ, false, false)
	e := s.multi[string(s.kb)]
	if e == nil {
		return errRetractUnknown(s.kind)
	}
	if e.n--; e.n == 0 {
		delete(s.multi, string(s.kb))
	}
	s.total--
	return nil
}

// sorted returns the distinct values in the ORDER BY's order.
func (s *orderedSetAgg) sorted() []*msEntry {
	keys := sortedKeys(s.multi)
	if s.desc {
		slices.Reverse(keys)
	}
	out := make([]*msEntry, len(keys))
	for i, k := range keys {
		out[i] = s.multi[k]
	}
	return out
}

// at returns the value at 0-based position i of the sorted inputs.
func at(entries []*msEntry, i int64) types.Datum {
	for _, e := range entries {
		if i < e.n {
			return e.d
		}
		i -= e.n
	}
	return types.NullDatum
}

func (s *orderedSetAgg) result() (types.Datum, error) {
	if s.total == 0 {
		return types.NullDatum, nil
	}
	entries := s.sorted()
	if s.kind == "mode" {
		// The most frequent value; among equals the first in order.
		var best *msEntry
		for _, e := range entries {
			if best == nil || e.n > best.n {
				best = e
			}
		}
		return best.d, nil
	}
	if s.frac < 0 || s.frac > 1 || math.IsNaN(s.frac) {
		return types.NullDatum, sqlerr.Errorf(sqlerr.NumericValueOutOfRange, "percentile value %g is not between 0 and 1", s.frac)
	}
	if s.kind == "percentile_disc" {
		// The first value whose position (1-based) reaches frac * n.
		row := int64(math.Ceil(s.frac * float64(s.total)))
		return at(entries, max(row, 1)-1), nil
	}
	pos := s.frac * float64(s.total-1)
	lo, hi := math.Floor(pos), math.Ceil(pos)
	l := at(entries, int64(lo)).Float()
	if lo == hi {
		return types.DFloat64(l), nil
	}
	h := at(entries, int64(hi)).Float()
	return types.DFloat64(l + (pos-lo)*(h-l)), nil
}

func (s *orderedSetAgg) encode(buf []byte) []byte {
	buf = binary.AppendUvarint(buf, math.Float64bits(s.frac))
	if s.desc {
		buf = append(buf, 1)
	} else {
		buf = append(buf, 0)
	}
	return appendMultiset(buf, s.multi)
}

func (s *orderedSetAgg) decode(b []byte) ([]byte, error) {
	f, sz := binary.Uvarint(b)
	if sz <= 0 || len(b) < sz+1 {
		return nil, errBadState
	}
	s.frac, s.desc = math.Float64frombits(f), b[sz] == 1
	b = b[sz+1:]
	clear(s.multi)
	rest, total, err := decodeMultiset(b, s.typ, s.multi)
	s.total = total
	return rest, err
}

// IsOrderedSetAggregate reports whether name is written WITHIN GROUP.
func IsOrderedSetAggregate(name string) bool {
	switch name {
	case "percentile_cont", "percentile_disc", "mode":
		return true
	}
	return false
}

func init() {
	regAgg("percentile_cont", &aggSig{args: []types.Type{types.Float64, types.Float64, types.Bool}, ret: types.Float64, needsInputs: true,
		mk: func([]types.Type, types.Type, bool) aggImpl {
			return newOrderedSetAgg("percentile_cont", types.Float64)
		}})
	for _, t := range comparableTypes {
		if t.Kind == types.KindJsonb {
			continue
		}
		regAgg("percentile_disc", &aggSig{args: []types.Type{t, types.Float64, types.Bool}, needsInputs: true,
			retFn: func(a []types.Type) types.Type { return a[0] },
			mk: func(at []types.Type, _ types.Type, _ bool) aggImpl {
				return newOrderedSetAgg("percentile_disc", at[0])
			}})
		regAgg("mode", &aggSig{args: []types.Type{t, types.Bool}, needsInputs: true,
			retFn: func(a []types.Type) types.Type { return a[0] },
			mk:    func(at []types.Type, _ types.Type, _ bool) aggImpl { return newOrderedSetAgg("mode", at[0]) }})
	}
}
