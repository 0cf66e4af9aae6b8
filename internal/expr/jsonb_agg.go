package expr

import (
	"encoding/binary"
	"strings"

	"github.com/runneldb/runnel/internal/types"
)

// jsonb_agg(value) and jsonb_object_agg(key, value): a JSON array of the
// values, an object of the pairs, in input order (the ORDER BY's when
// given). NULL values are kept as JSON null; a NULL key is an error, as
// in PostgreSQL. Like string_agg they keep their inputs, so a view
// retracts exactly (the streaming aggregate recomputes them from its
// input table).

type jsonbAgg struct {
	object bool
	types  []types.Type
	keys   []string // object keys (text)
	elems  []string // values as JSON text
	size   int64    // bytes of keys and elems (maxAggBytes)
}

func (s *jsonbAgg) render(args []types.Datum) (key, val string, err error) {
	i := 0
	if s.object {
		if args[0].IsNull() {
			return "", "", sqlError(codeInvalidParameterValue, "field name must not be null")
		}
		key = types.FormatText(args[0], s.types[0], nil)
		i = 1
	}
	n, err := toJSONNode(nil, args[i], s.types[i])
	if err != nil {
		return "", "", err
	}
	return key, string(n.appendTo(nil)), nil
}

func (s *jsonbAgg) add(args []types.Datum) error {
	k, v, err := s.render(args)
	if err != nil {
		return err
	}
	n := int64(len(k) + len(v) + 2)
	if s.size+n > maxAggBytes {
		return aggTooLarge("jsonb_agg", s.size, n)
	}
	s.size += n
	if s.object {
		s.keys = append(s.keys, k)
	}
	s.elems = append(s.elems, v)
	return nil
}

func (s *jsonbAgg) retract(args []types.Datum) error {
	k, v, err := s.render(args)
	if err != nil {
		return err
	}
	for i, e := range s.elems {
		if e == v && (!s.object || s.keys[i] == k) {
			s.size -= int64(len(k) + len(v) + 2)
			s.elems = append(s.elems[:i], s.elems[i+1:]...)
			if s.object {
				s.keys = append(s.keys[:i], s.keys[i+1:]...)
			}
			return nil
		}
	}
	return errRetractUnknown(s.name())
}

func (s *jsonbAgg) name() string {
	if s.object {
		return "jsonb_object_agg"
	}
	return "jsonb_agg"
}

func (s *jsonbAgg) result() (types.Datum, error) {
	if len(s.elems) == 0 {
		return types.NullDatum, nil
	}
	var b strings.Builder
	if s.object {
		b.WriteByte('{')
		for i, e := range s.elems {
			if i > 0 {
				b.WriteString(", ")
			}
			b.Write(types.AppendJSONString(nil, s.keys[i]))
			b.WriteString(": ")
			b.WriteString(e)
		}
		b.WriteByte('}')
	} else {
		b.WriteByte('[')
		b.WriteString(strings.Join(s.elems, ", "))
		b.WriteByte(']')
	}
	c, err := types.ParseJsonb(b.String())
	if err != nil {
		return types.NullDatum, err
	}
	return types.DJsonb(c), nil
}

func (s *jsonbAgg) encode(buf []byte) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s.elems)))
	for i, e := range s.elems {
		if s.object {
			buf = binary.AppendUvarint(buf, uint64(len(s.keys[i])))
			buf = append(buf, s.keys[i]...)
		}
		buf = binary.AppendUvarint(buf, uint64(len(e)))
		buf = append(buf, e...)
	}
	return buf
}

func (s *jsonbAgg) decode(b []byte) ([]byte, error) {
	n, sz := binary.Uvarint(b)
	if sz <= 0 || n > uint64(len(b)) {
		return nil, errBadState
	}
	b = b[sz:]
	s.keys, s.elems = nil, nil
	str := func() (string, bool) {
		l, sz := binary.Uvarint(b)
		if sz <= 0 || uint64(len(b)-sz) < l {
			return "", false
		}
		v := string(b[sz : sz+int(l)])
		b = b[sz+int(l):]
		return v, true
	}
	for i := uint64(0); i < n; i++ {
		if s.object {
			k, ok := str()
			if !ok {
				return nil, errBadState
			}
			s.keys = append(s.keys, k)
		}
		v, ok := str()
		if !ok {
			return nil, errBadState
		}
		s.elems = append(s.elems, v)
	}
	s.size = 0
	for i, e := range s.elems {
		s.size += int64(len(e) + 2)
		if s.object {
			s.size += int64(len(s.keys[i]))
		}
	}
	return b, nil
}

func init() {
	regAgg("jsonb_agg", &aggSig{args: []types.Type{PseudoAnyElement}, ret: types.Jsonb, needsInputs: true,
		mk: func(at []types.Type, _ types.Type, _ bool) aggImpl { return &jsonbAgg{types: at} }})
	regAgg("jsonb_object_agg", &aggSig{args: []types.Type{types.Unknown, types.Unknown}, ret: types.Jsonb, needsInputs: true,
		mk: func(at []types.Type, _ types.Type, _ bool) aggImpl { return &jsonbAgg{object: true, types: at} }})
}
