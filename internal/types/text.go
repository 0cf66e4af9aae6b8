package types

import (
	"math"
	"math/big"
	mbits "math/bits"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"
	"github.com/runneldb/runnel/internal/sqlerr"
)

// FormatOptions carries the session settings that text I/O depends on.
// A nil *FormatOptions means PostgreSQL's defaults with TimeZone UTC.
//
// Settings that Runnel does not let a session change are fixed at
// PostgreSQL 15's defaults: DateStyle 'ISO, MDY', IntervalStyle 'postgres',
// extra_float_digits 1 (shortest exact float output), bytea_output 'hex'.
type FormatOptions struct {
	// Location is the session TimeZone: timestamptz values are printed in
	// it, and timestamptz/timestamp input without an explicit zone is read
	// in it. nil means UTC.
	Location *time.Location
	// Now is the statement's notion of the current time for the special
	// inputs 'now', 'today', 'tomorrow' and 'yesterday' (PostgreSQL uses the
	// transaction start time). Zero means time.Now().
	Now time.Time
}

func (o *FormatOptions) location() *time.Location {
	if o == nil || o.Location == nil {
		return time.UTC
	}
	return o.Location
}

func (o *FormatOptions) now() time.Time {
	if o == nil || o.Now.IsZero() {
		return time.Now()
	}
	return o.Now
}

// FormatText renders d in PostgreSQL's text output format for type t.
// d must not be NULL (the wire protocol sends NULL as length -1).
func FormatText(d Datum, t Type, opt *FormatOptions) string {
	var scratch [64]byte
	return string(AppendText(scratch[:0], d, t, opt))
}

// AppendText appends PostgreSQL's text output for d (of type t) to buf.
// It does not allocate beyond growing buf, except for numerics with
// coefficients too large to be held inline and for timestamptz zone lookups.
func AppendText(buf []byte, d Datum, t Type, opt *FormatOptions) []byte {
	switch d.k {
	case KindNull:
		return buf // callers never pass NULL; render nothing rather than panic
	case KindBool:
		if d.i != 0 {
			return append(buf, 't')
		}
		return append(buf, 'f')
	case KindInt16, KindInt32, KindInt64:
		return strconv.AppendInt(buf, d.i, 10)
	case KindFloat32:
		return appendFloat(buf, d.Float(), 32)
	case KindFloat64:
		return appendFloat(buf, d.Float(), 64)
	case KindNumeric:
		return appendNumeric(buf, d.d)
	case KindVarchar, KindUnknown, KindJsonb:
		return append(buf, d.s...)
	case KindBytea:
		return appendByteaHex(buf, d.s)
	case KindUUID:
		return appendUUID(buf, d.s)
	case KindDate:
		return appendDate(buf, d.i)
	case KindTime:
		return appendTimeOfDay(buf, d.i)
	case KindTimestamp:
		return appendTimestamp(buf, d.i, false, nil)
	case KindTimestamptz:
		return appendTimestamp(buf, d.i, true, opt.location())
	case KindInterval:
		return appendInterval(buf, d.Interval())
	case KindArray:
		return appendArrayText(buf, d, t, opt)
	}
	return append(buf, d.String()...)
}

