package types

import (
	"math"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
)

// testSeed returns the seed for randomized tests: RUNNEL_TYPES_SEED if
// set, else the clock; it is logged so that a failure can be replayed.
func testSeed(t testing.TB) int64 {
	seed := time.Now().UnixNano()
	if s := os.Getenv("RUNNEL_TYPES_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("RUNNEL_TYPES_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (set RUNNEL_TYPES_SEED=%d to replay)", seed, seed)
	return seed
}

// allTypes lists one Type per kind that has a value encoding.
var allTypes = []Type{Bool, Int16, Int32, Int64, Float32, Float64, Numeric, Varchar, Text, Bytea, Date, Time, Timestamp, Timestamptz, Interval, Jsonb, UUID,
	ArrayOf(Int32), ArrayOf(Numeric), ArrayOf(Text), ArrayOf(Float64), ArrayOf(Interval), ArrayOf(Bool), ArrayOf(Timestamptz), ArrayOf(Jsonb)}

// randDatum returns a random non-NULL datum of type t, biased towards edge
// values and towards collisions (so that equal values are compared too).
func randDatum(r *rand.Rand, t Type) Datum {
	switch t.Kind {
	case KindBool:
		return DBool(r.Intn(2) == 0)
	case KindInt16:
		return DInt16(int16(randInt(r, math.MinInt16, math.MaxInt16)))
	case KindInt32:
		return DInt32(int32(randInt(r, math.MinInt32, math.MaxInt32)))
	case KindInt64:
		return DInt64(randInt(r, math.MinInt64, math.MaxInt64))
	case KindFloat32:
		switch r.Intn(6) {
		case 0:
			return DFloat32(float32([]float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1, -1, math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32}[r.Intn(10)]))
		case 1:
			return DFloat32(float32(r.Intn(7) - 3))
		}
		return DFloat32(math.Float32frombits(r.Uint32()))
	case KindFloat64:
		switch r.Intn(6) {
		case 0:
			return DFloat64([]float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1, -1, math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, math.Float64frombits(0xfff8000000000000)}[r.Intn(11)])
		case 1:
			return DFloat64(float64(r.Intn(7)-3) / 2)
		}
		return DFloat64(math.Float64frombits(r.Uint64()))
	case KindNumeric:
		return DNumeric(randDecimal(r))
	case KindVarchar:
		return DVarchar(randText(r))
	case KindBytea:
		b := make([]byte, r.Intn(6))
		for i := range b {
			b[i] = []byte{0, 1, 0xff, 'a', byte(r.Intn(256))}[r.Intn(5)]
		}
		return DBytea(b)
	case KindUUID:
		var b [16]byte
		for i := range b {
			b[i] = []byte{0, 0xff, 0x80, byte(r.Intn(256))}[r.Intn(4)]
		}
		return DUUID(b)
	case KindJsonb:
		j, err := ParseJsonb(randJSONText(r, 2))
		if err != nil {
			panic(err)
		}
		return DJsonb(j)
	case KindDate:
		switch r.Intn(10) {
		case 0:
			return DDate(PosInfinity)
		case 1:
			return DDate(NegInfinity)
		case 2:
			return DDate([]int64{MinDate, MaxDate, 0, -1}[r.Intn(4)])
		}
		return DDate(MinDate + r.Int63n(MaxDate-MinDate+1))
	case KindTime:
		if r.Intn(8) == 0 {
			return DTime([]int64{0, microsPerDay, microsPerDay - 1}[r.Intn(3)])
		}
		return DTime(r.Int63n(microsPerDay + 1))
	case KindTimestamp, KindTimestamptz:
		var v int64
		switch r.Intn(10) {
		case 0:
			v = PosInfinity
		case 1:
			v = NegInfinity
		case 2:
			v = []int64{MinTimestamp, EndTimestamp - 1, 0, -1}[r.Intn(4)]
		case 3:
			v = r.Int63n(4e15) - 2e15 // around 1970, where zone rules vary
		default:
			lo, hi := MinTimestamp, EndTimestamp // variables: uint64 conversion wraps
			v = int64(uint64(lo) + r.Uint64()%(uint64(hi)-uint64(lo)))
		}
		return Datum{k: t.Kind, i: v}
	case KindInterval:
		switch r.Intn(4) {
		case 0:
			// values that collide under PostgreSQL's 30-day month
			return DInterval([]IntervalValue{{Months: 1}, {Days: 30}, {Micros: 30 * microsPerDay}, {Days: 1}, {Micros: microsPerDay}, {Months: -1, Days: 30}, {}}[r.Intn(7)])
		case 1:
			return DInterval(IntervalValue{Months: int32(randInt(r, math.MinInt32, math.MaxInt32)), Days: int32(randInt(r, math.MinInt32, math.MaxInt32)), Micros: randInt(r, math.MinInt64, math.MaxInt64)})
		}
		return DInterval(IntervalValue{Months: int32(r.Intn(48) - 24), Days: int32(r.Intn(90) - 45), Micros: r.Int63n(2*microsPerDay) - microsPerDay})
	case KindArray:
		// Short arrays over few values, so that equal arrays, prefixes and
		// NULL elements meet.
		elems := make([]Datum, r.Intn(4))
		pool := make([]Datum, 3)
		for i := range pool {
			pool[i] = randDatum(r, t.ElemType())
		}
		for i := range elems {
			switch r.Intn(6) {
			case 0:
				elems[i] = NullDatum
			case 1:
				elems[i] = randDatum(r, t.ElemType())
			default:
				elems[i] = pool[r.Intn(len(pool))%(1+r.Intn(2))]
			}
		}
		return DArray(t.Elem, elems)
	}
	panic("randDatum: unsupported type " + t.Name())
}

