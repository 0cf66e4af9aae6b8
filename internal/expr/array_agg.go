package expr

import (
	"encoding/binary"

	"github.com/runneldb/runnel/internal/types"
)

// array_agg(value): an array of the values, NULLs included, in input
// order (the ORDER BY's when given); no rows give NULL. Like string_agg it
// keeps its inputs, so a view retracts exactly (the streaming aggregate
// recomputes it from its input table). An array argument would make a
// multidimensional array, which Runnel does not have (0A000 at bind).

type arrayAgg struct {
	elem  types.Type
	elems []types.Datum
	size  int64 // bytes of elems, roughly (maxAggBytes)
}

// datumBytes is roughly what d takes in an aggregate's state.
func datumBytes(d types.Datum) int64 { return int64(len(d.Str())) + 16 }

func (s *arrayAgg) add(args []types.Datum) error {
	n := datumBytes(args[0])
	if s.size+n > maxAggBytes {
		return aggTooLarge("array_agg", s.size, n)
	}
	s.size += n
	s.elems = append(s.elems, args[0])
	return nil
}

// retract removes the earliest input equal to the retracted one (NULL
// equal to NULL). Equal means the same encoding, so 1.5 and 1.50 stay
// apart: the array keeps the values as written.
func (s *arrayAgg) retract(args []types.Datum) error {
	want := types.AppendValue(nil, args[0])
	for i, e := range s.elems {
		if string(types.AppendValue(nil, e)) == string(want) {
			s.size -= datumBytes(e)
			s.elems = append(s.elems[:i], s.elems[i+1:]...)
			return nil
		}
	}
	return errRetractUnknown("array_agg")
}

func (s *arrayAgg) result() (types.Datum, error) {
	if len(s.elems) == 0 {
		return types.NullDatum, nil
	}
	return mkArray(types.ArrayOf(s.elem), s.elems)
}

func (s *arrayAgg) encode(buf []byte) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s.elems)))
	for _, e := range s.elems {
		buf = types.AppendValue(buf, e)
	}
	return buf
}

func (s *arrayAgg) decode(b []byte) ([]byte, error) {
	n, sz := binary.Uvarint(b)
	if sz <= 0 || n > uint64(len(b)) {
		return nil, errBadState
	}
	b = b[sz:]
	s.elems = s.elems[:0]
	s.size = 0
	for i := uint64(0); i < n; i++ {
		var e types.Datum
		var err error
		if e, b, err = types.DecodeValue(b, s.elem); err != nil {
			return nil, errBadState
		}
		s.elems = append(s.elems, e)
		s.size += datumBytes(e)
	}
	return b, nil
}

func init() {
	regAgg("array_agg", &aggSig{args: []types.Type{PseudoAnyNonArray}, needsInputs: true,
		retFn: func(at []types.Type) types.Type {
			if _, pseudo := PseudoOID(at[0]); pseudo {
				return PseudoAnyArray // the catalog's signature
			}
			return types.ArrayOf(at[0])
		},
		mk: func(at []types.Type, _ types.Type, _ bool) aggImpl { return &arrayAgg{elem: at[0]} }})
}
