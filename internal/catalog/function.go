package catalog

import (
	"context"
	"fmt"
	"sort"

	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/types"
)

// objFunction is the catalog_object kind of a user-defined function.
const objFunction = "function"

// Function is a user-defined function made by CREATE FUNCTION ... LANGUAGE
// sql. The binder inlines its body at every call (its arguments substituted
// for the parameters), so a view that calls it is planned exactly as if
// the body were written in place; the view depends on the function
// (Relation.DependsOn), which therefore cannot be dropped or replaced with
// another signature while the view exists.
type Function struct {
	ID       ObjectID
	SchemaID ObjectID
	Name     string
	// ArgNames holds each parameter's name ("" when unnamed: only $n
	// refers to it); ArgTypes their types, in order.
	ArgNames []string
	ArgTypes []types.Type
	Return   types.Type
	// Body is the function's SQL text: one SELECT statement, or the
	// expression of a RETURN clause (BodyIsExpr).
	Body       string
	BodyIsExpr bool
	// Strict (STRICT, RETURNS NULL ON NULL INPUT): NULL when any
	// argument is NULL, without evaluating the body.
	Strict bool
	Owner  string
	// Definition is the CREATE FUNCTION statement's text as written.
	Definition string
}

// Signature is the function's name and argument types as PostgreSQL
// prints them: add(integer, integer).
func (f *Function) Signature() string {
	s := f.Name + "("
	for i, t := range f.ArgTypes {
		if i > 0 {
			s += ", "
		}
		s += t.Name()
	}
	return s + ")"
}

// sameArgs reports whether f takes exactly the types ts.
func (f *Function) sameArgs(ts []types.Type) bool {
	if len(f.ArgTypes) != len(ts) {
		return false
	}
	for i, t := range ts {
		// Type modifiers are not part of a signature (PostgreSQL drops
		// them from argument types).
		a := f.ArgTypes[i]
		a.Mod, t.Mod = -1, -1
		if a.Name() != t.Name() {
			return false
		}
	}
	return true
}

// CreateFunction stores fn (assigning its ID). With replace, a function of
// the same schema, name and argument types is replaced in place (its ID
// kept, so views that depend on it keep their dependency); without, such a
// function is an error wrapping ErrExists.
func (c *Catalog) CreateFunction(ctx context.Context, fn *Function, replace bool) error {
	var old *Function
	c.mu.RLock()
	for _, f := range c.functions {
		if f.SchemaID == fn.SchemaID && f.Name == fn.Name && f.sameArgs(fn.ArgTypes) {
			old = f
		}
	}
	c.mu.RUnlock()
	if old != nil && !replace {
		return fmt.Errorf("function %s %w", old.Signature(), ErrExists)
	}
	nf := *fn
	err := c.mutate(ctx, func(tx *metastore.Tx) error {
		if old != nil {
			nf.ID = old.ID
		} else {
			id, err := allocateIDs(ctx, tx, "object", 1)
			if err != nil {
				return err
			}
			nf.ID = ObjectID(id)
		}
		return put(ctx, tx, nf.ID, objFunction, &nf)
	}, func() { c.functions[nf.ID] = &nf })
	if err != nil {
		return fmt.Errorf("catalog: create function %s: %w", fn.Signature(), err)
	}
	*fn = nf
	return nil
}

// ErrExists is wrapped by errors about an object that already exists.
var ErrExists = fmt.Errorf("already exists")

// FunctionsByName returns the functions of a schema with a name, by
// argument count then ID.
func (c *Catalog) FunctionsByName(schemaID ObjectID, name string) []*Function {
	return c.Functions(func(f *Function) bool { return f.SchemaID == schemaID && f.Name == name })
}

// Function returns a function by ID.
func (c *Catalog) Function(id ObjectID) (*Function, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	f, ok := c.functions[id]
	return f, ok
}

// Functions returns the functions filter accepts (all for nil), by argument
// count then ID.
func (c *Catalog) Functions(filter func(*Function) bool) []*Function {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*Function
	for _, f := range c.functions {
		if filter == nil || filter(f) {
			out = append(out, f)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i].ArgTypes) != len(out[j].ArgTypes) {
			return len(out[i].ArgTypes) < len(out[j].ArgTypes)
		}
		return out[i].ID < out[j].ID
	})
	return out
}
