package expr

import (
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// Set-returning functions' generators, shared by the batch executor (FROM
// and select lists) and the streaming ProjectSet. A generator returns the
// next value and true, or false when done; a nil generator yields nothing.

// SelectListSRF returns the generator of the set-returning function name
// (generate_series or unnest) over evaluated args, of result type typ.
func SelectListSRF(name string, args []types.Datum, typ types.Type, loc *time.Location) (func() (types.Datum, bool, error), error) {
	if name == "unnest" {
		return unnestVector(args[0]), nil
	}
	return GenerateSeries(args, typ, loc)
}

// GenerateSeries returns the generator for generate_series(start, stop
// [, step]) of result type typ; a NULL argument gives no rows (a nil
// generator).
func GenerateSeries(args []types.Datum, typ types.Type, loc *time.Location) (func() (types.Datum, bool, error), error) {
	for _, a := range args {
		if a.IsNull() {
			return nil, nil
		}
	}
	switch typ.Kind {
	case types.KindInt32, types.KindInt64:
		cur, stop, step := args[0].Int(), args[1].Int(), int64(1)
		if len(args) > 2 {
			step = args[2].Int()
		}
		if step == 0 {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "step size cannot equal zero")
		}
		done := false
		return func() (types.Datum, bool, error) {
			if done || (step > 0 && cur > stop) || (step < 0 && cur < stop) {
				return types.NullDatum, false, nil
			}
			v := cur
			next := cur + step
			if (step > 0 && next < cur) || (step < 0 && next > cur) {
				done = true // overflow: this was the last value
			}
			cur = next
			if typ.Kind == types.KindInt32 {
				return types.DInt32(int32(v)), true, nil
			}
			return types.DInt64(v), true, nil
		}, nil
	case types.KindNumeric:
		cur := types.ToDecimal(args[0])
		stop := types.ToDecimal(args[1])
		step := apd.New(1, 0)
		if len(args) > 2 {
			step = types.ToDecimal(args[2])
		}
		if step.IsZero() {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "step size cannot equal zero")
		}
		neg := step.Negative
		return func() (types.Datum, bool, error) {
			c := cur.Cmp(stop)
			if (!neg && c > 0) || (neg && c < 0) {
				return types.NullDatum, false, nil
			}
			v := cur
			next := new(apd.Decimal)
			if _, err := apd.BaseContext.WithPrecision(1000).Add(next, cur, step); err != nil {
				return types.NullDatum, false, sqlerr.Wrap(err, sqlerr.NumericValueOutOfRange, "numeric overflow")
			}
			cur = next
			return types.DNumeric(v), true, nil
		}, nil
	case types.KindTimestamp, types.KindTimestamptz:
		if len(args) < 3 {
			return nil, sqlerr.New(sqlerr.UndefinedFunction, "function generate_series(timestamp, timestamp) does not exist")
		}
		cur, stop := args[0].Int(), args[1].Int()
		iv := args[2].Interval()
		if iv.Months == 0 && iv.Days == 0 && iv.Micros == 0 {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "step size cannot equal zero")
		}
		if typ.Kind == types.KindTimestamp || loc == nil {
			loc = time.UTC
		}
		// The sign of the step decides the direction, as PostgreSQL does by
		// comparing the step with a zero interval.
		neg := (int64(iv.Months)*30+int64(iv.Days))*86400e6+iv.Micros < 0
		return func() (types.Datum, bool, error) {
			if (!neg && cur > stop) || (neg && cur < stop) {
				return types.NullDatum, false, nil
			}
			v := cur
			t := time.UnixMicro(cur).In(loc).AddDate(0, int(iv.Months), int(iv.Days))
			cur = t.UnixMicro() + iv.Micros
			if typ.Kind == types.KindTimestamp {
				return types.DTimestamp(v), true, nil
			}
			return types.DTimestamptz(v), true, nil
		}, nil
	}
	return nil, sqlerr.Errorf(sqlerr.UndefinedFunction, "function generate_series(%s) does not exist", typ.Name())
}

// unnestVector yields the elements of an oidvector (types.OIDVector:
// space-separated oids, PostgreSQL's output form); NULL yields nothing.
func unnestVector(v types.Datum) func() (types.Datum, bool, error) {
	var elems []string
	if !v.IsNull() {
		elems = strings.Fields(v.Str())
	}
	return func() (types.Datum, bool, error) {
		if len(elems) == 0 {
			return types.NullDatum, false, nil
		}
		n, err := strconv.ParseInt(elems[0], 10, 32)
		if err != nil {
			return types.NullDatum, false, sqlerr.Errorf(sqlerr.InvalidTextRepresentation, "invalid input syntax for type oid: %q", elems[0])
		}
		elems = elems[1:]
		return types.DInt32(int32(n)), true, nil
	}
}
