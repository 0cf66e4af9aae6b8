package expr

import (
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// CommonType resolves the type of a set of expressions combined by UNION,
// CASE, VALUES, COALESCE, GREATEST/LEAST or IN, with PostgreSQL's
// select_common_type rules:
//
//   - if all inputs have the same type, that type (typmod kept only if
//     all typmods agree);
//   - unknown inputs (untyped literals, NULL) are ignored; all unknown
//     gives text;
//   - all known inputs must share a type category (42804 "CASE types
//     integer and boolean cannot be matched");
//   - scanning left to right, switch to a later type when the current one
//     is not preferred and converts implicitly to it but not back;
//   - finally every input must convert implicitly to the result (42846
//     "CASE could not convert type time to date").
//
// context names the construct in error messages ("UNION", "CASE", ...).
func CommonType(ts []types.Type, context string) (types.Type, error) {
	if len(ts) == 0 {
		return types.Text, nil
	}
	allSame := !isUnknown(ts[0])
	for _, t := range ts[1:] {
		if !sameBase(t, ts[0]) {
			allSame = false
		}
	}
	if allSame {
		r := ts[0]
		for _, t := range ts[1:] {
			if t.Mod != r.Mod {
				r.Mod = -1
			}
		}
		return r, nil
	}
	var p types.Type
	have := false
	for _, t := range ts {
		if isUnknown(t) {
			continue
		}
		if !have {
			p, have = baseType(t), true
			continue
		}
		if sameBase(t, p) {
			continue
		}
		if typeCategory(t) != typeCategory(p) {
			return types.Type{}, sqlerr.Errorf(sqlerr.DatatypeMismatch, "%s types %s and %s cannot be matched", context, p.Name(), t.Name())
		}
		if !isPreferred(p) && CanCoerce(p, t, CastImplicit) && !CanCoerce(t, p, CastImplicit) {
			p = baseType(t)
		}
	}
	if !have {
		return types.Text, nil
	}
	for _, t := range ts {
		if !CanCoerce(t, p, CastImplicit) {
			return types.Type{}, sqlerr.Errorf(codeCannotCoerce, "%s could not convert type %s to %s", context, t.Name(), p.Name())
		}
	}
	// keep a typmod shared by every known input
	mod, first := int32(-1), true
	for _, t := range ts {
		if isUnknown(t) {
			continue
		}
		if first {
			mod, first = t.Mod, false
		} else if t.Mod != mod || !sameBase(t, p) {
			mod = -1
		}
	}
	p.Mod = mod
	return p, nil
}

// CoerceToCommon resolves the common type of es (see CommonType) and
// converts each expression to it.
func CoerceToCommon(es []Expr, context string) ([]Expr, types.Type, error) {
	t, err := CommonType(exprTypes(es), context)
	if err != nil {
		return nil, types.Type{}, err
	}
	out := make([]Expr, len(es))
	for i, e := range es {
		c, err := coerceTo(e, t, CastImplicit)
		if err != nil {
			return nil, types.Type{}, err
		}
		out[i] = c
	}
	return out, t, nil
}