// ParseText parses s with PostgreSQL's input function for t, applying t's
// type modifier as an implicit (assignment) coercion would: numeric(p,s)
// rounds and may overflow, varchar(n) rejects over-long values. Errors are
// *sqlerr.Error with PostgreSQL's SQLSTATE and message.
func ParseText(s string, t Type, opt *FormatOptions) (Datum, error) {
	switch t.Kind {
	case KindBool:
		return parseBool(s)
	case KindInt16:
		v, err := parseInt(s, 16, "smallint")
		return DInt16(int16(v)), err
	case KindInt32:
		v, err := parseInt(s, 32, "integer")
		return DInt32(int32(v)), err
	case KindInt64:
		v, err := parseInt(s, 64, "bigint")
		return DInt64(v), err
	case KindFloat32:
		f, err := parseFloat(s, 32, "real")
		if err != nil {
			return NullDatum, err
		}
		return DFloat32(float32(f)), nil
	case KindFloat64:
		f, err := parseFloat(s, 64, "double precision")
		if err != nil {
			return NullDatum, err
		}
		return DFloat64(f), nil
	case KindNumeric:
		dec, err := parseNumeric(s)
		if err != nil {
			return NullDatum, err
		}
		return ApplyTypmod(DNumeric(dec), t, false)
	case KindVarchar:
		if err := checkEncoding(s); err != nil {
			return NullDatum, err
		}
		return ApplyTypmod(DVarchar(s), t, false)
	case KindUnknown:
		if err := checkEncoding(s); err != nil {
			return NullDatum, err
		}
		return DUnknown(s), nil
	case KindBytea:
		b, err := parseBytea(s)
		if err != nil {
			return NullDatum, err
		}
		return DBytea(b), nil
	case KindUUID:
		return ParseUUID(s)
	case KindDate:
		return parseDate(s, opt)
	case KindTime:
		v, err := parseTime(s)
		if err != nil {
			return NullDatum, err
		}
		return ApplyTypmod(DTime(v), t, false)
	case KindTimestamp:
		v, err := parseTimestamp(s, false, opt)
		if err != nil {
			return NullDatum, err
		}
		return ApplyTypmod(DTimestamp(v), t, false)
	case KindTimestamptz:
		v, err := parseTimestamp(s, true, opt)
		if err != nil {
			return NullDatum, err
		}
		return ApplyTypmod(DTimestamptz(v), t, false)
	case KindInterval:
		iv, err := parseInterval(s)
		if err != nil {
			return NullDatum, err
		}
		return DInterval(iv), nil
	case KindJsonb:
		if err := checkEncoding(s); err != nil {
			return NullDatum, err
		}
		j, err := ParseJsonb(s)
		if err != nil {
			return NullDatum, err
		}
		return DJsonb(j), nil
	case KindArray:
		if err := checkEncoding(s); err != nil {
			return NullDatum, err
		}
		return parseArrayText(s, t, opt)
	}
	return NullDatum, sqlerr.Errorf(sqlerr.FeatureNotSupported, "text input for type %s is not supported", t.Name())
}

func invalidSyntax(typ, s string) *sqlerr.Error {
	return sqlerr.Errorf(sqlerr.InvalidTextRepresentation, "invalid input syntax for type %s: %s", typ, pgQuote(s))
}

// pgQuote quotes s as PostgreSQL's error messages do ("%s" with the raw
// text inside double quotes, no escaping).
func pgQuote(s string) string { return `"` + s + `"` }

// checkEncoding rejects text that is not valid UTF-8 or contains NUL, as
// PostgreSQL does for a UTF8 database.
func checkEncoding(s string) error {
	for i := 0; i < len(s); {
		c := s[i]
		if c == 0 {
			return sqlerr.New(sqlerr.CharacterNotInRepertoire, `invalid byte sequence for encoding "UTF8": 0x00`)
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			end := i + 2
			if end > len(s) {
				end = len(s)
			}
			var b strings.Builder
			for j := i; j < end; j++ {
				if j > i {
					b.WriteByte(' ')
				}
				b.WriteString("0x")
				b.WriteString(strconv.FormatUint(uint64(s[j])|0x100, 16)[1:])
			}
			return sqlerr.Errorf(sqlerr.CharacterNotInRepertoire, `invalid byte sequence for encoding "UTF8": %s`, b.String())
		}
		i += n
	}
	return nil
}

// isSpace is PostgreSQL's scanner_isspace / isspace in the C locale.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func trimSpace(s string) string {
	for len(s) > 0 && isSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// ---- bool ----

func parseBool(s string) (Datum, error) {
	v := trimSpace(s)
	if v != "" {
		if b, ok := boolWord(v); ok {
			return DBool(b), nil
		}
	}
	return NullDatum, invalidSyntax("boolean", s)
}