func randInt(r *rand.Rand, lo, hi int64) int64 {
	switch r.Intn(5) {
	case 0:
		return []int64{lo, hi, 0, -1, 1, lo + 1, hi - 1}[r.Intn(7)]
	case 1:
		return int64(r.Intn(21) - 10)
	}
	span := uint64(hi) - uint64(lo)
	if span == math.MaxUint64 {
		return int64(r.Uint64())
	}
	return lo + int64(r.Uint64()%(span+1))
}

func randDecimal(r *rand.Rand) *apd.Decimal {
	switch r.Intn(12) {
	case 0:
		return &apd.Decimal{Form: apd.NaN}
	case 1:
		return &apd.Decimal{Form: apd.Infinite, Negative: r.Intn(2) == 0}
	case 2:
		return apd.New(0, -int32(r.Intn(4)))
	}
	var b strings.Builder
	n := 1 + r.Intn(30)
	if r.Intn(3) == 0 {
		n = 1 + r.Intn(3)
	}
	for i := 0; i < n; i++ {
		b.WriteByte(byte('0' + r.Intn(10)))
	}
	d := new(apd.Decimal)
	d.Coeff.SetString(b.String(), 10)
	d.Exponent = -int32(r.Intn(25))
	if r.Intn(4) == 0 {
		d.Exponent = int32(r.Intn(6)) // positive exponents come from arithmetic
	}
	d.Negative = r.Intn(2) == 0 && d.Coeff.Sign() != 0
	return d
}

func randText(r *rand.Rand) string {
	var b strings.Builder
	for i := r.Intn(8); i > 0; i-- {
		b.WriteString([]string{"a", "b", "\x00", "\x01", "é", "z", " ", "日", "\u00ff", "aa"}[r.Intn(10)])
	}
	return b.String()
}

func randJSONText(r *rand.Rand, depth int) string {
	switch k := r.Intn(7); {
	case depth > 0 && k == 0:
		var parts []string
		for i := r.Intn(3); i > 0; i-- {
			parts = append(parts, randJSONText(r, depth-1))
		}
		return "[" + strings.Join(parts, ",") + "]"
	case depth > 0 && k == 1:
		var parts []string
		for i := r.Intn(4); i > 0; i-- {
			parts = append(parts, strconv.Quote([]string{"a", "b", "ab", ""}[r.Intn(4)])+":"+randJSONText(r, depth-1))
		}
		return "{" + strings.Join(parts, ",") + "}"
	case k == 2:
		return []string{"true", "false", "null"}[r.Intn(3)]
	case k == 3:
		return strconv.Quote(randText(r)[:0] + []string{"x", "é", "a\"b", ""}[r.Intn(4)])
	}
	return strconv.Itoa(r.Intn(200) - 100)
}

// sameDatum reports whether two datums are identical in representation
// (stricter than Compare: 1.50 and 1.5 differ, -0 and 0 differ).
func sameDatum(a, b Datum) bool {
	if a.k != b.k || a.s != b.s || a.j != b.j {
		return false
	}
	if a.k == KindNumeric {
		return a.d.Form == b.d.Form && a.d.Negative == b.d.Negative && (a.d.Form != apd.Finite || (a.d.Exponent == b.d.Exponent && a.d.Coeff.Cmp(&b.d.Coeff) == 0))
	}
	if a.k == KindFloat32 || a.k == KindFloat64 {
		if math.IsNaN(a.Float()) && math.IsNaN(b.Float()) {
			return true
		}
	}
	return a.i == b.i
}
