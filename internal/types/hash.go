package types

import (
	"math"
	"math/bits"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/apd/v3"
)

// Hashing for distribution (vnodes) and hash tables.
//
// The hash is persisted indirectly — a row's vnode is part of its
// state-table key — so HashDatum and Vnode must never change for a given
// value; hash_test.go pins golden values.
//
// Equality contract: SQL-equal values of the same Type hash equal
// (1.50 and 1.5 numerics, -0 and +0 floats, '1 mon' and '30 days'
// intervals). Across number kinds only integral values agree: an integer
// value hashes the same as int16, int32, int64, an integral float and an
// integral numeric, because each reduces to the same int64. Non-integral
// values of different number kinds (0.5::float8 vs 0.5::numeric) may hash
// differently; distribution keys have one fixed type, so that is enough.

// VnodeCount is the number of virtual nodes a table's rows are spread over.
const VnodeCount = 256

const (
	hashNull    = 0x9ae16a3b2f90404f
	hashNaN     = 0x7ff8000000000001
	hashPosInf  = 0x7ff0000000000000
	hashNegInf  = 0xfff0000000000000
	hashPrime1  = 0x9E3779B185EBCA87
	hashPrime2  = 0xC2B2AE3D27D4EB4F
	hashStrSeed = 0x27D4EB2F165667C5
)

// fmix64 is a 64-bit avalanche finalizer (as in MurmurHash3).
func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// combineHash folds a value hash into a running hash; order matters.
func combineHash(h, v uint64) uint64 {
	h ^= v * hashPrime2
	h = bits.RotateLeft64(h, 31)
	return h * hashPrime1
}

// HashDatum folds d's hash into h and returns the new running hash.
func HashDatum(h uint64, d Datum) uint64 { return combineHash(h, datumHash(d)) }

func intHash(v int64) uint64 { return fmix64(uint64(v)) }

func datumHash(d Datum) uint64 {
	switch d.k {
	case KindNull:
		return hashNull
	case KindBool, KindInt16, KindInt32, KindInt64, KindDate, KindTime, KindTimestamp, KindTimestamptz:
		return intHash(d.i)
	case KindFloat32, KindFloat64:
		return floatHash(d.Float())
	case KindNumeric:
		return numericHash(d.d)
	case KindVarchar, KindUnknown, KindJsonb, KindBytea, KindUUID:
		return xxhash.Sum64String(d.s) ^ hashStrSeed
	case KindInterval:
		hi, lo := IntervalCompareKey(d.Interval())
		return fmix64(lo) ^ fmix64(uint64(hi)+hashPrime1)
	case KindArray:
		return arrayHash(d)
	}
	return hashNull
}

func floatHash(f float64) uint64 {
	switch {
	case f != f:
		return hashNaN
	case math.IsInf(f, 1):
		return hashPosInf
	case math.IsInf(f, -1):
		return hashNegInf
	}
	if f == math.Trunc(f) && f >= -9.2e18 && f <= 9.2e18 {
		return intHash(int64(f)) // also maps -0 to 0
	}
	return fmix64(math.Float64bits(f))
}

func numericHash(d *apd.Decimal) uint64 {
	switch d.Form {
	case apd.NaN, apd.NaNSignaling:
		return hashNaN
	case apd.Infinite:
		if d.Negative {
			return hashNegInf
		}
		return hashPosInf
	}
	var scratch [48]byte
	digits := d.Coeff.Append(scratch[:0], 10)
	exp := int64(d.Exponent)
	for len(digits) > 1 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		exp++
	}
	if len(digits) == 1 && digits[0] == '0' {
		return intHash(0)
	}
	// Integral values that fit an int64 hash like integers.
	if exp >= 0 && int64(len(digits))+exp <= 18 {
		var v int64
		for _, c := range digits {
			v = v*10 + int64(c-'0')
		}
		for i := int64(0); i < exp; i++ {
			v *= 10
		}
		if d.Negative {
			v = -v
		}
		return intHash(v)
	}
	h := xxhash.Sum64(digits)
	h = combineHash(h, uint64(exp))
	if d.Negative {
		h = ^h
	}
	return h
}

// Vnode returns the virtual node of row for the distribution key columns.
func Vnode(row Row, distKey []int) uint16 {
	var h uint64
	for _, c := range distKey {
		h = HashDatum(h, row[c])
	}
	return uint16(fmix64(h) % VnodeCount)
}