// boolWord accepts what PostgreSQL's parse_bool accepts: any unambiguous
// prefix of true/false/yes/no, on/off (at least two letters), and 1/0.
func boolWord(v string) (bool, bool) {
	lower := strings.ToLower(v)
	switch lower[0] {
	case 't':
		return true, strings.HasPrefix("true", lower)
	case 'f':
		return false, strings.HasPrefix("false", lower)
	case 'y':
		return true, strings.HasPrefix("yes", lower)
	case 'n':
		return false, strings.HasPrefix("no", lower)
	case 'o':
		if len(lower) >= 2 && strings.HasPrefix("on", lower) {
			return true, true
		}
		if len(lower) >= 2 && strings.HasPrefix("off", lower) {
			return false, true
		}
	case '1':
		return true, len(lower) == 1
	case '0':
		return false, len(lower) == 1
	}
	return false, false
}

// ---- integers ----

// parseInt follows pg_strtoint16/32/64: optional surrounding whitespace,
// optional sign, decimal digits only. As there, the digits' magnitude is
// checked against the type's range (its negative end) as they are read,
// so digits too large for the type are out of range (22003) even when
// junk follows them; the positive end is checked after the syntax, so
// "32768x" is a syntax error (22P02) for smallint and "32769x" is not.
func parseInt(s string, bits int, typ string) (int64, error) {
	v := trimSpace(s)
	neg := false
	if v != "" && (v[0] == '+' || v[0] == '-') {
		neg = v[0] == '-'
		v = v[1:]
	}
	limit := uint64(1) << (bits - 1)
	var acc uint64
	i := 0
	for ; i < len(v) && v[i] >= '0' && v[i] <= '9'; i++ {
		d := uint64(v[i] - '0')
		if acc > (limit-d)/10 {
			return 0, sqlerr.Errorf(sqlerr.NumericValueOutOfRange, "value %s is out of range for type %s", pgQuote(s), typ)
		}
		acc = acc*10 + d
	}
	if i == 0 || i < len(v) {
		return 0, invalidSyntax(typ, s)
	}
	if !neg && acc == limit {
		return 0, sqlerr.Errorf(sqlerr.NumericValueOutOfRange, "value %s is out of range for type %s", pgQuote(s), typ)
	}
	if neg {
		return -int64(acc), nil
	}
	return int64(acc), nil
}

// ---- floats ----

