package frontend

// pg_proc, pg_operator and pg_aggregate: Runnel's built-in functions,
// operators, aggregates and window functions, generated from the
// registries of internal/expr (expr.Builtins), so that what a client reads
// there (psql's \df and \do, sqlsmith's query generator) is exactly what
// the binder resolves. Argument and result types are PostgreSQL type oids;
// polymorphic parameters are "any" (2276) and anyelement (2283). Runnel has
// no arrays: a VARIADIC parameter is listed with its element type
// (provariadic names it) where PostgreSQL lists the array type.
//
// Oids: a function, aggregate or window function is procOIDBase + its
// position in sysProcs; an operator is operOIDBase + its position in
// sysOpers. Both lists are sorted (expr.Builtins), so the oids are stable
// for a given Runnel build, not across builds.

import (
	"strconv"
	"strings"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/types"
)

const (
	procOIDBase = 0x20000000
	operOIDBase = 0x28000000
	// oidInternalLang is pg_language "internal", the language of built-ins.
	oidInternalLang = 12
)

var (
	sysProcs []expr.Builtin // functions, aggregates, window functions
	sysOpers []expr.Builtin // binary and prefix operators
)

func init() {
	for _, b := range expr.Builtins() {
		switch b.Kind {
		case expr.BuiltinBinaryOp, expr.BuiltinPrefixOp:
			sysOpers = append(sysOpers, b)
		default:
			if sqlValueFunction[b.Name] {
				continue
			}
			sysProcs = append(sysProcs, b)
		}
	}
}

// sqlValueFunction names the functions that SQL spells as keywords without
// parentheses (CURRENT_DATE, LOCALTIME, ...): they are not in PostgreSQL's
// pg_proc, and a call written from pg_proc (current_date()) is a syntax
// error there and here.
var sqlValueFunction = map[string]bool{
	"current_date": true, "current_timestamp": true, "localtime": true, "localtimestamp": true,
}

// typeOID is the pg_type oid of a signature's type.
func typeOID(t types.Type) int64 {
	if oid, ok := expr.PseudoOID(t); ok {
		return int64(oid)
	}
	return int64(t.OID())
}

// oidVector renders types as an oidvector (space-separated oids).
func oidVector(ts []types.Type) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = strconv.FormatInt(typeOID(t), 10)
	}
	return strings.Join(parts, " ")
}

func procByOID(oid int64) (*expr.Builtin, bool) {
	i := oid - procOIDBase
	if i < 0 || i >= int64(len(sysProcs)) {
		return nil, false
	}
	return &sysProcs[i], true
}

func operByOID(oid int64) (*expr.Builtin, bool) {
	i := oid - operOIDBase
	if i < 0 || i >= int64(len(sysOpers)) {
		return nil, false
	}
	return &sysOpers[i], true
}

func prokind(b *expr.Builtin) string {
	switch b.Kind {
	case expr.BuiltinAggregate:
		return "a"
	case expr.BuiltinWindow:
		return "w"
	}
	return "f"
}

// oidSQLLang is pg_language "sql", the language of SQL functions.
const oidSQLLang = 14

// udfRows are pg_proc's rows of the database's SQL functions (oid: the
// function's object id, as relations'), in pg_proc's column order.
func udfRows(sc *sysCtx) [][]any {
	schemas := map[catalog.ObjectID]bool{}
	for _, s := range sc.cat.Schemas(sc.db.ID) {
		schemas[s.ID] = true
	}
	var out [][]any
	for _, f := range sc.cat.Functions(func(f *catalog.Function) bool { return schemas[f.SchemaID] }) {
		out = append(out, []any{userOID(f.ID), f.Name, sc.schemaOIDByID(f.SchemaID), sc.ownerOID(f.Owner), int64(oidSQLLang),
			float64(100), float64(0), int64(0), "-", "f", false, false, f.Strict, false, "v", "u",
			len(f.ArgTypes), 0, typeOID(f.Return), oidVector(f.ArgTypes), nil, nil, nil, nil, nil, f.Body, nil, nil,
			nil, nil})
	}
	return out
}

