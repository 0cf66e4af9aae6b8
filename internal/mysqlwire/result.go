package mysqlwire

import (
	"context"
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// MySQL column types (enum_field_types).
const (
	typeDecimal    = 0x00
	typeTiny       = 0x01
	typeShort      = 0x02
	typeLong       = 0x03
	typeFloat      = 0x04
	typeDouble     = 0x05
	typeNull       = 0x06
	typeTimestamp  = 0x07
	typeLongLong   = 0x08
	typeInt24      = 0x09
	typeDate       = 0x0a
	typeTime       = 0x0b
	typeDateTime   = 0x0c
	typeYear       = 0x0d
	typeVarChar    = 0x0f
	typeBit        = 0x10
	typeJSON       = 0xf5
	typeNewDecimal = 0xf6
	typeEnum       = 0xf7
	typeSet        = 0xf8
	typeTinyBlob   = 0xf9
	typeMediumBlob = 0xfa
	typeLongBlob   = 0xfb
	typeBlob       = 0xfc
	typeVarString  = 0xfd
	typeString     = 0xfe
	typeGeometry   = 0xff
)

// Column flags.
const (
	flagBlob   = 0x0010
	flagBinary = 0x0080
	flagNum    = 0x8000
)

const collationBinary = 63

// mysqlColumn is a result column in MySQL's terms.
type mysqlColumn struct {
	name     string
	typ      types.Type
	mt       byte
	flags    uint16
	charset  uint16
	length   uint32
	decimals byte
}

// columnOf maps a Runnel type to the MySQL type a client decodes its
// values as:
//
//	bool                     TINYINT(1)    1 / 0
//	int2, int4, int8         SMALLINT, INT, BIGINT
//	float4, float8           FLOAT, DOUBLE
//	numeric                  DECIMAL
//	date, time               DATE, TIME
//	timestamp                DATETIME(6)
//	timestamptz              TIMESTAMP(6), shown in UTC
//	bytea                    BLOB (binary)
//	anything else            VARCHAR, PostgreSQL's text form (text,
//	                         jsonb, interval, uuid, arrays)
func columnOf(name string, t types.Type) mysqlColumn {
	c := mysqlColumn{name: name, typ: t, charset: collationBinary, flags: flagBinary}
	switch t.Kind {
	case types.KindNull, types.KindVoid:
		c.mt = typeNull
	case types.KindBool:
		c.mt, c.length, c.flags = typeTiny, 1, flagBinary|flagNum
	case types.KindInt16:
		c.mt, c.length, c.flags = typeShort, 6, flagBinary|flagNum
	case types.KindInt32:
		c.mt, c.length, c.flags = typeLong, 11, flagBinary|flagNum
	case types.KindInt64:
		c.mt, c.length, c.flags = typeLongLong, 20, flagBinary|flagNum
	case types.KindFloat32:
		c.mt, c.length, c.decimals, c.flags = typeFloat, 12, 31, flagBinary|flagNum
	case types.KindFloat64:
		c.mt, c.length, c.decimals, c.flags = typeDouble, 22, 31, flagBinary|flagNum
	case types.KindNumeric:
		c.mt, c.length, c.decimals, c.flags = typeNewDecimal, 65, 30, flagBinary|flagNum
		if t.Mod >= 0 { // numeric(p,s): p<<16 | s
			c.decimals = byte(min(t.Mod&0xffff, 30))
		}
	case types.KindDate:
		c.mt, c.length = typeDate, 10
	case types.KindTime:
		c.mt, c.length, c.decimals = typeTime, 17, 6
	case types.KindTimestamp:
		c.mt, c.length, c.decimals = typeDateTime, 26, 6
	case types.KindTimestamptz:
		c.mt, c.length, c.decimals = typeTimestamp, 26, 6
	case types.KindBytea:
		c.mt, c.length, c.flags = typeBlob, 65535, flagBlob|flagBinary
	default:
		c.mt, c.length, c.charset, c.flags = typeVarString, 262140, collationUTF8MB4, 0
	}
	return c
}

// appendColumnDef builds a ColumnDefinition41 packet.
func appendColumnDef(b []byte, c mysqlColumn, schema, table string) []byte {
	b = appendLenEncString(b, "def")
	b = appendLenEncString(b, schema)
	b = appendLenEncString(b, table)
	b = appendLenEncString(b, table)
	b = appendLenEncString(b, c.name)
	b = appendLenEncString(b, c.name)
	b = append(b, 0x0c)
	b = append(b, byte(c.charset), byte(c.charset>>8))
	b = binary.LittleEndian.AppendUint32(b, c.length)
	b = append(b, c.mt)
	b = append(b, byte(c.flags), byte(c.flags>>8))
	b = append(b, c.decimals, 0, 0)
	return b
}

// appendText appends d's text-protocol form (d is not NULL).
func appendText(b []byte, d types.Datum, c *mysqlColumn, o *types.FormatOptions) []byte {
	switch c.typ.Kind {
	case types.KindBool:
		if d.Bool() {
			return append(b, '1')
		}
		return append(b, '0')
	case types.KindTimestamp, types.KindTimestamptz:
		if t, ok := finiteTime(d); ok {
			return appendDateTime(b, t)
		}
	case types.KindBytea:
		return append(b, d.Str()...)
	}
	return types.AppendText(b, d, c.typ, o)
}

// finiteTime converts a timestamp datum to UTC; ±infinity is not finite.
func finiteTime(d types.Datum) (time.Time, bool) {
	if d.Int() == math.MinInt64 || d.Int() == math.MaxInt64 {
		return time.Time{}, false
	}
	return time.UnixMicro(d.Int()).UTC(), true
}

// appendDateTime writes MySQL's "YYYY-MM-DD hh:mm:ss[.ffffff]".
func appendDateTime(b []byte, t time.Time) []byte {
	b = t.AppendFormat(b, "2006-01-02 15:04:05")
	if us := t.Nanosecond() / 1000; us != 0 {
		b = append(b, '.')
		s := strconv.Itoa(us)
		b = append(b, strings.Repeat("0", 6-len(s))...)
		b = append(b, strings.TrimRight(s, "0")...)
	}
	return b
}

// appendBinaryValue appends d's binary-protocol form (d is not NULL).
func appendBinaryValue(b []byte, d types.Datum, c *mysqlColumn, o *types.FormatOptions) []byte {
	switch c.mt {
	case typeTiny:
		if c.typ.Kind == types.KindBool {
			if d.Bool() {
				return append(b, 1)
			}
			return append(b, 0)
		}
		return append(b, byte(d.Int()))
	case typeShort:
		return binary.LittleEndian.AppendUint16(b, uint16(d.Int()))
	case typeLong:
		return binary.LittleEndian.AppendUint32(b, uint32(d.Int()))
	case typeLongLong:
		return binary.LittleEndian.AppendUint64(b, uint64(d.Int()))
	case typeFloat:
		return binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(d.Float())))
	case typeDouble:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(d.Float()))
	case typeDate:
		if d.Int() == math.MinInt64 || d.Int() == math.MaxInt64 {
			return append(b, 0)
		}
		t := time.Unix(d.Int()*86400, 0).UTC()
		return append(b, 4, byte(t.Year()), byte(t.Year()>>8), byte(t.Month()), byte(t.Day()))
	case typeDateTime, typeTimestamp:
		t, ok := finiteTime(d)
		if !ok {
			return append(b, 0)
		}
		b = append(b, 11, byte(t.Year()), byte(t.Year()>>8), byte(t.Month()), byte(t.Day()), byte(t.Hour()), byte(t.Minute()), byte(t.Second()))
		return binary.LittleEndian.AppendUint32(b, uint32(t.Nanosecond()/1000))
	case typeTime:
		us := d.Int()
		h, m, s, f := us/3600e6, us/60e6%60, us/1e6%60, us%1e6
		b = append(b, 12, 0)
		b = binary.LittleEndian.AppendUint32(b, uint32(h/24))
		b = append(b, byte(h%24), byte(m), byte(s))
		return binary.LittleEndian.AppendUint32(b, uint32(f))
	case typeNull:
		return b
	}
	var scratch [64]byte
	return appendLenEncString(b, string(appendText(scratch[:0], d, c, o)))
}