func parseFloat(s string, bits int, typ string) (float64, error) {
	v := trimSpace(s)
	if v == "" {
		return 0, invalidSyntax(typ, s)
	}
	body := v
	neg := false
	if body[0] == '+' || body[0] == '-' {
		neg = body[0] == '-'
		body = body[1:]
	}
	switch strings.ToLower(body) {
	case "nan":
		// strtod's NaN: the quiet NaN with no payload, keeping a given sign.
		if neg {
			return math.Float64frombits(0xfff8000000000000), nil
		}
		return math.Float64frombits(0x7ff8000000000000), nil
	case "infinity", "inf":
		if neg {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	}
	if len(body) > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') {
		return parseHexFloat(s, v, body, neg, bits, typ)
	}
	// Plain decimal syntax: digits, one point, optional exponent.
	nonzero := false
	digits := 0
	i := 0
	for i < len(body) && body[i] >= '0' && body[i] <= '9' {
		nonzero = nonzero || body[i] != '0'
		i++
		digits++
	}
	if i < len(body) && body[i] == '.' {
		i++
		for i < len(body) && body[i] >= '0' && body[i] <= '9' {
			nonzero = nonzero || body[i] != '0'
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, invalidSyntax(typ, s)
	}
	if i < len(body) && (body[i] == 'e' || body[i] == 'E') {
		j := i + 1
		if j < len(body) && (body[j] == '+' || body[j] == '-') {
			j++
		}
		k := j
		for k < len(body) && body[k] >= '0' && body[k] <= '9' {
			k++
		}
		if k > j {
			i = k
		}
	}
	if i != len(body) {
		return 0, invalidSyntax(typ, s)
	}
	f, err := strconv.ParseFloat(v, bits)
	if err != nil || (f == 0 && nonzero) || math.IsInf(f, 0) {
		return 0, sqlerr.Errorf(sqlerr.NumericValueOutOfRange, "%s is out of range for type %s", pgQuote(v), typ)
	}
	return f, nil
}

// parseHexFloat accepts strtod's hexadecimal form: 0x, hex digits with an
// optional point, an optional binary exponent p[+-]n.
func parseHexFloat(s, v, body string, neg bool, bits int, typ string) (float64, error) {
	i := 2
	digits := 0
	for i < len(body) && isHex(body[i]) {
		i++
		digits++
	}
	if i < len(body) && body[i] == '.' {
		i++
		for i < len(body) && isHex(body[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, invalidSyntax(typ, s)
	}
	lit := body[:i]
	if i < len(body) && (body[i] == 'p' || body[i] == 'P') {
		j := i + 1
		if j < len(body) && (body[j] == '+' || body[j] == '-') {
			j++
		}
		k := j
		for k < len(body) && isDigit(body[k]) {
			k++
		}
		if k > j {
			lit = body[:k]
			i = k
		}
	}
	if i != len(body) {
		return 0, invalidSyntax(typ, s)
	}
	if !strings.ContainsAny(lit, "pP") {
		lit += "p0"
	}
	f, err := strconv.ParseFloat(lit, bits)
	if err != nil || math.IsInf(f, 0) {
		return 0, sqlerr.Errorf(sqlerr.NumericValueOutOfRange, "%s is out of range for type %s", pgQuote(v), typ)
	}
	if neg {
		f = -f
	}
	return f, nil
}

func isHex(c byte) bool { _, ok := unhex(c); return ok }

// appendFloat prints the shortest decimal that reads back exactly, in the
// layout of PostgreSQL's float4out/float8out with extra_float_digits > 0:
// positional notation for decimal exponents in [-4, P), scientific
// ("1e+15", "1.5e-05") otherwise, where P is 15 for float8 and 6 for float4.
func appendFloat(buf []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(buf, "NaN"...)
	case math.IsInf(f, 1):
		return append(buf, "Infinity"...)
	case math.IsInf(f, -1):
		return append(buf, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(buf, "-0"...)
		}
		return append(buf, '0')
	}
	var scratch [32]byte
	e := strconv.AppendFloat(scratch[:0], f, 'e', -1, bits) // [-]d[.ddd]e±XX
	if isHalfwayDecimal(e, f, bits) {
		// PostgreSQL's Ryu excludes the rounding interval's bounds: a
		// decimal exactly halfway to a neighbouring float is not used even
		// though it reads back correctly under ties-to-even. Take the
		// shortest correctly rounded decimal strictly inside instead.
		nd := 0
		for _, c := range e {
			if c == 'e' {
				break
			}
			if c >= '0' && c <= '9' {
				nd++
			}
		}
		for n := nd; n <= 17; n++ {
			e = strconv.AppendFloat(scratch[:0], f, 'e', n-1, bits)
			if back, err := strconv.ParseFloat(string(e), bits); err == nil && back == f && !isHalfwayDecimal(e, f, bits) {
				break
			}
		}
	}
	neg := e[0] == '-'
	if neg {
		e = e[1:]
	}
	epos := 0
	for epos < len(e) && e[epos] != 'e' {
		epos++
	}
	mant := e[:epos]
	exp := 0
	expNeg := e[epos+1] == '-'
	for _, c := range e[epos+2:] {
		exp = exp*10 + int(c-'0')
	}
	if expNeg {
		exp = -exp
	}
	// digits without the point
	var dg [24]byte
	nd := 0
	for _, c := range mant {
		if c != '.' {
			dg[nd] = c
			nd++
		}
	}
	prec := 15
	if bits == 32 {
		prec = 6
	}
	if neg {
		buf = append(buf, '-')
	}
	if exp < -4 || exp >= prec {
		buf = append(buf, dg[0])
		if nd > 1 {
			buf = append(buf, '.')
			buf = append(buf, dg[1:nd]...)
		}
		buf = append(buf, 'e')
		if exp < 0 {
			buf = append(buf, '-')
			exp = -exp
		} else {
			buf = append(buf, '+')
		}
		if exp < 10 {
			buf = append(buf, '0')
		}
		return strconv.AppendInt(buf, int64(exp), 10)
	}
	if exp < 0 {
		buf = append(buf, "0."...)
		for i := 0; i < -exp-1; i++ {
			buf = append(buf, '0')
		}
		return append(buf, dg[:nd]...)
	}
	intDigits := exp + 1
	if nd <= intDigits {
		buf = append(buf, dg[:nd]...)
		for i := nd; i < intDigits; i++ {
			buf = append(buf, '0')
		}
		return buf
	}
	buf = append(buf, dg[:intDigits]...)
	buf = append(buf, '.')
	return append(buf, dg[intDigits:nd]...)
}

// isHalfwayDecimal reports whether the decimal e ("[-]d.ddde±x") lies
// exactly halfway between f and one of its float neighbours. Cheap
// filters rule out almost every value before exact arithmetic: a halfway
// point of a normal float is (2M±1)·2^k with M its 53-bit (24-bit)
// significand, so it is a dyadic rational whose odd part is at least 2^52
// (2^23). A decimal sig·10^-n is dyadic only if 5^n divides sig, and its
// odd part is then the odd part of sig/5^n.
func isHalfwayDecimal(e []byte, f float64, bits int) bool {
	var sig uint64
	nd, exp, frac := 0, 0, 0
	i := 0
	if e[0] == '-' {
		i++
	}
	for ; i < len(e) && e[i] != 'e'; i++ {
		if e[i] == '.' {
			continue
		}
		sig = sig*10 + uint64(e[i]-'0')
		nd++
	}
	if i < len(e) {
		x, _ := strconv.Atoi(string(e[i+1:]))
		exp = x
	}
	// value = sig * 10^(exp - (nd-1))
	scale := exp - (nd - 1)
	if scale < 0 {
		frac = -scale
		if frac > 27 {
			return false
		}
		p5 := uint64(1)
		for k := 0; k < frac; k++ {
			p5 *= 5
		}
		if sig%p5 != 0 {
			return false
		}
		q := sig / p5
		minOdd := uint64(1) << 52
		minNormal := 2.2250738585072014e-308
		if bits == 32 {
			minOdd, minNormal = 1<<23, 1.1754943508222875e-38
		}
		if q == 0 || (q>>mbits.TrailingZeros64(q) < minOdd && math.Abs(f) >= minNormal) {
			return false
		}
	} else {
		limit := 9007199254740992.0 // 2^53
		if bits == 32 {
			limit = 16777216 // 2^24
		}
		if math.Abs(f) < limit {
			return false
		}
		minOdd := uint64(1) << 52
		if bits == 32 {
			minOdd = 1 << 23
		}
		if scale <= 27 && sig != 0 {
			p5 := uint64(1)
			for k := 0; k < scale; k++ {
				p5 *= 5
			}
			hi, lo := mbits.Mul64(sig>>mbits.TrailingZeros64(sig), p5)
			if hi == 0 && lo < minOdd {
				return false
			}
		}
	}
	d := new(big.Rat).SetInt(new(big.Int).SetUint64(sig))
	if scale >= 0 {
		d.Mul(d, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
	} else {
		d.Quo(d, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-scale)), nil)))
	}
	if e[0] == '-' {
		d.Neg(d)
	}
	for _, dir := range []float64{math.Inf(1), math.Inf(-1)} {
		var nb float64
		if bits == 32 {
			nb = float64(math.Nextafter32(float32(f), float32(dir)))
		} else {
			nb = math.Nextafter(f, dir)
		}
		if math.IsInf(nb, 0) {
			continue
		}
		mid := new(big.Rat).Add(new(big.Rat).SetFloat64(f), new(big.Rat).SetFloat64(nb))
		mid.Quo(mid, big.NewRat(2, 1))
		if mid.Cmp(d) == 0 {
			return true
		}
	}
	return false
}

