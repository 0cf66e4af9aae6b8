package expr

import (
	"crypto/rand"

	"github.com/runneldb/runnel/internal/types"
)

func init() {
	// gen_random_uuid() is volatile: a new value at every call, so it is
	// refused in views (streamplan/check.go), like now() and random(),
	// and fine in DML and queries.
	regFunc("gen_random_uuid", &overload{args: nil, ret: types.UUID, volatile: true, fn: func(*EvalContext, []types.Datum) (types.Datum, error) {
		var b [16]byte
		rand.Read(b[:])         // never fails (crypto/rand, Go 1.24+)
		b[6] = b[6]&0x0f | 0x40 // version 4 (RFC 9562)
		b[8] = b[8]&0x3f | 0x80 // variant 10
		return types.DUUID(b), nil
	}})
}