// writeResult sends one statement's result: OK for a command, a result set
// for rows. binaryRows selects the prepared-statement row format.
func (c *conn) writeResult(ctx context.Context, res pgwire.Result, binaryRows, more bool) error {
	if res.Copy != nil {
		if res.Copy.Sink != nil {
			res.Copy.Sink.Abort()
		}
		if res.Rows != nil {
			res.Rows.Close()
		}
		return sqlerr.New(sqlerr.FeatureNotSupported, "COPY is not supported over the MySQL protocol; use pgwire")
	}
	if res.Rows == nil {
		return c.writeOK(pgwire.AffectedRows(res.Tag), more)
	}
	defer res.Rows.Close()
	return c.writeRows(ctx, res.Columns, res.Rows, binaryRows, more)
}

// writeRows streams a result set.
func (c *conn) writeRows(ctx context.Context, pcols []pgwire.Column, rows pgwire.RowIter, binaryRows, more bool) error {
	cols := make([]mysqlColumn, len(pcols))
	for i, pc := range pcols {
		cols[i] = columnOf(pc.Name, pc.Type)
	}
	if err := c.write(appendLenEncInt(nil, uint64(len(cols)))); err != nil {
		return err
	}
	var buf []byte
	for _, col := range cols {
		buf = appendColumnDef(buf[:0], col, c.schema, "")
		if err := c.write(buf); err != nil {
			return err
		}
	}
	if err := c.writeEOF(false); err != nil {
		return err
	}
	for n := 0; ; n++ {
		if n%256 == 0 && ctx.Err() != nil {
			return context.Cause(ctx)
		}
		row, err := rows.Next(ctx)
		if err != nil {
			return err
		}
		if row == nil {
			break
		}
		buf = buf[:0]
		if binaryRows {
			buf = append(buf, 0)
			nullStart := len(buf)
			buf = append(buf, make([]byte, (len(cols)+7+2)/8)...)
			for i := range cols {
				if i >= len(row) || row[i].IsNull() {
					buf[nullStart+(i+2)/8] |= 1 << ((i + 2) % 8)
					continue
				}
				buf = appendBinaryValue(buf, row[i], &cols[i], &c.fmt)
			}
		} else {
			for i := range cols {
				if i >= len(row) || row[i].IsNull() {
					buf = append(buf, 0xfb)
					continue
				}
				start := len(buf)
				buf = append(buf, 0) // room for a one-byte length
				buf = appendText(buf, row[i], &cols[i], &c.fmt)
				if n := len(buf) - start - 1; n >= 251 {
					v := append([]byte(nil), buf[start+1:]...)
					buf = appendLenEncString(buf[:start], string(v))
				} else {
					buf[start] = byte(n)
				}
			}
		}
		if err := c.write(buf); err != nil {
			return err
		}
	}
	return c.writeEOF(more)
}

// staticRows serves rows computed by this package (SHOW VARIABLES, @@var).
type staticRows struct {
	rows []types.Row
	i    int
}

func (s *staticRows) Next(context.Context) (types.Row, error) {
	if s.i >= len(s.rows) {
		return nil, nil
	}
	s.i++
	return s.rows[s.i-1], nil
}

func (s *staticRows) Close() {}
