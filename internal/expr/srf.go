package expr

import (
	"strconv"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// Set-returning functions' generators, shared by the batch executor (FROM
// and select lists) and the streaming ProjectSet. A generator returns the
// next value and true, or false when done; a nil generator yields nothing.

// IsSelectListSRF reports whether SelectListSRF knows name.
func IsSelectListSRF(name string) bool {
	switch name {
	case "generate_series", "unnest", "generate_subscripts", "_pg_expandarray":
		return true
	}
	return isJSONSRFCall(name)
}

// SelectListSRF returns the generator of the set-returning function name
// (generate_series, or unnest, generate_subscripts and
// information_schema._pg_expandarray over the system catalogs' array-like
// values) over evaluated args, the first of type argType, of result type
// typ.
func SelectListSRF(name string, args []types.Datum, argType, typ types.Type, loc *time.Location) (func() (types.Datum, bool, error), error) {
	switch name {
	case "unnest":
		if argType.IsArray() {
			return UnnestArray(args[0]), nil
		}
		return unnestVector(args[0], argType, typ), nil
	case "generate_subscripts":
		if argType.IsArray() {
			return arraySubscripts(args), nil
		}
		return vectorSubscripts(args, argType), nil
	case "_pg_expandarray":
		return expandArray(args[0], argType), nil
	}
	if isJSONSRFCall(name) {
		return jsonSRF(name, args[0]) // see jsonb_srf.go
	}
	return GenerateSeries(args, typ, loc)
}

// UnnestArray yields an array's elements in order; NULL yields nothing.
func UnnestArray(v types.Datum) func() (types.Datum, bool, error) {
	var elems []types.Datum
	if !v.IsNull() {
		elems = v.ArrayElems()
	}
	return func() (types.Datum, bool, error) {
		if len(elems) == 0 {
			return types.NullDatum, false, nil
		}
		e := elems[0]
		elems = elems[1:]
		return e, true, nil
	}
}

// arraySubscripts is generate_subscripts(arr, dim [, reverse]): 1..n for
// dim 1, nothing for NULL or another dimension.
func arraySubscripts(args []types.Datum) func() (types.Datum, bool, error) {
	n := 0
	if !args[0].IsNull() && !args[1].IsNull() && args[1].Int() == 1 {
		n = args[0].ArrayLen()
	}
	reverse := len(args) > 2 && !args[2].IsNull() && args[2].Bool()
	i := 0
	return func() (types.Datum, bool, error) {
		if i >= n {
			return types.NullDatum, false, nil
		}
		v := i + 1
		if reverse {
			v = n - i
		}
		i++
		return types.DInt32(int32(v)), true, nil
	}
}

// expandArray is information_schema._pg_expandarray(arr) over a catalog
// array: one record "(x,n)" per element x at 1-based position n
// (types.ExpandArrayRecord).
func expandArray(v types.Datum, t types.Type) func() (types.Datum, bool, error) {
	var elems []string
	if !v.IsNull() {
		elems = types.CatalogArrayElems(v.Str(), t)
	}
	n := 0
	return func() (types.Datum, bool, error) {
		if n >= len(elems) {
			return types.NullDatum, false, nil
		}
		n++
		return types.DVarchar("(" + elems[n-1] + "," + strconv.Itoa(n) + ")"), true, nil
	}
}

// vectorSubscripts is generate_subscripts(arr, dim [, reverse]) for the
// system catalogs' arrays: lower .. lower+n-1 for dim 1 (the vectors'
// lower bound is 0, as in PostgreSQL), nothing for NULL or another
// dimension.
func vectorSubscripts(args []types.Datum, t types.Type) func() (types.Datum, bool, error) {
	n := 0
	_, lower, _ := t.CatalogArray()
	if !args[0].IsNull() && !args[1].IsNull() && args[1].Int() == 1 {
		n = len(types.CatalogArrayElems(args[0].Str(), t))
	}
	reverse := len(args) > 2 && !args[2].IsNull() && args[2].Bool()
	i := 0
	return func() (types.Datum, bool, error) {
		if i >= n {
			return types.NullDatum, false, nil
		}
		v := i
		if reverse {
			v = n - 1 - i
		}
		i++
		return types.DInt32(int32(lower + v)), true, nil
	}
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

// unnestVector yields the elements of a catalog array
// (types.CatalogArray: oidvector, int2vector, name[]) as elem; NULL
// yields nothing.
func unnestVector(v types.Datum, t, elem types.Type) func() (types.Datum, bool, error) {
	var elems []string
	if !v.IsNull() {
		elems = types.CatalogArrayElems(v.Str(), t)
	}
	return func() (types.Datum, bool, error) {
		if len(elems) == 0 {
			return types.NullDatum, false, nil
		}
		if elem.Kind == types.KindVarchar {
			e := elems[0]
			elems = elems[1:]
			return types.DVarchar(e), true, nil
		}
		if elem.Kind == types.KindInt16 {
			n, err := strconv.ParseInt(elems[0], 10, 16)
			if err != nil {
				return types.NullDatum, false, sqlerr.Errorf(sqlerr.InvalidTextRepresentation, "invalid input syntax for type smallint: %q", elems[0])
			}
			elems = elems[1:]
			return types.DInt16(int16(n)), true, nil
		}
		n, err := strconv.ParseInt(elems[0], 10, 32)
		if err != nil {
			return types.NullDatum, false, sqlerr.Errorf(sqlerr.InvalidTextRepresentation, "invalid input syntax for type oid: %q", elems[0])
		}
		elems = elems[1:]
		return types.DInt32(int32(n)), true, nil
	}
}
