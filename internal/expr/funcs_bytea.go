package expr

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// Binary-string functions: encode/decode, the SHA-2 digests,
// convert_from/convert_to and overlay, with PostgreSQL 15's results and
// SQLSTATEs (bad input to decode is 22023, as PostgreSQL's encode.c).

// encodeBytes is encode(bytea, format).
func encodeBytes(b, format string) (types.Datum, error) {
	switch strings.ToLower(format) {
	case "hex":
		return txt(hex.EncodeToString([]byte(b))), nil
	case "base64":
		// PostgreSQL breaks base64 output into lines of 76 characters.
		s := base64.StdEncoding.EncodeToString([]byte(b))
		var out strings.Builder
		for len(s) > 76 {
			out.WriteString(s[:76])
			out.WriteByte('\n')
			s = s[76:]
		}
		out.WriteString(s)
		return txt(out.String()), nil
	case "escape":
		var out strings.Builder
		for i := 0; i < len(b); i++ {
			c := b[i]
			switch {
			case c == '\\':
				out.WriteString(`\\`)
			case c == 0 || c >= 0x80:
				out.WriteString(`\` + leftPad(strconv.FormatInt(int64(c), 8), 3))
			default:
				out.WriteByte(c)
			}
		}
		return txt(out.String()), nil
	}
	return types.NullDatum, sqlError(codeInvalidParameterValue, "unrecognized encoding: \"%s\"", format)
}

func leftPad(s string, n int) string {
	for len(s) < n {
		s = "0" + s
	}
	return s
}

// decodeBytes is decode(text, format).
func decodeBytes(s, format string) (types.Datum, error) {
	switch strings.ToLower(format) {
	case "hex":
		var out []byte
		for i := 0; i < len(s); {
			c := s[i]
			if c == ' ' || c == '\n' || c == '\t' || c == '\r' {
				i++
				continue
			}
			hi, ok := hexVal(c)
			if !ok {
				return types.NullDatum, sqlError(codeInvalidParameterValue, "invalid hexadecimal digit: \"%s\"", firstRune(s[i:]))
			}
			if i+1 >= len(s) {
				return types.NullDatum, sqlError(codeInvalidParameterValue, "invalid hexadecimal data: odd number of digits")
			}
			lo, ok := hexVal(s[i+1])
			if !ok {
				return types.NullDatum, sqlError(codeInvalidParameterValue, "invalid hexadecimal digit: \"%s\"", firstRune(s[i+1:]))
			}
			out = append(out, hi<<4|lo)
			i += 2
		}
		return types.DBytea(out), nil
	case "base64":
		clean := strings.Map(func(r rune) rune {
			if r == ' ' || r == '\n' || r == '\t' || r == '\r' {
				return -1
			}
			return r
		}, s)
		for _, r := range clean {
			if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '+' || r == '/' || r == '=') {
				return types.NullDatum, sqlError(codeInvalidParameterValue, "invalid symbol \"%s\" found while decoding base64 sequence", string(r))
			}
		}
		if len(clean)%4 != 0 {
			// PostgreSQL accepts a missing final padding only when no
			// partial quantum is left; anything else is a bad end.
			return types.NullDatum, sqlError(codeInvalidParameterValue, "invalid base64 end sequence").(*sqlerr.Error).
				WithHint("Input data is missing padding, is truncated, or is otherwise corrupted.")
		}
		out, err := base64.StdEncoding.DecodeString(clean)
		if err != nil {
			return types.NullDatum, sqlError(codeInvalidParameterValue, "unexpected \"=\" while decoding base64 sequence")
		}
		return types.DBytea(out), nil
	case "escape":
		var out []byte
		for i := 0; i < len(s); {
			c := s[i]
			if c != '\\' {
				out = append(out, c)
				i++
				continue
			}
			switch {
			case i+1 < len(s) && s[i+1] == '\\':
				out = append(out, '\\')
				i += 2
			case i+3 < len(s) && isOct(s[i+1]) && s[i+1] <= '3' && isOct(s[i+2]) && isOct(s[i+3]):
				out = append(out, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
				i += 4
			default:
				return types.NullDatum, sqlError(codeInvalidTextRepresentaion, "invalid input syntax for type bytea")
			}
		}
		return types.DBytea(out), nil
	}
	return types.NullDatum, sqlError(codeInvalidParameterValue, "unrecognized encoding: \"%s\"", format)
}

func isOct(c byte) bool { return c >= '0' && c <= '7' }

func hexVal(c byte) (byte, bool) {
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

func firstRune(s string) string {
	_, n := utf8.DecodeRuneInString(s)
	return s[:n]
}

// encodingName normalises a PostgreSQL encoding name (case and
// punctuation are ignored, as pg_char_to_encoding does); only UTF8,
// LATIN1 and SQL_ASCII are known.
func encodingName(n string) string {
	n = strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == ' ' {
			return -1
		}
		return r
	}, strings.ToUpper(n))
	switch n {
	case "UTF8", "UNICODE":
		return "UTF8"
	case "LATIN1", "ISO88591":
		return "LATIN1"
	case "SQLASCII":
		return "SQL_ASCII"
	}
	return ""
}

func convertFrom(b, enc string) (types.Datum, error) {
	switch encodingName(enc) {
	case "UTF8", "SQL_ASCII":
		if err := checkUTF8(b); err != nil {
			return types.NullDatum, err
		}
		return txt(b), nil
	case "LATIN1":
		r := make([]rune, len(b))
		for i := 0; i < len(b); i++ {
			r[i] = rune(b[i])
		}
		return txt(string(r)), nil
	}
	return types.NullDatum, sqlError(codeInvalidParameterValue, "invalid source encoding name \"%s\"", enc)
}

func convertTo(s, enc string) (types.Datum, error) {
	switch encodingName(enc) {
	case "UTF8", "SQL_ASCII":
		return types.DByteaString(s), nil
	case "LATIN1":
		out := make([]byte, 0, len(s))
		for _, r := range s {
			if r > 0xFF {
				return types.NullDatum, sqlError(sqlerr.UntranslatableCharacter, "character with byte sequence %s in encoding \"UTF8\" has no equivalent in encoding \"LATIN1\"", utf8Bytes(r))
			}
			out = append(out, byte(r))
		}
		return types.DBytea(out), nil
	}
	return types.NullDatum, sqlError(codeInvalidParameterValue, "invalid destination encoding name \"%s\"", enc)
}

func utf8Bytes(r rune) string {
	var buf [4]byte
	n := utf8.EncodeRune(buf[:], r)
	parts := make([]string, n)
	for i := 0; i < n; i++ {
		parts[i] = "0x" + hex.EncodeToString(buf[i:i+1])
	}
	return strings.Join(parts, " ")
}

// checkUTF8 reports the first invalid byte sequence as PostgreSQL does
// (22021).
func checkUTF8(b string) error {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRuneInString(b[i:])
		if r == 0 {
			return sqlError(sqlerr.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\": 0x00")
		}
		if r == utf8.RuneError && n <= 1 {
			end := min(i+2, len(b))
			parts := []string{}
			for j := i; j < end; j++ {
				parts = append(parts, "0x"+hex.EncodeToString([]byte{b[j]}))
			}
			return sqlError(sqlerr.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\": %s", strings.Join(parts, " "))
		}
		i += n
	}
	return nil
}

// overlayString is overlay(s placing r from start [for count]) over
// characters (runes) or bytes: s's first start-1 elements, r, then s from
// start+count on.
func overlayString(s, r string, start, count int64, hasCount, bytes bool) (string, error) {
	if !hasCount {
		count = int64(utf8.RuneCountInString(r))
		if bytes {
			count = int64(len(r))
		}
	}
	if start <= 0 {
		return "", sqlError("22011", "negative substring length not allowed")
	}
	end, ok := add64(start, count)
	if !ok {
		return "", sqlError(sqlerr.NumericValueOutOfRange, "integer out of range")
	}
	if bytes {
		head := s[:min(int64(len(s)), start-1)]
		tail := ""
		if end-1 < int64(len(s)) && end >= 1 {
			tail = s[end-1:]
		} else if end < 1 {
			tail = s
		}
		return head + r + tail, nil
	}
	head := runeSlice(s, 0, start-1)
	tail := runeSlice(s, end-1, int64(len(s))+1)
	if end < 1 {
		tail = s
	}
	return head + r + tail, nil
}

func init() {
	T := func(ts ...types.Type) []types.Type { return ts }
	X, BY, I := types.Text, types.Bytea, types.Int32
	regFunc("encode", &overload{args: T(BY, X), ret: X, fn2: func(a, b types.Datum) (types.Datum, error) {
		return encodeBytes(a.Str(), b.Str())
	}})
	regFunc("decode", &overload{args: T(X, X), ret: BY, fn2: func(a, b types.Datum) (types.Datum, error) {
		return decodeBytes(a.Str(), b.Str())
	}})
	digest := func(sum func([]byte) []byte) func(a types.Datum) (types.Datum, error) {
		return func(a types.Datum) (types.Datum, error) { return types.DBytea(sum([]byte(a.Str()))), nil }
	}
	regFunc("sha224", &overload{args: T(BY), ret: BY, fn1: digest(func(b []byte) []byte { s := sha256.Sum224(b); return s[:] })})
	regFunc("sha256", &overload{args: T(BY), ret: BY, fn1: digest(func(b []byte) []byte { s := sha256.Sum256(b); return s[:] })})
	regFunc("sha384", &overload{args: T(BY), ret: BY, fn1: digest(func(b []byte) []byte { s := sha512.Sum384(b); return s[:] })})
	regFunc("sha512", &overload{args: T(BY), ret: BY, fn1: digest(func(b []byte) []byte { s := sha512.Sum512(b); return s[:] })})
	regFunc("convert_from", &overload{uncataloged: true, args: T(BY, X), ret: X, fn2: func(a, b types.Datum) (types.Datum, error) {
		return convertFrom(a.Str(), b.Str())
	}})
	regFunc("convert_to", &overload{uncataloged: true, args: T(X, X), ret: BY, fn2: func(a, b types.Datum) (types.Datum, error) {
		return convertTo(a.Str(), b.Str())
	}})
	for _, t := range []types.Type{X, BY} {
		bytes := t.Kind == types.KindBytea
		mk := func(s string) types.Datum {
			if bytes {
				return types.DByteaString(s)
			}
			return txt(s)
		}
		regFunc("overlay", &overload{args: T(t, t, I), ret: t, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
			s, err := overlayString(a[0].Str(), a[1].Str(), a[2].Int(), 0, false, bytes)
			return mk(s), err
		}})
		regFunc("overlay", &overload{args: T(t, t, I, I), ret: t, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
			s, err := overlayString(a[0].Str(), a[1].Str(), a[2].Int(), a[3].Int(), true, bytes)
			return mk(s), err
		}})
	}
}