// ---- numeric ----

// PostgreSQL's numeric limits: 131072 digits before the decimal point and
// 16383 after.
const (
	numericMaxWeightDigits = 131072
	numericMaxDscale       = 16383
	numericMaxPrecision    = 1000 // largest p in numeric(p,s)
)

// maxNumericExponent bounds the decimal exponent a decoded numeric may
// carry: PostgreSQL's own limits are far inside it, and it keeps corrupt
// bytes from asking for a 10^2000000000 multiplication.
const maxNumericExponent = 4 * (numericMaxWeightDigits + numericMaxDscale)

func numericOverflow() *sqlerr.Error {
	return sqlerr.New(sqlerr.NumericValueOutOfRange, "value overflows numeric format")
}

// parseNumeric follows numeric_in: whitespace, sign, digits with an
// optional point and exponent, or NaN / [+-]Infinity / [+-]inf. The result
// keeps the input's display scale (1.50 stays 1.50) and never has a
// positive exponent.
func parseNumeric(s string) (*apd.Decimal, error) {
	v := trimSpace(s)
	if v == "" {
		return nil, invalidSyntax("numeric", s)
	}
	body := v
	neg := false
	if body[0] == '+' || body[0] == '-' {
		neg = body[0] == '-'
		body = body[1:]
	}
	switch strings.ToLower(body) {
	case "nan":
		if body != v {
			return nil, invalidSyntax("numeric", s)
		}
		return &apd.Decimal{Form: apd.NaN}, nil
	case "infinity", "inf":
		return &apd.Decimal{Form: apd.Infinite, Negative: neg}, nil
	}
	i := 0
	var coeff []byte
	var scratch [40]byte
	coeff = scratch[:0]
	scale := 0
	sawDigit := false
	for i < len(body) && body[i] >= '0' && body[i] <= '9' {
		coeff = append(coeff, body[i])
		i++
		sawDigit = true
	}
	if i < len(body) && body[i] == '.' {
		i++
		for i < len(body) && body[i] >= '0' && body[i] <= '9' {
			coeff = append(coeff, body[i])
			scale++
			i++
			sawDigit = true
		}
	}
	if !sawDigit {
		return nil, invalidSyntax("numeric", s)
	}
	exp := int64(0)
	if i < len(body) && (body[i] == 'e' || body[i] == 'E') {
		i++
		eneg := false
		if i < len(body) && (body[i] == '+' || body[i] == '-') {
			eneg = body[i] == '-'
			i++
		}
		if i == len(body) || body[i] < '0' || body[i] > '9' {
			return nil, invalidSyntax("numeric", s)
		}
		for i < len(body) && body[i] >= '0' && body[i] <= '9' {
			exp = exp*10 + int64(body[i]-'0')
			if exp > 1000000000 {
				return nil, invalidSyntax("numeric", s)
			}
			i++
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(body) {
		return nil, invalidSyntax("numeric", s)
	}
	// PostgreSQL's dscale is max(0, scale - exp); an exponent that makes the
	// scale negative multiplies out into trailing zeros.
	dscale := int64(scale) - exp
	if dscale < 0 {
		for k := int64(0); k < -dscale; k++ {
			coeff = append(coeff, '0')
			if len(coeff) > numericMaxWeightDigits+numericMaxDscale+1 {
				return nil, numericOverflow()
			}
		}
		dscale = 0
	}
	if dscale > numericMaxDscale {
		return nil, numericOverflow()
	}
	// strip leading zeros for the weight check
	lead := 0
	for lead < len(coeff)-1 && coeff[lead] == '0' {
		lead++
	}
	if int64(len(coeff)-lead)-dscale > numericMaxWeightDigits {
		return nil, numericOverflow()
	}
	d := new(apd.Decimal)
	if _, ok := d.Coeff.SetString(string(coeff[lead:]), 10); !ok {
		return nil, invalidSyntax("numeric", s)
	}
	d.Exponent = int32(-dscale)
	d.Negative = neg && d.Coeff.Sign() != 0
	return d, nil
}

// appendNumeric prints a decimal as numeric_out does: positional notation,
// the value's own scale, no sign on zero.
func appendNumeric(buf []byte, d *apd.Decimal) []byte {
	if d == nil {
		return append(buf, '0')
	}
	switch d.Form {
	case apd.NaN, apd.NaNSignaling:
		return append(buf, "NaN"...)
	case apd.Infinite:
		if d.Negative {
			return append(buf, "-Infinity"...)
		}
		return append(buf, "Infinity"...)
	}
	var scratch [48]byte
	digits := d.Coeff.Append(scratch[:0], 10)
	if d.Negative && !(len(digits) == 1 && digits[0] == '0') {
		buf = append(buf, '-')
	}
	if d.Exponent >= 0 {
		buf = append(buf, digits...)
		if !(len(digits) == 1 && digits[0] == '0') {
			for i := int32(0); i < d.Exponent; i++ {
				buf = append(buf, '0')
			}
		}
		return buf
	}
	frac := int(-d.Exponent)
	if len(digits) <= frac {
		buf = append(buf, "0."...)
		for i := len(digits); i < frac; i++ {
			buf = append(buf, '0')
		}
		return append(buf, digits...)
	}
	buf = append(buf, digits[:len(digits)-frac]...)
	buf = append(buf, '.')
	return append(buf, digits[len(digits)-frac:]...)
}

var numericRoundCtx = apd.Context{
	Precision:   numericMaxWeightDigits + numericMaxDscale + 2,
	MaxExponent: apd.MaxExponent,
	MinExponent: apd.MinExponent,
	Rounding:    apd.RoundHalfUp, // PostgreSQL rounds ties away from zero
}

// NumericTypmod returns the typmod of numeric(precision, scale).
func NumericTypmod(precision, scale int) int32 {
	return int32(precision)<<16 | int32(scale)&0xffff
}

// NumericPrecisionScale splits a numeric typmod; ok is false for -1.
func NumericPrecisionScale(mod int32) (precision, scale int, ok bool) {
	if mod < 0 {
		return 0, 0, false
	}
	return int(mod >> 16), int(int16(mod & 0xffff)), true
}

// ApplyTypmod coerces d to t's type modifier. explicit selects the rules of
// an explicit CAST (varchar(n) silently truncates) over those of an
// implicit or assignment coercion (varchar(n) errors unless the excess is
// spaces). numeric(p,s) rounds to s digits and fails with 22003 when the
// result needs more than p digits; time/timestamp(p) round the fraction.
// Datums of other kinds, NULL and an absent modifier pass through.
func ApplyTypmod(d Datum, t Type, explicit bool) (Datum, error) {
	if t.Mod < 0 || d.k == KindNull {
		return d, nil
	}
	switch t.Kind {
	case KindArray:
		if d.k != KindArray {
			return d, nil
		}
		return applyArrayTypmod(d, t, explicit)
	case KindVarchar:
		if t.Text || d.k != KindVarchar {
			return d, nil
		}
		n := int(t.Mod)
		if len(d.s) <= n || utf8.RuneCountInString(d.s) <= n {
			return d, nil
		}
		// byte offset of the n-th rune
		cut := 0
		for r := 0; r < n; r++ {
			_, sz := utf8.DecodeRuneInString(d.s[cut:])
			cut += sz
		}
		if !explicit {
			for i := cut; i < len(d.s); i++ {
				if d.s[i] != ' ' {
					return NullDatum, sqlerr.Errorf(sqlerr.StringDataRightTruncation, "value too long for type character varying(%d)", n)
				}
			}
		}
		return DVarchar(d.s[:cut]), nil
	case KindNumeric:
		if d.k != KindNumeric {
			return d, nil
		}
		return applyNumericTypmod(d, t.Mod)
	case KindTime, KindTimestamp, KindTimestamptz:
		if d.k != t.Kind || t.Mod >= 6 {
			return d, nil
		}
		if d.k != KindTime && (d.i == math.MinInt64 || d.i == math.MaxInt64) {
			return d, nil
		}
		d.i = roundMicros(d.i, int(t.Mod))
		return d, nil
	}
	return d, nil
}

// roundMicros rounds a microsecond count to prec fractional digits, ties
// away from zero (PostgreSQL's AdjustTimestampForTypmod).
func roundMicros(v int64, prec int) int64 {
	scale := int64(1)
	for i := prec; i < 6; i++ {
		scale *= 10
	}
	half := scale / 2
	if v >= 0 {
		return (v + half) / scale * scale
	}
	return -((-v + half) / scale * scale)
}

func applyNumericTypmod(d Datum, mod int32) (Datum, error) {
	prec, scale, _ := NumericPrecisionScale(mod)
	x := d.d
	switch x.Form {
	case apd.NaN, apd.NaNSignaling:
		return d, nil
	case apd.Infinite:
		return NullDatum, sqlerr.New(sqlerr.NumericValueOutOfRange, "numeric field overflow").
			WithDetail("A field with precision %d, scale %d cannot hold an infinite value.", prec, scale)
	}
	r := new(apd.Decimal)
	if _, err := numericRoundCtx.Quantize(r, x, int32(-scale)); err != nil {
		return NullDatum, numericOverflow()
	}
	if r.Coeff.Sign() == 0 {
		r.Negative = false
	}
	// integer digits = total digits + exponent (exponent is -scale)
	if r.Coeff.Sign() != 0 {
		nd := int64(len(r.Coeff.String())) + int64(r.Exponent)
		if nd > int64(prec-scale) {
			return NullDatum, sqlerr.New(sqlerr.NumericValueOutOfRange, "numeric field overflow").
				WithDetail("A field with precision %d, scale %d must round to an absolute value less than %s%d.", prec, scale, "10^", prec-scale)
		}
	}
	if r.Exponent > 0 {
		// negative scale: keep the value with exponent 0 (dscale 0)
		var mult apd.BigInt
		mult.Exp(apd.NewBigInt(10), apd.NewBigInt(int64(r.Exponent)), nil)
		r.Coeff.Mul(&r.Coeff, &mult)
		r.Exponent = 0
	}
	return DNumeric(r), nil
}

// ---- bytea ----

const hexDigits = "0123456789abcdef"

func appendByteaHex(buf []byte, s string) []byte {
	buf = append(buf, '\\', 'x')
	for i := 0; i < len(s); i++ {
		buf = append(buf, hexDigits[s[i]>>4], hexDigits[s[i]&15])
	}
	return buf
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// parseBytea accepts the hex format (\x followed by hex digit pairs,
// whitespace allowed between pairs) and the escape format (octal \nnn,
// doubled backslash, other bytes literally).
func parseBytea(s string) ([]byte, error) {
	if len(s) >= 2 && s[0] == '\\' && s[1] == 'x' {
		out := make([]byte, 0, (len(s)-2)/2)
		for i := 2; i < len(s); {
			c := s[i]
			if isSpace(c) {
				i++
				continue
			}
			// PostgreSQL reports these with 22023 invalid_parameter_value.
			hi, ok := unhex(c)
			if !ok {
				return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "invalid hexadecimal digit: %s", pgQuote(s[i:i+utf8Len(s[i:])]))
			}
			if i+1 >= len(s) {
				return nil, sqlerr.New(sqlerr.InvalidParameterValue, "invalid hexadecimal data: odd number of digits")
			}
			lo, ok := unhex(s[i+1])
			if !ok {
				return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "invalid hexadecimal digit: %s", pgQuote(s[i+1:i+1+utf8Len(s[i+1:])]))
			}
			out = append(out, hi<<4|lo)
			i += 2
		}
		return out, nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 < len(s) && s[i+1] == '\\' {
			out = append(out, '\\')
			i += 2
			continue
		}
		if i+3 < len(s) && isOct(s[i+1]) && s[i+1] <= '3' && isOct(s[i+2]) && isOct(s[i+3]) {
			out = append(out, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 4
			continue
		}
		return nil, sqlerr.New(sqlerr.InvalidTextRepresentation, "invalid input syntax for type bytea")
	}
	return out, nil
}

func isOct(c byte) bool { return c >= '0' && c <= '7' }

func utf8Len(s string) int {
	_, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return 0
	}
	return n
}
