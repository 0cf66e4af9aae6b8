package frontend

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// SQL functions (CREATE FUNCTION ... LANGUAGE sql) are catalog objects the
// binder inlines at each call (internal/sql/binder/udf.go). A view or sink
// records the functions it inlined (catalog.Relation.Functions): such a
// function cannot be dropped without CASCADE, and cannot be replaced while
// a materialized view or sink inlined it, since their running plans and
// stored state layouts hold its old body (a replan at restart would not
// match them). Plain views are expanded at each use, so they see a
// replaced body at once, as in PostgreSQL.

// ResolveUDFs implements binder.UDFCatalog: the functions named name in
// schema, or in the search_path's schemas (earlier schemas first) for "".
func (c *sessionCatalog) ResolveUDFs(schema, name string) []*catalog.Function {
	ss := c.ss
	if schema != "" {
		sc, err := ss.s.catalog.SchemaByName(ss.db.ID, schema)
		if err != nil {
			return nil
		}
		return ss.s.catalog.Functions(func(f *catalog.Function) bool { return f.SchemaID == sc.ID && f.Name == name })
	}
	var out []*catalog.Function
	for _, sname := range ss.searchPath() {
		sc, err := ss.s.catalog.SchemaByName(ss.db.ID, sname)
		if err != nil {
			continue
		}
		for _, f := range ss.s.catalog.Functions(func(f *catalog.Function) bool { return f.SchemaID == sc.ID && f.Name == name }) {
			// A function of an earlier schema hides one of the same
			// argument types in a later one.
			if !slices.ContainsFunc(out, func(o *catalog.Function) bool { return sameSignature(o.ArgTypes, f.ArgTypes) }) {
				out = append(out, f)
			}
		}
	}
	return out
}

func sameSignature(a, b []types.Type) bool {
	return slices.EqualFunc(a, b, func(x, y types.Type) bool {
		x.Mod, y.Mod = -1, -1
		return x.Name() == y.Name()
	})
}

// functionUsers returns the relations that inlined function id.
func (ss *session) functionUsers(id catalog.ObjectID) []*catalog.Relation {
	return ss.s.catalog.Relations(func(r *catalog.Relation) bool { return slices.Contains(r.Functions, id) })
}

func (ss *session) createFunction(ctx context.Context, cf *binder.CreateFunction) (pgwire.Result, error) {
	sc, err := ss.resolveSchema(cf.Schema)
	if err != nil {
		return pgwire.Result{}, err
	}
	fn := cf.Func
	fn.SchemaID, fn.Owner = sc.ID, ss.user.Name
	var old *catalog.Function
	for _, f := range ss.s.catalog.Functions(func(f *catalog.Function) bool { return f.SchemaID == sc.ID && f.Name == fn.Name }) {
		if sameSignature(f.ArgTypes, fn.ArgTypes) {
			old = f
		}
	}
	if old != nil {
		if !cf.OrReplace {
			return pgwire.Result{}, sqlerr.Errorf(sqlerr.DuplicateFunction, "function %s already exists with same argument types", old.Signature())
		}
		if old.Return.Name() != fn.Return.Name() {
			return pgwire.Result{}, sqlerr.Errorf(sqlerr.InvalidFunctionDefinition, "cannot change return type of existing function").
				WithHint("Use DROP FUNCTION %s first.", old.Signature())
		}
		for _, r := range ss.functionUsers(old.ID) {
			if r.Kind != catalog.KindView {
				return pgwire.Result{}, sqlerr.Errorf(sqlerr.FeatureNotSupported,
					"cannot replace function %s because %s %s inlined it", old.Signature(), r.Kind, r.Name).
					WithHint("Drop or recreate %s %s, or create the function under another name.", r.Kind, r.Name)
			}
		}
	}
	if err := ss.s.meta.CreateFunction(ctx, fn, cf.OrReplace); err != nil {
		return pgwire.Result{}, err
	}
	return pgwire.Result{Tag: "CREATE FUNCTION"}, nil
}

func (ss *session) dropFunction(ctx context.Context, d *binder.DropFunction) (pgwire.Result, error) {
	for _, ref := range d.Funcs {
		fn, err := ss.findFunction(ref)
		if err != nil {
			return pgwire.Result{}, err
		}
		if fn == nil {
			if !d.IfExists {
				return pgwire.Result{}, sqlerr.Errorf(sqlerr.UndefinedFunction, "function %s does not exist", refString(ref))
			}
			ss.client.Notice(pgwire.Notice{Message: fmt.Sprintf("function %s does not exist, skipping", refString(ref))})
			continue
		}
		users := ss.functionUsers(fn.ID)
		if len(users) > 0 && !d.Cascade {
			var names []string
			for _, r := range users {
				names = append(names, fmt.Sprintf("%s %s depends on function %s", r.Kind, r.Name, fn.Signature()))
			}
			return pgwire.Result{}, sqlerr.Errorf(sqlerr.DependentObjectsStillExist, "cannot drop function %s because other objects depend on it", fn.Signature()).
				WithDetail("%s", strings.Join(names, "\n")).
				WithHint("Use DROP ... CASCADE to drop the dependent objects too.")
		}
		for _, r := range users {
			if cur, ok := ss.s.catalog.Relation(r.ID); ok { // not dropped with an earlier one
				if err := ss.s.meta.DropRelation(ctx, cur); err != nil {
					return pgwire.Result{}, err
				}
			}
		}
		if err := ss.s.meta.DropObject(ctx, fn.ID); err != nil {
			return pgwire.Result{}, err
		}
	}
	return pgwire.Result{Tag: "DROP FUNCTION"}, nil
}

// findFunction resolves DROP FUNCTION's name: by argument types when given,
// else the one function of that name (42725 when there are several).
func (ss *session) findFunction(ref binder.FuncRef) (*catalog.Function, error) {
	cands := (&sessionCatalog{ss: ss}).ResolveUDFs(ref.Schema, ref.Name)
	if ref.ArgsGiven {
		for _, f := range cands {
			if sameSignature(f.ArgTypes, ref.ArgTypes) {
				return f, nil
			}
		}
		return nil, nil
	}
	switch len(cands) {
	case 0:
		return nil, nil
	case 1:
		return cands[0], nil
	}
	return nil, sqlerr.Errorf(sqlerr.AmbiguousFunction, "function name \"%s\" is not unique", ref.Name).
		WithHint("Specify the argument list to select the function unambiguously.")
}

func refString(ref binder.FuncRef) string {
	s := ref.Name
	if ref.Schema != "" {
		s = ref.Schema + "." + s
	}
	if !ref.ArgsGiven {
		return s
	}
	var args []string
	for _, t := range ref.ArgTypes {
		args = append(args, t.Name())
	}
	return s + "(" + strings.Join(args, ", ") + ")"
}
