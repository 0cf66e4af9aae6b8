package types

import (
	"math/rand"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
)

func benchRow() (Row, []Type) {
	num, _, _ := apd.NewFromString("12345.6789")
	row := Row{DInt32(42), DInt64(1234567890123), DVarchar("some varchar value"), DNumeric(num), DFloat64(3.25), DTimestamptz(1700000000123456), NullDatum, DBool(true)}
	types := []Type{Int32, Int64, Varchar, Numeric, Float64, Timestamptz, Int32, Bool}
	return row, types
}

func BenchmarkAppendText(b *testing.B) {
	row, types := benchRow()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		b.Skip(err)
	}
	opt := &FormatOptions{Location: loc}
	for i, typ := range types {
		if row[i].IsNull() {
			continue
		}
		b.Run(typ.Name(), func(b *testing.B) {
			buf := make([]byte, 0, 64)
			b.ReportAllocs()
			for n := 0; n < b.N; n++ {
				buf = AppendText(buf[:0], row[i], typ, opt)
			}
		})
	}
	b.Run("float64-random", func(b *testing.B) {
		r := rand.New(rand.NewSource(1))
		vals := make([]Datum, 1024)
		for i := range vals {
			vals[i] = DFloat64(r.NormFloat64() * 1e6)
		}
		buf := make([]byte, 0, 64)
		b.ReportAllocs()
		for n := 0; n < b.N; n++ {
			buf = AppendText(buf[:0], vals[n&1023], Float64, nil)
		}
	})
}

func BenchmarkParseText(b *testing.B) {
	for _, c := range []struct {
		s string
		t Type
	}{{"123456", Int32}, {"3.14159", Float64}, {"12345.6789", Numeric}, {"2024-01-02 03:04:05.123456+02", Timestamptz}, {"1 day 02:03:04", Interval}, {`{"b": [1, 2], "a": "x"}`, Jsonb}} {
		b.Run(c.t.Name(), func(b *testing.B) {
			b.ReportAllocs()
			for n := 0; n < b.N; n++ {
				if _, err := ParseText(c.s, c.t, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAppendKey(b *testing.B) {
	row, types := benchRow()
	for i, typ := range types {
		if row[i].IsNull() {
			continue
		}
		b.Run(typ.Name(), func(b *testing.B) {
			buf := make([]byte, 0, 64)
			b.ReportAllocs()
			for n := 0; n < b.N; n++ {
				buf = AppendKey(buf[:0], row[i], typ, false, false)
			}
		})
	}
	b.Run("row", func(b *testing.B) {
		cols := []int{0, 1, 2, 3, 4, 5, 6, 7}
		order := make([]SortOrder, len(cols))
		buf := make([]byte, 0, 128)
		b.ReportAllocs()
		for n := 0; n < b.N; n++ {
			buf = EncodeKeyRow(buf[:0], row, cols, types, order)
		}
	})
}

func BenchmarkValueRow(b *testing.B) {
	row, types := benchRow()
	b.Run("append", func(b *testing.B) {
		buf := make([]byte, 0, 128)
		b.ReportAllocs()
		for n := 0; n < b.N; n++ {
			buf = AppendValueRow(buf[:0], row, types)
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("decode", func(b *testing.B) {
		enc := AppendValueRow(nil, row, types)
		dst := make(Row, len(types))
		b.ReportAllocs()
		b.SetBytes(int64(len(enc)))
		for n := 0; n < b.N; n++ {
			var err error
			if dst, err = DecodeValueRow(enc, types, dst); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkVnode(b *testing.B) {
	row, _ := benchRow()
	b.ReportAllocs()
	var sink uint16
	for n := 0; n < b.N; n++ {
		sink += Vnode(row, []int{0, 2})
	}
	_ = sink
}
