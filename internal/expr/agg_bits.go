package expr

import (
	"encoding/binary"

	"github.com/runneldb/runnel/internal/types"
)

// bit_and, bit_or and bit_xor over smallint, integer and bigint.
//
// The state counts, for each of the 64 bit positions, how many inputs
// have that bit set, plus the number of inputs: bit_or is the positions
// with a non-zero count, bit_and those every input sets, bit_xor those
// with an odd count. Adding and retracting are both exact and O(64), so
// a streaming view retracts without keeping its inputs (I6: retracting
// from an empty state is reported, never absorbed).
type bitAgg struct {
	op   byte // '&', '|' or '^'
	kind types.Kind
	n    int64
	bits [64]int64
}

func (s *bitAgg) upd(v uint64, sign int64) {
	s.n += sign
	for i := 0; i < 64; i++ {
		if v&(1<<i) != 0 {
			s.bits[i] += sign
		}
	}
}

func (s *bitAgg) add(args []types.Datum) error { s.upd(uint64(args[0].Int()), 1); return nil }

func (s *bitAgg) retract(args []types.Datum) error {
	if s.n == 0 {
		return errRetractUnknown("bit_" + map[byte]string{'&': "and", '|': "or", '^': "xor"}[s.op])
	}
	s.upd(uint64(args[0].Int()), -1)
	return nil
}

func (s *bitAgg) result() (types.Datum, error) {
	if s.n == 0 {
		return types.NullDatum, nil
	}
	var r uint64
	for i, c := range s.bits {
		var set bool
		switch s.op {
		case '&':
			set = c == s.n
		case '|':
			set = c > 0
		default:
			set = c%2 != 0
		}
		if set {
			r |= 1 << i
		}
	}
	return mkInt(s.kind, int64(r)), nil
}

func (s *bitAgg) encode(buf []byte) []byte {
	buf = binary.AppendVarint(buf, s.n)
	for _, c := range s.bits {
		buf = binary.AppendVarint(buf, c)
	}
	return buf
}

func (s *bitAgg) decode(b []byte) ([]byte, error) {
	v, sz := binary.Varint(b)
	if sz <= 0 {
		return nil, errBadState
	}
	s.n, b = v, b[sz:]
	for i := range s.bits {
		if s.bits[i], sz = binary.Varint(b); sz <= 0 {
			return nil, errBadState
		}
		b = b[sz:]
	}
	return b, nil
}

func init() {
	for _, name := range []string{"bit_and", "bit_or", "bit_xor"} {
		op := map[string]byte{"bit_and": '&', "bit_or": '|', "bit_xor": '^'}[name]
		for _, t := range []types.Type{types.Int16, types.Int32, types.Int64} {
			k := t.Kind
			regAgg(name, &aggSig{args: []types.Type{t}, ret: t, retractable: true,
				mk: func([]types.Type, types.Type, bool) aggImpl { return &bitAgg{op: op, kind: k} }})
		}
	}
}
