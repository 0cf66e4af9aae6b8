package frontend

import (
	"context"
	"fmt"
	"strings"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// sysFunc is a catalog or session function bound by sessionCatalog.
type sysFunc struct {
	name string
	args []expr.Expr
	typ  types.Type
	// strict functions return NULL when an argument is NULL.
	strict bool
	fn     func(args []types.Datum) (types.Datum, error)
	// evalFn, when set, is called instead of fn with the statement's
	// context (a wait that a cancel must end).
	evalFn func(ctx *expr.EvalContext, args []types.Datum) (types.Datum, error)
	// volatile calls run each time anew (expr.VolatileCall): they act on
	// or describe the calling session, so a materialized view refuses
	// them.
	volatile bool
	// argTypes, when set, type untyped $n arguments (binder.ArgTyped).
	argTypes []types.Type
}

// ArgTypes implements binder.ArgTyped.
func (f *sysFunc) ArgTypes() []types.Type { return f.argTypes }

func (f *sysFunc) Type() types.Type { return f.typ }

// VolatileName implements expr.VolatileCall.
func (f *sysFunc) VolatileName() string {
	if f.volatile {
		return f.name
	}
	return ""
}

func (f *sysFunc) Eval(ctx *expr.EvalContext, row types.Row) (types.Datum, error) {
	vals := make([]types.Datum, len(f.args))
	for i, a := range f.args {
		v, err := a.Eval(ctx, row)
		if err != nil {
			return types.Datum{}, err
		}
		if v.IsNull() && f.strict {
			return types.Datum{}, nil
		}
		vals[i] = v
	}
	if f.evalFn != nil {
		return f.evalFn(ctx, vals)
	}
	return f.fn(vals)
}

func (f *sysFunc) String() string {
	parts := make([]string, len(f.args))
	for i, a := range f.args {
		parts[i] = a.String()
	}
	return f.name + "(" + strings.Join(parts, ", ") + ")"
}

// datumInt reads an integer-valued argument (oids arrive as int4, or as
// an untyped literal).
func datumInt(d types.Datum) (int64, bool) {
	switch d.Kind() {
	case types.KindInt16, types.KindInt32, types.KindInt64:
		return d.Int(), true
	case types.KindVarchar, types.KindUnknown:
		var n int64
		if _, err := fmt.Sscan(strings.TrimSpace(d.Str()), &n); err == nil {
			return n, true
		}
	}
	return 0, false
}

func textDatum(s string) types.Datum { return types.DVarchar(s) }

// quoteArrayElem quotes an element of an array's text form as PostgreSQL's
// array_out does.
func quoteArrayElem(s string) string {
	if s != "" && !strings.ContainsAny(s, "{},\"\\ \t\n") && !strings.EqualFold(s, "null") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// ResolveFunction implements binder.FunctionCatalog: functions that read
// the catalog or the session.
func (c *sessionCatalog) ResolveFunction(name string, args []expr.Expr) (expr.Expr, bool, error) {
	ss := c.ss
	mk := func(typ types.Type, minArgs, maxArgs int, strict bool, fn func([]types.Datum) (types.Datum, error)) (expr.Expr, bool, error) {
		if len(args) < minArgs || len(args) > maxArgs {
			return nil, false, nil
		}
		return &sysFunc{name: name, args: args, typ: typ, strict: strict, fn: fn}, true, nil
	}
	constText := func(s string) (expr.Expr, bool, error) {
		return mk(types.Text, 0, 0, false, func([]types.Datum) (types.Datum, error) { return textDatum(s), nil })
	}
	switch name {
	case "current_database":
		return constText(ss.db.Name)
	case "current_user", "session_user", "user", "current_role":
		return constText(ss.user.Name)
	case "current_schema":
		return mk(types.Text, 0, 0, false, func([]types.Datum) (types.Datum, error) {
			if sc, err := ss.currentSchema(); err == nil {
				return textDatum(sc.Name), nil
			}
			return types.Datum{}, nil
		})
	case "pg_backend_pid":
		if len(args) != 0 {
			return nil, false, nil
		}
		return &sysFunc{name: name, typ: types.Int32, volatile: true, fn: func([]types.Datum) (types.Datum, error) {
			return types.DInt32(int32(ss.pid())), nil
		}}, true, nil
	case "pg_cancel_backend", "pg_terminate_backend":
		// pg_cancel_backend(pid), pg_terminate_backend(pid [, timeout
		// in milliseconds]) (activity.go).
		maxArgs := 1
		if name == "pg_terminate_backend" {
			maxArgs = 2
		}
		if len(args) < 1 || len(args) > maxArgs {
			return nil, false, nil
		}
		for _, a := range args {
			if !isIntKind(a.Type().Kind) && a.Type().Kind != types.KindUnknown {
				return nil, false, nil
			}
		}
		return &sysFunc{name: name, args: args, typ: types.Bool, strict: true, volatile: true, argTypes: []types.Type{types.Int32, types.Int64},
			evalFn: func(ctx *expr.EvalContext, a []types.Datum) (types.Datum, error) {
				pid, ok := datumInt(a[0])
				if !ok {
					return types.Datum{}, sqlerr.Errorf(sqlerr.InvalidTextRepresentation, "invalid input syntax for type integer: %q", a[0].Str())
				}
				var done bool
				var err error
				if name == "pg_cancel_backend" {
					done, err = ss.cancelBackend(pid)
				} else {
					var timeout int64
					if len(a) > 1 {
						if timeout, ok = datumInt(a[1]); !ok {
							return types.Datum{}, sqlerr.Errorf(sqlerr.InvalidTextRepresentation, "invalid input syntax for type bigint: %q", a[1].Str())
						}
					}
					waitCtx := ctx.Ctx
					if waitCtx == nil {
						waitCtx = context.Background()
					}
					done, err = ss.terminateBackend(waitCtx, pid, timeout)
				}
				if err != nil {
					return types.Datum{}, err
				}
				return types.DBool(done), nil
			}}, true, nil
	case "version":
		return constText("PostgreSQL 15.0 (Runnel) on x86_64-pc-linux-gnu, compiled by Go, 64-bit")
	case "pg_is_in_recovery":
		return mk(types.Bool, 0, 0, false, func([]types.Datum) (types.Datum, error) { return types.DBool(false), nil })
	case "has_table_privilege", "has_schema_privilege", "has_database_privilege", "has_column_privilege",
		"has_any_column_privilege", "has_function_privilege", "has_sequence_privilege":
		// Runnel has no privilege system: every user may use every object.
		return mk(types.Bool, 2, 4, true, func([]types.Datum) (types.Datum, error) { return types.DBool(true), nil })
	case "obj_description":
		// obj_description(oid [, catalog]): COMMENT ON a relation.
		return mk(types.Text, 1, 2, true, func(a []types.Datum) (types.Datum, error) {
			n, _ := datumInt(a[0])
			if r := c.relByOID(n); r != nil && r.Comment != "" && (len(a) < 2 || a[1].Str() == "pg_class") {
				return textDatum(r.Comment), nil
			}
			return types.Datum{}, nil
		})
	case "col_description":
		return mk(types.Text, 2, 2, true, func(a []types.Datum) (types.Datum, error) {
			n, _ := datumInt(a[0])
			num, _ := datumInt(a[1])
			if r := c.relByOID(n); r != nil && num >= 1 && int(num) <= len(r.Columns) && r.Columns[num-1].Comment != "" {
				return textDatum(r.Columns[num-1].Comment), nil
			}
			return types.Datum{}, nil
		})
	case "shobj_description", "pg_get_statisticsobjdef_columns":
		// Runnel stores no comments on shared objects and no extended
		// statistics.
		return mk(types.Text, 1, 2, false, func([]types.Datum) (types.Datum, error) { return types.Datum{}, nil })
	case "pg_encoding_to_char":
		return mk(types.Text, 1, 1, true, func(a []types.Datum) (types.Datum, error) {
			if n, _ := datumInt(a[0]); n == 6 {
				return textDatum("UTF8"), nil
			}
			return textDatum(""), nil
		})
	case "pg_get_userbyid":
		return mk(types.Text, 1, 1, true, func(a []types.Datum) (types.Datum, error) {
			n, _ := datumInt(a[0])
			for _, u := range ss.s.catalog.Users() {
				if userOID(u.ID) == n {
					return textDatum(u.Name), nil
				}
			}
			if n == oidBootstrapUser {
				return textDatum("root"), nil
			}
			return textDatum(fmt.Sprintf("unknown (OID=%d)", n)), nil
		})
	case "pg_table_is_visible":
		return mk(types.Bool, 1, 1, true, func(a []types.Datum) (types.Datum, error) {
			n, _ := datumInt(a[0])
			return types.DBool(c.tableVisible(n)), nil
		})
	case "array_upper", "array_lower", "array_length", "cardinality", "array_ndims":
		// Only the catalogs' array-like values (types.CatalogArray) and
		// their NULL arrays exist.
		if len(args) == 0 {
			return nil, false, nil
		}
		if k := args[0].Type().Kind; k != types.KindVarchar && k != types.KindNull {
			return nil, false, nil
		}
		at := args[0].Type()
		_, lower, isArr := at.CatalogArray()
		return mk(types.Int32, 1, 2, true, func(a []types.Datum) (types.Datum, error) {
			if !isArr {
				return types.Datum{}, sqlerr.New(sqlerr.FeatureNotSupported, "arrays are not supported")
			}
			n := len(types.CatalogArrayElems(a[0].Str(), at))
			if name == "cardinality" {
				return types.DInt32(int32(n)), nil
			}
			if len(a) < 2 {
				if name == "array_ndims" && n > 0 {
					return types.DInt32(1), nil
				}
				return types.Datum{}, nil
			}
			if dim, _ := datumInt(a[1]); dim != 1 || n == 0 {
				return types.Datum{}, nil
			}
			switch name {
			case "array_upper":
				return types.DInt32(int32(lower + n - 1)), nil
			case "array_lower":
				return types.DInt32(int32(lower)), nil
			}
			return types.DInt32(int32(n)), nil
		})
	case "current_schemas":
		// The schemas of search_path that exist, with pg_catalog first
		// when asked for the implicit ones, as a name[]
		// (types.NameArray); pgjdbc's type lookups read it.
		return mk(types.NameArray, 1, 1, true, func(a []types.Datum) (types.Datum, error) {
			var names []string
			if a[0].Bool() {
				names = append(names, "pg_catalog")
			}
			for _, n := range ss.searchPath() {
				if n == "pg_catalog" && a[0].Bool() {
					continue
				}
				if _, err := ss.s.catalog.SchemaByName(ss.db.ID, n); err == nil || n == "pg_catalog" || n == "information_schema" {
					names = append(names, quoteArrayElem(n))
				}
			}
			return types.DVarchar("{" + strings.Join(names, ",") + "}"), nil
		})
	case "regclassin", "regtypein", "regnamespacein", "regrolein":
		return mk(types.Int32, 1, 1, true, func(a []types.Datum) (types.Datum, error) {
			oid, err := c.regIn(name, a[0].Str())
			return types.DInt32(int32(oid)), err
		})
	case "regprocin":
		// The catalogs name functions by text (pg_type.typinput is
		// "array_in"), so 'pg_catalog.array_in'::regproc is the function's
		// name (pgjdbc compares typinput with it).
		return mk(types.Text, 1, 1, true, func(a []types.Datum) (types.Datum, error) {
			return textDatum(strings.TrimPrefix(strings.TrimSpace(a[0].Str()), "pg_catalog.")), nil
		})
	case "pg_relation_is_publishable":
		// Runnel has no logical-replication publications.
		return mk(types.Bool, 1, 1, true, func([]types.Datum) (types.Datum, error) { return types.DBool(false), nil })
	case "pg_get_function_result", "pg_get_function_arguments", "pg_get_function_identity_arguments", "pg_get_functiondef":
		// PostgreSQL returns NULL for an unknown function oid.
		return mk(types.Text, 1, 1, true, func(a []types.Datum) (types.Datum, error) {
			n, _ := datumInt(a[0])
			if f, ok := udfByOID(ss.s.catalog, n); ok {
				switch name {
				case "pg_get_function_result":
					return textDatum(formatType(uint32(typeOID(f.Return)), -1, false)), nil
				case "pg_get_functiondef":
					return textDatum(f.Definition), nil
				}
				return textDatum(udfArguments(f)), nil
			}
			b, ok := procByOID(n)
			if !ok {
				return types.Datum{}, nil
			}
			switch name {
			case "pg_get_function_result":
				return textDatum(formatType(uint32(typeOID(b.Result)), -1, false)), nil
			case "pg_get_functiondef":
				// Built-ins have no SQL definition; PostgreSQL prints a
				// CREATE FUNCTION ... LANGUAGE internal.
				return textDatum("CREATE OR REPLACE FUNCTION pg_catalog." + b.Name + "(" + functionArguments(b) +
					")\n RETURNS " + formatType(uint32(typeOID(b.Result)), -1, false) + "\n LANGUAGE internal\n"), nil
			}
			return textDatum(functionArguments(b)), nil
		})
	case "pg_get_function_sqlbody":
		// Built-ins have no SQL-standard body (psql's \df+ reads prosrc).
		return mk(types.Text, 1, 1, true, func([]types.Datum) (types.Datum, error) { return types.Datum{}, nil })
	case "pg_has_role":
		// Runnel has no role membership: a user has exactly its own role's
		// privileges, and every user may use every object (as
		// has_*_privilege answer).
		return mk(types.Bool, 2, 3, true, func([]types.Datum) (types.Datum, error) { return types.DBool(true), nil })
	case "pg_get_serial_sequence":
		// Runnel has no sequences: no column owns one.
		return mk(types.Text, 2, 2, true, func([]types.Datum) (types.Datum, error) { return types.Datum{}, nil })
	case "pg_type_is_visible", "pg_function_is_visible", "pg_operator_is_visible":
		return mk(types.Bool, 1, 1, true, func([]types.Datum) (types.Datum, error) { return types.DBool(true), nil })
	case "format_type":
		return mk(types.Text, 2, 2, false, func(a []types.Datum) (types.Datum, error) {
			if a[0].IsNull() {
				return types.Datum{}, nil
			}
			oid, _ := datumInt(a[0])
			mod, ok := datumInt(a[1])
			return textDatum(formatType(uint32(oid), int32(mod), ok && !a[1].IsNull())), nil
		})
	case "pg_get_expr":
		// adbin holds the expression's SQL text.
		return mk(types.Text, 2, 3, false, func(a []types.Datum) (types.Datum, error) {
			if a[0].IsNull() {
				return types.Datum{}, nil
			}
			return textDatum(a[0].Str()), nil
		})
	case "pg_get_indexdef":
		return mk(types.Text, 1, 3, true, func(a []types.Datum) (types.Datum, error) {
			n, _ := datumInt(a[0])
			if x := c.relByOID(n); x != nil && x.Kind == catalog.KindIndex {
				return indexDefDatum(newSysCtx(ss), x, a)
			}
			r := c.relByOID(n - pkIndexBase)
			if r == nil || !hasPKIndex(r) {
				return types.Datum{}, nil
			}
			if len(a) > 1 {
				// pg_get_indexdef(index, column, pretty): the column's
				// definition (its name), or "" past the last one.
				if k, _ := datumInt(a[1]); k > 0 {
					if int(k) > len(r.PK) {
						return textDatum(""), nil
					}
					return textDatum(pgQuoteIdent(r.Columns[r.PK[k-1]].Name)), nil
				}
			}
			return textDatum(pkIndexDef(newSysCtx(ss), r)), nil
		})
	case "pg_get_constraintdef":
		return mk(types.Text, 1, 2, true, func(a []types.Datum) (types.Datum, error) {
			n, _ := datumInt(a[0])
			r := c.relByOID(n - pkConstraintBase)
			if r == nil || !hasPKIndex(r) {
				return types.Datum{}, nil
			}
			return textDatum("PRIMARY KEY (" + pkColumnList(r) + ")"), nil
		})
	case "pg_get_viewdef":
		return mk(types.Text, 1, 2, true, func(a []types.Datum) (types.Datum, error) {
			n, ok := datumInt(a[0])
			if !ok {
				return types.Datum{}, nil
			}
			r := c.relByOID(n)
			if r == nil || r.Definition == "" {
				return types.Datum{}, nil
			}
			return textDatum(" " + r.Definition + ";"), nil
		})
	case "quote_ident":
		return mk(types.Text, 1, 1, true, func(a []types.Datum) (types.Datum, error) {
			return textDatum(pgQuoteIdent(a[0].Str())), nil
		})
	case "array_to_string":
		// Runnel has no arrays; the array columns of the system catalogs
		// are NULL text, and array_to_string of NULL is NULL.
		if len(args) >= 2 && len(args) <= 3 {
			if k := args[0].Type().Kind; k != types.KindVarchar && k != types.KindNull {
				return nil, false, nil
			}
		}
		return mk(types.Text, 2, 3, false, func(a []types.Datum) (types.Datum, error) {
			if a[0].IsNull() {
				return types.Datum{}, nil
			}
			return types.Datum{}, sqlerr.New(sqlerr.FeatureNotSupported, "array_to_string: arrays are not supported")
		})
	case "pg_table_size", "pg_relation_size", "pg_total_relation_size", "pg_indexes_size", "pg_database_size":
		// Sizes of LSM state are not tracked per relation or database:
		// unknown, NULL.
		return mk(types.Int64, 1, 2, false, func([]types.Datum) (types.Datum, error) { return types.Datum{}, nil })
	case "pg_size_pretty":
		if len(args) != 1 || !isIntKind(args[0].Type().Kind) {
			return nil, false, nil
		}
		return mk(types.Text, 1, 1, true, func(a []types.Datum) (types.Datum, error) {
			return textDatum(sizePretty(a[0].Int())), nil
		})
	}
	return nil, false, nil
}

// relByOID finds a user relation of the session's database by oid.
func (c *sessionCatalog) relByOID(oid int64) *catalog.Relation {
	if oid < oidUserBase {
		return nil
	}
	r, ok := c.ss.s.catalog.Relation(catalog.ObjectID(oid - oidUserBase))
	if !ok || r.DatabaseID != c.ss.db.ID || r.Creating {
		return nil
	}
	return r
}

// tableVisible is pg_table_is_visible: the relation is the first of its
// name along search_path (system tables are always visible).
func (c *sessionCatalog) tableVisible(oid int64) bool {
	if oid >= oidSysTableBase && oid < oidSysTableBase+int64(len(sysTables)) {
		// pg_catalog is always searched; information_schema only when
		// named in search_path.
		if sysTables[oid-oidSysTableBase].schema == "pg_catalog" {
			return true
		}
		for _, s := range c.ss.searchPath() {
			if s == "information_schema" {
				return true
			}
		}
		return false
	}
	r := c.relByOID(oid)
	if r == nil {
		// A primary-key index is visible with its table.
		r = c.relByOID(oid - pkIndexBase)
		if r == nil || !hasPKIndex(r) {
			return false
		}
		return c.firstInPath(r.Name) == r.ID
	}
	return c.firstInPath(r.Name) == r.ID
}

func (c *sessionCatalog) firstInPath(name string) catalog.ObjectID {
	cat := c.ss.s.catalog
	for _, sname := range c.ss.searchPath() {
		sc, err := cat.SchemaByName(c.ss.db.ID, sname)
		if err != nil {
			continue
		}
		if rel, err := cat.RelationByName(sc.ID, name); err == nil && !rel.Creating {
			return rel.ID
		}
	}
	return 0
}

func isIntKind(k types.Kind) bool {
	return k == types.KindInt16 || k == types.KindInt32 || k == types.KindInt64 || k == types.KindNull
}

// sizePretty renders a byte count as pg_size_pretty(bigint) does: bytes
// below 10 kB, then the smallest unit whose value in half units is below
// 20 479, rounded half away from zero.
func sizePretty(n int64) string {
	units := []string{"bytes", "kB", "MB", "GB", "TB", "PB"}
	abs := func(x int64) int64 {
		if x < 0 {
			return -x
		}
		return x
	}
	halfRound := func(x int64) int64 {
		if x < 0 {
			return (x - 1) / 2
		}
		return (x + 1) / 2
	}
	if abs(n) < 10*1024 {
		return fmt.Sprintf("%d bytes", n)
	}
	// Keep one extra bit for rounding: n is in units of half a kB here.
	n /= 1 << 9
	for i := 1; i < len(units); i++ {
		if i == len(units)-1 || abs(n) < 20*1024-1 {
			return fmt.Sprintf("%d %s", halfRound(n), units[i])
		}
		n /= 1 << 10
	}
	return ""
}

// regIn converts an object name to its oid as PostgreSQL's regclassin,
// regtypein, regnamespacein and regrolein do (a number is taken as is).
func (c *sessionCatalog) regIn(fn, text string) (int64, error) {
	text = strings.TrimSpace(text)
	if n, ok := datumInt(types.DVarchar(text)); ok {
		return n, nil
	}
	parts, err := splitQualifiedName(text)
	if err != nil {
		return 0, err
	}
	cat := c.ss.s.catalog
	switch fn {
	case "regclassin":
		schema, name := "", parts[len(parts)-1]
		if len(parts) == 2 {
			schema = parts[0]
		} else if len(parts) > 2 {
			return 0, sqlerr.Errorf(codeInvalidName, "improper relation name (too many dotted names): %s", text)
		}
		rel, err := c.ResolveRelation(schema, name)
		if err != nil {
			return 0, err
		}
		if rel.Kind == catalog.KindSystem {
			return int64(rel.ID), nil
		}
		return userOID(rel.ID), nil
	case "regtypein":
		want := strings.Join(parts, ".")
		want = strings.TrimPrefix(want, "pg_catalog.")
		for _, t := range sysTypes {
			if t.name == want || formatType(uint32(t.oid), -1, false) == want {
				return int64(t.oid), nil
			}
		}
		switch want {
		case "int", "integer":
			return int64(types.OIDInt4), nil
		case "timestamp", "timestamp without time zone":
			return int64(types.OIDTimestamp), nil
		case "time", "time without time zone":
			return int64(types.OIDTime), nil
		case "decimal":
			return int64(types.OIDNumeric), nil
		}
		return 0, sqlerr.Errorf(sqlerr.UndefinedObject, "type \"%s\" does not exist", text)
	case "regnamespacein":
		if len(parts) == 1 {
			switch parts[0] {
			case "pg_catalog":
				return oidPgCatalog, nil
			case "information_schema":
				return oidInformationSchema, nil
			}
			if sc, err := cat.SchemaByName(c.ss.db.ID, parts[0]); err == nil {
				return newSysCtx(c.ss).schemaOID(sc), nil
			}
		}
		return 0, sqlerr.Errorf(sqlerr.InvalidSchemaName, "schema \"%s\" does not exist", text)
	default: // regrolein
		if len(parts) == 1 {
			if u, err := cat.UserByName(parts[0]); err == nil {
				return userOID(u.ID), nil
			}
		}
		return 0, sqlerr.Errorf(sqlerr.UndefinedObject, "role \"%s\" does not exist", text)
	}
}

// splitQualifiedName splits a possibly quoted, dotted name; unquoted parts
// are folded to lower case.
func splitQualifiedName(s string) ([]string, error) {
	var parts []string
	for {
		var part string
		if strings.HasPrefix(s, `"`) {
			var b strings.Builder
			i := 1
			for ; i < len(s); i++ {
				if s[i] == '"' {
					if i+1 < len(s) && s[i+1] == '"' {
						b.WriteByte('"')
						i++
						continue
					}
					break
				}
				b.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, sqlerr.Errorf(codeInvalidName, "invalid name syntax")
			}
			part, s = b.String(), s[i+1:]
		} else {
			end := strings.IndexByte(s, '.')
			if end < 0 {
				end = len(s)
			}
			part, s = strings.ToLower(strings.TrimSpace(s[:end])), s[end:]
		}
		if part == "" {
			return nil, sqlerr.Errorf(codeInvalidName, "invalid name syntax")
		}
		parts = append(parts, part)
		if s == "" {
			return parts, nil
		}
		if s[0] != '.' {
			return nil, sqlerr.Errorf(codeInvalidName, "invalid name syntax")
		}
		s = s[1:]
	}
}

// codeInvalidName is SQLSTATE invalid_name.
const codeInvalidName = "42602"

// pkIndexDef is pg_get_indexdef of a table's primary-key index.
func pkIndexDef(sc *sysCtx, r *catalog.Relation) string {
	return fmt.Sprintf("CREATE UNIQUE INDEX %s ON %s.%s USING btree (%s)", pgQuoteIdent(pkName(r)),
		pgQuoteIdent(sc.schemaName(r.SchemaID)), pgQuoteIdent(r.Name), pkColumnList(r))
}

// pgIndexDef is pg_get_indexdef of an index (PostgreSQL's spelling:
// "USING btree", which psql's \d cuts the column list after).
func pgIndexDef(cat CatalogReader, x *catalog.Relation) string {
	_, text := indexText(cat, x)
	return strings.Replace(text, " (", " USING btree (", 1)
}

// indexDefDatum answers pg_get_indexdef(index [, column, pretty]) for an
// index: its definition, or with column k > 0 that attribute's name ("" past
// the last).
func indexDefDatum(sc *sysCtx, x *catalog.Relation, a []types.Datum) (types.Datum, error) {
	if len(a) > 1 {
		if k, _ := datumInt(a[1]); k > 0 {
			attrs := indexAttrs(sc, x)
			if int(k) > len(attrs) {
				return textDatum(""), nil
			}
			return textDatum(pgQuoteIdent(attrs[k-1].col.Name)), nil
		}
	}
	return textDatum(pgIndexDef(sc.cat, x)), nil
}
