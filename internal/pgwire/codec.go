package pgwire

import (
	"time"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// This file is the only place that converts between datums and their wire
// representations; the conversions themselves belong to internal/types.

// formatOptions carries the session settings that shape text I/O.
type formatOptions struct {
	types.FormatOptions
}

// setTimeZone follows the session's TimeZone parameter. A zone Go cannot
// load (PostgreSQL also accepts POSIX-style specs) leaves the previous one.
func (o *formatOptions) setTimeZone(name string) {
	if loc, err := time.LoadLocation(name); err == nil {
		o.Location = loc
	}
}

// appendText appends d's text representation (never called for NULL).
func appendText(buf []byte, d types.Datum, t types.Type, o *formatOptions) ([]byte, error) {
	return types.AppendText(buf, d, t, &o.FormatOptions), nil
}

// appendBinary appends d's binary representation (never called for NULL).
func appendBinary(buf []byte, d types.Datum, t types.Type) ([]byte, error) {
	if d.Kind() == types.KindNull {
		return buf, sqlerr.Errorf(sqlerr.FeatureNotSupported, "binary output of type %s is not supported", t.Name())
	}
	return types.AppendBinary(buf, d, t), nil
}

// parseText parses a text-format parameter or COPY field of type t.
func parseText(s string, t types.Type, o *formatOptions) (types.Datum, error) {
	if t.Kind == types.KindNull {
		return types.DUnknown(s), nil
	}
	return types.ParseText(s, t, &o.FormatOptions)
}

// parseBinary parses a binary-format parameter of type t.
func parseBinary(b []byte, t types.Type) (types.Datum, error) {
	if t.Kind == types.KindNull {
		return types.NullDatum, sqlerr.New(sqlerr.IndeterminateDatatype, "could not determine data type of a binary parameter")
	}
	return types.ParseBinary(b, t)
}
