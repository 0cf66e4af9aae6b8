package expr

import (
	"github.com/runneldb/runnel/internal/sqlerr"
)

// SQLSTATE codes used here that sqlerr does not (yet) name.
const (
	codeCannotCoerce             = "42846"
	codeInvalidArgumentForPower  = "2201F"
	codeInvalidArgumentForLog    = "2201E"
	codeInvalidRegex             = "2201B"
	codeInvalidEscapeCharacter   = "22019"
	codeInvalidParameterValue    = sqlerr.InvalidParameterValue
	codeNumericValueOutOfRange   = sqlerr.NumericValueOutOfRange
	codeDatetimeFieldOverflow    = sqlerr.DatetimeFieldOverflow
	codeFeatureNotSupported      = sqlerr.FeatureNotSupported
	codeInvalidTextRepresentaion = sqlerr.InvalidTextRepresentation
)

// sqlError builds a user-facing error. All errors this package creates go
// through here or through the shared values below.
func sqlError(code, format string, args ...any) error {
	return sqlerr.Errorf(code, format, args...)
}

var (
	errSmallintOutOfRange = sqlerr.New(sqlerr.NumericValueOutOfRange, "smallint out of range")
	errIntegerOutOfRange  = sqlerr.New(sqlerr.NumericValueOutOfRange, "integer out of range")
	errBigintOutOfRange   = sqlerr.New(sqlerr.NumericValueOutOfRange, "bigint out of range")
	errDivisionByZero     = sqlerr.New(sqlerr.DivisionByZero, "division by zero")
	errFloatOverflow      = sqlerr.New(sqlerr.NumericValueOutOfRange, "value out of range: overflow")
	errFloatUnderflow     = sqlerr.New(sqlerr.NumericValueOutOfRange, "value out of range: underflow")
	errIntervalOutOfRange = sqlerr.New(sqlerr.DatetimeFieldOverflow, "interval out of range")
	errDateOutOfRange     = sqlerr.New(sqlerr.DatetimeFieldOverflow, "date out of range")
	errTimestampOutOfRng  = sqlerr.New(sqlerr.DatetimeFieldOverflow, "timestamp out of range")
)

var errDateOutOfRangeForTS = sqlerr.New(sqlerr.DatetimeFieldOverflow, "date out of range for timestamp")
