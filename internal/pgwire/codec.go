package pgwire

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
	"strings"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// This file is the only place that converts between datums and their wire
// representations. Until internal/types grows its text and binary I/O, it
// carries a small codec for the scalar kinds; everything else is reported as
// 0A000.

// formatOptions carries the session settings that shape text output.
type formatOptions struct {
	timeZone string
}

// appendText appends d's text representation (never called for NULL).
func appendText(buf []byte, d types.Datum, t types.Type, _ *formatOptions) ([]byte, error) {
	switch d.Kind() {
	case types.KindBool:
		if d.Bool() {
			return append(buf, 't'), nil
		}
		return append(buf, 'f'), nil
	case types.KindInt16, types.KindInt32, types.KindInt64:
		return strconv.AppendInt(buf, d.Int(), 10), nil
	case types.KindFloat32:
		return appendFloat(buf, d.Float(), 32), nil
	case types.KindFloat64:
		return appendFloat(buf, d.Float(), 64), nil
	case types.KindVarchar, types.KindUnknown, types.KindJsonb:
		return append(buf, d.Str()...), nil
	case types.KindBytea:
		buf = append(buf, '\\', 'x')
		return hex.AppendEncode(buf, []byte(d.Str())), nil
	case types.KindNumeric:
		return append(buf, d.Decimal().String()...), nil
	}
	return buf, sqlerr.Errorf(sqlerr.FeatureNotSupported, "text output of type %s is not supported", t.Name())
}

func appendFloat(buf []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(buf, "NaN"...)
	case math.IsInf(f, 1):
		return append(buf, "Infinity"...)
	case math.IsInf(f, -1):
		return append(buf, "-Infinity"...)
	}
	return strconv.AppendFloat(buf, f, 'g', -1, bits)
}

// appendBinary appends d's binary representation (never called for NULL).
func appendBinary(buf []byte, d types.Datum, t types.Type) ([]byte, error) {
	switch d.Kind() {
	case types.KindBool:
		if d.Bool() {
			return append(buf, 1), nil
		}
		return append(buf, 0), nil
	case types.KindInt16:
		return binary.BigEndian.AppendUint16(buf, uint16(d.Int())), nil
	case types.KindInt32:
		return binary.BigEndian.AppendUint32(buf, uint32(d.Int())), nil
	case types.KindInt64:
		return binary.BigEndian.AppendUint64(buf, uint64(d.Int())), nil
	case types.KindFloat32:
		return binary.BigEndian.AppendUint32(buf, math.Float32bits(float32(d.Float()))), nil
	case types.KindFloat64:
		return binary.BigEndian.AppendUint64(buf, math.Float64bits(d.Float())), nil
	case types.KindVarchar, types.KindUnknown, types.KindBytea:
		return append(buf, d.Str()...), nil
	}
	return buf, sqlerr.Errorf(sqlerr.FeatureNotSupported, "binary output of type %s is not supported", t.Name())
}

// parseText parses a text-format parameter or COPY field of type t.
func parseText(s string, t types.Type, _ *formatOptions) (types.Datum, error) {
	bad := func() (types.Datum, error) {
		return types.NullDatum, sqlerr.Errorf(sqlerr.InvalidTextRepresentation,
			"invalid input syntax for type %s: %q", t.Name(), s)
	}
	switch t.Kind {
	case types.KindBool:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "t", "true", "yes", "on", "1", "y":
			return types.DBool(true), nil
		case "f", "false", "no", "off", "0", "n":
			return types.DBool(false), nil
		}
		return bad()
	case types.KindInt16, types.KindInt32, types.KindInt64:
		bits := map[types.Kind]int{types.KindInt16: 16, types.KindInt32: 32, types.KindInt64: 64}[t.Kind]
		v, err := strconv.ParseInt(strings.TrimSpace(s), 10, bits)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return types.NullDatum, sqlerr.Errorf(sqlerr.NumericValueOutOfRange,
					"value %q is out of range for type %s", s, t.Name())
			}
			return bad()
		}
		switch t.Kind {
		case types.KindInt16:
			return types.DInt16(int16(v)), nil
		case types.KindInt32:
			return types.DInt32(int32(v)), nil
		}
		return types.DInt64(v), nil
	case types.KindFloat32, types.KindFloat64:
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return bad()
		}
		if t.Kind == types.KindFloat32 {
			return types.DFloat32(float32(v)), nil
		}
		return types.DFloat64(v), nil
	case types.KindVarchar:
		return types.DVarchar(s), nil
	case types.KindUnknown, types.KindNull:
		return types.DUnknown(s), nil
	case types.KindBytea:
		if strings.HasPrefix(s, `\x`) {
			b, err := hex.DecodeString(s[2:])
			if err != nil {
				return bad()
			}
			return types.DBytea(b), nil
		}
		return types.DByteaString(s), nil
	}
	return types.NullDatum, sqlerr.Errorf(sqlerr.FeatureNotSupported, "text input of type %s is not supported", t.Name())
}

// parseBinary parses a binary-format parameter of type t.
func parseBinary(b []byte, t types.Type) (types.Datum, error) {
	bad := func() (types.Datum, error) {
		return types.NullDatum, sqlerr.Errorf(sqlerr.InvalidBinaryRepresentation,
			"incorrect binary data format for type %s", t.Name())
	}
	switch t.Kind {
	case types.KindBool:
		if len(b) != 1 {
			return bad()
		}
		return types.DBool(b[0] != 0), nil
	case types.KindInt16:
		if len(b) != 2 {
			return bad()
		}
		return types.DInt16(int16(binary.BigEndian.Uint16(b))), nil
	case types.KindInt32:
		if len(b) != 4 {
			return bad()
		}
		return types.DInt32(int32(binary.BigEndian.Uint32(b))), nil
	case types.KindInt64:
		if len(b) != 8 {
			return bad()
		}
		return types.DInt64(int64(binary.BigEndian.Uint64(b))), nil
	case types.KindFloat32:
		if len(b) != 4 {
			return bad()
		}
		return types.DFloat32(math.Float32frombits(binary.BigEndian.Uint32(b))), nil
	case types.KindFloat64:
		if len(b) != 8 {
			return bad()
		}
		return types.DFloat64(math.Float64frombits(binary.BigEndian.Uint64(b))), nil
	case types.KindVarchar:
		return types.DVarchar(string(b)), nil
	case types.KindUnknown, types.KindNull:
		return types.DUnknown(string(b)), nil
	case types.KindBytea:
		return types.DBytea(b), nil
	}
	return types.NullDatum, sqlerr.Errorf(sqlerr.FeatureNotSupported, "binary input of type %s is not supported", t.Name())
}