// udfByOID finds a SQL function by its pg_proc oid.
func udfByOID(cat CatalogReader, oid int64) (*catalog.Function, bool) {
	fs := cat.Functions(func(f *catalog.Function) bool { return userOID(f.ID) == oid })
	if len(fs) == 0 {
		return nil, false
	}
	return fs[0], true
}

// udfArguments is pg_get_function_arguments of a SQL function.
func udfArguments(f *catalog.Function) string {
	parts := make([]string, len(f.ArgTypes))
	for i, t := range f.ArgTypes {
		parts[i] = formatType(uint32(typeOID(t)), -1, false)
		if f.ArgNames[i] != "" {
			parts[i] = f.ArgNames[i] + " " + parts[i]
		}
	}
	return strings.Join(parts, ", ")
}

func procRows(sc *sysCtx) [][]any {
	out := make([][]any, 0, len(sysProcs))
	for i := range sysProcs {
		b := &sysProcs[i]
		var variadic int64
		if b.Variadic {
			variadic = typeOID(b.Args[len(b.Args)-1])
		}
		volatile := "i"
		if b.Volatile {
			volatile = "v"
		}
		out = append(out, []any{int64(procOIDBase + i), b.Name, oidPgCatalog, oidBootstrapUser, oidInternalLang,
			float64(1), float64(0), variadic, "-", prokind(b), false, false, b.Strict, false, volatile, "s",
			len(b.Args), 0, typeOID(b.Result), oidVector(b.Args), nil, nil, nil, nil, nil, b.Name, nil, nil,
			nil, nil})
	}
	return append(out, udfRows(sc)...)
}

func operatorRows(*sysCtx) [][]any {
	out := make([][]any, 0, len(sysOpers))
	for i := range sysOpers {
		b := &sysOpers[i]
		kind, left, right := "b", int64(0), int64(0)
		if b.Kind == expr.BuiltinPrefixOp {
			kind, right = "l", typeOID(b.Args[0])
		} else {
			left, right = typeOID(b.Args[0]), typeOID(b.Args[1])
		}
		out = append(out, []any{int64(operOIDBase + i), b.Name, oidPgCatalog, oidBootstrapUser, kind, false, false,
			left, right, typeOID(b.Result), 0, 0, 0, 0, 0})
	}
	return out
}

func aggregateRows(*sysCtx) [][]any {
	var out [][]any
	for i := range sysProcs {
		b := &sysProcs[i]
		if b.Kind != expr.BuiltinAggregate {
			continue
		}
		// Aggregates that return their smallest or largest input name the
		// operator that orders them, as PostgreSQL's do.
		var sortop int64
		if op, ok := aggSortOps[b.Name]; ok && len(b.Args) == 1 {
			for j := range sysOpers {
				o := &sysOpers[j]
				if o.Name == op && o.Kind == expr.BuiltinBinaryOp && typeOID(o.Args[0]) == typeOID(b.Args[0]) &&
					typeOID(o.Args[1]) == typeOID(b.Args[0]) {
					sortop = int64(operOIDBase + j)
				}
			}
		}
		out = append(out, []any{int64(procOIDBase + i), "n", 0, "-", "-", "-", "-", "-", "-", "-", "-",
			false, false, "r", "r", sortop, 0, 0, 0, 0, nil, nil})
	}
	return out
}

var aggSortOps = map[string]string{"min": "<", "max": ">", "bool_and": "<", "every": "<", "bool_or": ">"}

// functionArguments is pg_get_function_arguments: the argument types as
// format_type prints them, the variadic one as PostgreSQL declares it.
func functionArguments(b *expr.Builtin) string {
	parts := make([]string, len(b.Args))
	for i, t := range b.Args {
		name := formatType(uint32(typeOID(t)), -1, false)
		if b.Variadic && i == len(b.Args)-1 {
			if _, pseudo := expr.PseudoOID(t); !pseudo {
				name += "[]"
			}
			name = "VARIADIC " + name
		}
		parts[i] = name
	}
	return strings.Join(parts, ", ")
}
