package sql

import (
	"context"
	"strings"
	"testing"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/sql/parser"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// udfDB is a fakeDB that also holds SQL functions, created by binding
// CREATE FUNCTION statements as the server does.
type udfDB struct {
	*fakeDB
	funcs []*catalog.Function
}

func (u *udfDB) ResolveUDFs(schema, name string) []*catalog.Function {
	var out []*catalog.Function
	for _, f := range u.funcs {
		if f.Name == name && (schema == "" || schema == "public") {
			out = append(out, f)
		}
	}
	return out
}

func (u *udfDB) create(t *testing.T, text string) error {
	t.Helper()
	st, err := parser.ParseOne(text)
	if err != nil {
		return err
	}
	s, err := binder.New(u, st, nil).BindStatement()
	if err != nil {
		return err
	}
	cf, ok := s.(*binder.CreateFunction)
	if !ok {
		t.Fatalf("%s: bound to %T", text, s)
	}
	cf.Func.ID = catalog.ObjectID(1000 + len(u.funcs))
	u.funcs = append(u.funcs, cf.Func)
	return nil
}

func (u *udfDB) query(t *testing.T, text string) ([]string, error) {
	t.Helper()
	st, err := parser.ParseOne(text)
	if err != nil {
		return nil, err
	}
	p, err := Prepare(u, st, nil)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	it, err := p.Execute(ctx, u.env(), nil)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []string
	for {
		row, err := it.Next(ctx)
		if err != nil || row == nil {
			return out, err
		}
		out = append(out, formatRow(row, p.Columns))
	}
}

// SQL functions (issue 15): CREATE FUNCTION ... LANGUAGE sql in the forms
// RisingWave and PostgreSQL users write ($n, named parameters, RETURN,
// bodies with FROM, STRICT, overloads) are inlined at each call; the
// expected values are PostgreSQL 16's for the same statements.
func TestSQLFunctions(t *testing.T) {
	u := &udfDB{fakeDB: smallDB()}
	for _, def := range []string{
		`CREATE FUNCTION add2(a int, b int) RETURNS int LANGUAGE sql AS $$select a + b$$`,
		`CREATE FUNCTION add3(int, int, int) RETURNS bigint LANGUAGE sql AS 'select $1 + $2 + $3'`,
		`CREATE FUNCTION greet(name text) RETURNS text LANGUAGE sql IMMUTABLE RETURN 'hi ' || name`,
		`CREATE FUNCTION greet(n int) RETURNS text LANGUAGE sql AS 'select ''num '' || n'`,
		`CREATE FUNCTION nz(x int) RETURNS int LANGUAGE sql AS 'select coalesce(x, 0)'`,
		`CREATE FUNCTION nzs(x int) RETURNS int LANGUAGE sql STRICT AS 'select coalesce(x, 0)'`,
		`CREATE FUNCTION dname(k int) RETURNS text LANGUAGE sql AS 'select d from u where u.a = k'`,
		// A column of the body's FROM wins over a parameter of its name.
		`CREATE FUNCTION shadow(a int) RETURNS bigint LANGUAGE sql AS 'select count(*) from u where a > 1'`,
		`CREATE FUNCTION twice(x int) RETURNS int LANGUAGE sql AS 'select add2(x, x)'`,
		`CREATE FUNCTION qual(a int) RETURNS int LANGUAGE sql AS 'select qual.a * 10'`,
		`CREATE FUNCTION firstrow(a int) RETURNS int LANGUAGE sql AS 'select a from u order by a desc'`,
	} {
		if err := u.create(t, def); err != nil {
			t.Fatalf("%s: %v", def, err)
		}
	}
	for _, c := range []struct{ q, want string }{
		{`select add2(1, 2)`, "3"},
		{`select add2(a, c) from t order by a`, "11,22,NULL,NULL"},
		{`select add3(1, 2, 3), pg_typeof(add3(1, 2, 3))`, "6|bigint"},
		{`select greet('bob'), greet(7)`, "hi bob|num 7"},
		{`select nz(c), nzs(c) from t order by a`, "10|10,20|20,0|NULL,40|40"},
		{`select a, dname(a) from t order by a`, "1|one,2|NULL,3|three,NULL|NULL"},
		{`select shadow(0)`, "2"},
		{`select twice(21)`, "42"},
		{`select qual(4)`, "40"},
		{`select public.add2(2, 2)`, "4"},
		{`select add2(1, 1) + add2(a, 1) from t where a = 1`, "4"},
		{`select add2('1', 2)`, "3"},
		// The first row of the body's query, not an error for more.
		{`select firstrow(7)`, "5"},
	} {
		rows, err := u.query(t, c.q)
		if err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		if got := strings.Join(rows, ","); got != c.want {
			t.Errorf("%s = %s, want %s", c.q, got, c.want)
		}
	}
	for _, c := range []struct{ sql, code string }{
		{`CREATE FUNCTION bad(a int) RETURNS int LANGUAGE plpgsql AS 'begin return a; end'`, sqlerr.FeatureNotSupported},
		{`CREATE FUNCTION bad(a int) RETURNS int AS 'select a'`, sqlerr.InvalidFunctionDefinition},
		{`CREATE FUNCTION bad(a int) RETURNS int LANGUAGE sql AS 'select nosuch'`, sqlerr.UndefinedColumn},
		{`CREATE FUNCTION bad(a int) RETURNS int LANGUAGE sql AS 'select ''2024-01-01''::date'`, sqlerr.InvalidFunctionDefinition},
		{`CREATE FUNCTION bad(a int) RETURNS SETOF int LANGUAGE sql AS 'select a'`, sqlerr.FeatureNotSupported},
		{`CREATE FUNCTION bad(a int, a int) RETURNS int LANGUAGE sql AS 'select 1'`, sqlerr.InvalidFunctionDefinition},
		{`CREATE FUNCTION bad(a int) RETURNS int LANGUAGE sql AS 'insert into t values (1)'`, sqlerr.FeatureNotSupported},
	} {
		err := u.create(t, c.sql)
		if e := sqlerr.From(err); e == nil || e.Code != c.code {
			t.Errorf("%s: got %v, want SQLSTATE %s", c.sql, err, c.code)
		}
	}
	for _, c := range []struct{ q, code string }{
		{`select add2(1)`, sqlerr.UndefinedFunction},
		{`select add2(1, 'x')`, sqlerr.InvalidTextRepresentation},
		{`select nosuch.add2(1, 2)`, sqlerr.UndefinedFunction},
	} {
		_, err := u.query(t, c.q)
		if e := sqlerr.From(err); e == nil || e.Code != c.code {
			t.Errorf("%s: got %v, want SQLSTATE %s", c.q, err, c.code)
		}
	}
}

// A SQL function that (through CREATE OR REPLACE) calls itself is refused
// with an error, not inlined without end (I9).
func TestSQLFunctionRecursionRefused(t *testing.T) {
	u := &udfDB{fakeDB: smallDB()}
	if err := u.create(t, `CREATE FUNCTION r(a int) RETURNS int LANGUAGE sql AS 'select a'`); err != nil {
		t.Fatal(err)
	}
	// Replace the body with one that calls r itself (as CREATE OR REPLACE
	// would once r exists).
	u.funcs[0].Body = "select r(a) + 1"
	_, err := u.query(t, `select r(1)`)
	if e := sqlerr.From(err); e == nil || e.Code != sqlerr.FeatureNotSupported || !strings.Contains(e.Message, "calls itself") {
		t.Fatalf("got %v", err)
	}
}

// Calls of SQL functions in forms the inliner does not take (aggregate
// decorations, named or VARIADIC arguments, a parameter type without a SQL
// name) fail with a SQLSTATE, never a panic (I9).
func TestSQLFunctionOddCalls(t *testing.T) {
	u := &udfDB{fakeDB: smallDB()}
	for _, def := range []string{
		`CREATE FUNCTION add2(a int, b int) RETURNS int LANGUAGE sql AS $$select a + b$$`,
		`CREATE FUNCTION zero() RETURNS int LANGUAGE sql AS 'select 0'`,
	} {
		if err := u.create(t, def); err != nil {
			t.Fatalf("%s: %v", def, err)
		}
	}
	// A function whose parameter type prints as a name the grammar does
	// not read back (no SQL type has one today; a new kind might).
	u.funcs = append(u.funcs, &catalog.Function{ID: 1999, Name: "odd", ArgNames: []string{"x"},
		ArgTypes: []types.Type{{Kind: types.Kind(250)}}, Return: types.Int32, Body: "select 1"})
	u.funcs = append(u.funcs, &catalog.Function{ID: 1998, Name: "oddret", Return: types.Type{Kind: types.Kind(250)}, Body: "select 1"})
	for _, c := range []struct{ q, code string }{
		{`select public.add2(DISTINCT 1, 2)`, sqlerr.WrongObjectType},
		{`select public.zero(*)`, sqlerr.WrongObjectType},
		{`select public.add2(1, 2 ORDER BY 1)`, sqlerr.WrongObjectType},
		{`select public.add2(1, 2) FILTER (WHERE true)`, sqlerr.WrongObjectType},
		{`select add2(VARIADIC ARRAY[1, 2])`, sqlerr.UndefinedFunction},
		{`select public.add2(VARIADIC ARRAY[1, 2])`, sqlerr.UndefinedFunction},
		{`select add2(a => 1, b => 2)`, sqlerr.UndefinedFunction},
		{`select public.add2(a => 1, b => 2)`, sqlerr.FeatureNotSupported},
		{`select odd(NULL)`, sqlerr.FeatureNotSupported},
		{`select oddret()`, sqlerr.FeatureNotSupported},
	} {
		_, err := u.query(t, c.q)
		if e := sqlerr.From(err); e == nil || e.Code != c.code {
			t.Errorf("%s: got %v, want SQLSTATE %s", c.q, err, c.code)
		}
	}
}
