package binder

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// ResolveTypeName maps a parsed type name (with typmods) to a Runnel type.
func ResolveTypeName(tn *pg.TypeName) (types.Type, error) {
	var names []string
	for _, n := range tn.Names {
		names = append(names, n.GetString_().GetSval())
	}
	if len(names) == 2 && names[0] == "pg_catalog" {
		names = names[1:]
	}
	if len(tn.ArrayBounds) > 0 {
		// int[], int[][] and int[3] are all int[] (PostgreSQL does not
		// enforce declared dimensions either).
		elem := &pg.TypeName{Names: tn.Names, Typmods: tn.Typmods, Typemod: tn.Typemod, Location: tn.Location}
		et, err := ResolveTypeName(elem)
		if err != nil {
			return et, err
		}
		if !et.CanBeArrayElem() {
			return types.Type{}, sqlerr.Errorf(sqlerr.UndefinedObject, "could not find array type for data type %s", et.Name())
		}
		return types.ArrayOf(et), nil
	}
	name := strings.Join(names, ".")
	var mods []int32
	for _, m := range tn.Typmods {
		c := m.GetAConst()
		if c == nil || c.GetIval() == nil {
			return types.Type{}, sqlerr.Errorf(sqlerr.SyntaxError, "type modifiers must be simple constants or identifiers")
		}
		mods = append(mods, c.GetIval().Ival)
	}
	t, ok := typeByName(name)
	if !ok {
		return types.Type{}, sqlerr.Errorf(sqlerr.UndefinedObject, "type \"%s\" does not exist", name)
	}
	switch t.Kind {
	case types.KindVarchar:
		if len(mods) > 1 {
			return t, sqlerr.New(sqlerr.SyntaxError, "invalid type modifier")
		}
		if len(mods) == 1 {
			if t.Text {
				return t, sqlerr.New(sqlerr.SyntaxError, "type modifier is not allowed for type \"text\"")
			}
			if mods[0] < 1 {
				return t, sqlerr.Errorf(sqlerr.SyntaxError, "length for type varchar must be at least 1")
			}
			t.Mod = mods[0]
		}
	case types.KindNumeric:
		switch len(mods) {
		case 0:
		case 1, 2:
			p, s := mods[0], int32(0)
			if len(mods) == 2 {
				s = mods[1]
			}
			if p < 1 || p > 1000 {
				return t, sqlerr.Errorf(sqlerr.SyntaxError, "NUMERIC precision %d must be between 1 and 1000", p)
			}
			if s < 0 || s > p {
				return t, sqlerr.Errorf(sqlerr.SyntaxError, "NUMERIC scale %d must be between 0 and precision %d", s, p)
			}
			t.Mod = p<<16 | s
		default:
			return t, sqlerr.New(sqlerr.SyntaxError, "invalid NUMERIC type modifier")
		}
	case types.KindTime, types.KindTimestamp, types.KindTimestamptz:
		if len(mods) > 1 {
			return t, sqlerr.New(sqlerr.SyntaxError, "invalid type modifier")
		}
		if len(mods) == 1 {
			p := mods[0]
			if p < 0 {
				return t, sqlerr.Errorf(sqlerr.SyntaxError, "TIMESTAMP(%d) precision must not be negative", p)
			}
			t.Mod = min(p, 6)
		}
	default:
		if len(mods) > 0 && t.Kind != types.KindInterval {
			return t, sqlerr.Errorf(sqlerr.SyntaxError, "type modifier is not allowed for type \"%s\"", t.Name())
		}
	}
	return t, nil
}

func typeByName(name string) (types.Type, bool) {
	switch name {
	case "bool", "boolean":
		return types.Bool, true
	case "int2", "smallint":
		return types.Int16, true
	case "int4", "int", "integer", "serial", "serial4":
		return types.Int32, true
	case "int8", "bigint", "bigserial", "serial8":
		return types.Int64, true
	case "float4", "real":
		return types.Float32, true
	case "float8", "double precision", "float", "double": // double: RisingWave's spelling
		return types.Float64, true
	case "numeric", "decimal":
		return types.Numeric, true
	case "varchar", "character varying", "bpchar", "char", "character", "name", "string":
		return types.Varchar, true
	case "text":
		return types.Text, true
	case "bytea":
		return types.Bytea, true
	case "uuid":
		return types.UUID, true
	case "date":
		return types.Date, true
	case "time", "time without time zone":
		return types.Time, true
	case "timestamp", "timestamp without time zone":
		return types.Timestamp, true
	case "timestamptz", "timestamp with time zone":
		return types.Timestamptz, true
	case "interval":
		return types.Interval, true
	case "jsonb", "json":
		return types.Jsonb, true
	case "regclass", "oid", "regproc", "regtype", "regnamespace", "regrole":
		return types.Int32, true
	}
	return types.Type{}, false
}

// ResolveTypeText maps a type as PostgreSQL's format_type prints it
// ("character varying(20)", "numeric(10,2)", "timestamp with time zone",
// "integer[]") to a Runnel type: the text is parsed as the target of a
// cast, never spliced into a statement.
func ResolveTypeText(s string) (types.Type, error) {
	tree, err := pg.Parse("SELECT NULL::" + s)
	bad := sqlerr.Errorf(sqlerr.UndefinedObject, "type %q is not a type Runnel knows", s)
	if err != nil || len(tree.Stmts) != 1 {
		return types.Type{}, bad
	}
	sel := tree.Stmts[0].Stmt.GetSelectStmt()
	if sel == nil || len(sel.TargetList) != 1 || sel.FromClause != nil {
		return types.Type{}, bad
	}
	tc := sel.TargetList[0].GetResTarget().GetVal().GetTypeCast()
	if tc == nil || tc.TypeName == nil || tc.Arg.GetAConst() == nil {
		return types.Type{}, bad
	}
	return ResolveTypeName(tc.TypeName)
}
