package sql

import (
	"context"

	"github.com/runneldb/runnel/internal/batch"
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/sql/parser"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// Kind says how the session must run a prepared statement.
type Kind uint8

const (
	// KindQuery returns rows: run it with Execute.
	KindQuery Kind = iota
	// KindExplain returns the plan as text rows: run it with Execute.
	KindExplain
	// KindBound is any other statement: Bound holds its bound form.
	KindBound
)

// Column describes one result column.
type Column struct {
	Name string
	Type types.Type
	// OrigRel and OrigAtt: the stored column it is taken from unchanged,
	// if any (plan.Column).
	OrigRel catalog.ObjectID
	OrigAtt int
}

// Prepared is a bound statement.
type Prepared struct {
	Stmt *parser.Statement
	Kind Kind
	// Plan is the query (KindQuery) or the explained query (KindExplain).
	Plan plan.Node
	// Columns are the result columns (nil for statements without rows).
	Columns []Column
	// ParamTypes are the types of $1..$n.
	ParamTypes []types.Type
	// Bound is the bound form of a non-query statement (see binder).
	Bound binder.Statement
}

// Prepare binds one parsed statement. paramTypes are the client's declared
// parameter types (zero Type: infer).
func Prepare(cat binder.Catalog, st *parser.Statement, paramTypes []types.Type) (*Prepared, error) {
	b := binder.New(cat, st, paramTypes)
	p := &Prepared{Stmt: st}
	bound, err := b.BindStatement()
	if err != nil {
		return nil, err
	}
	switch s := bound.(type) {
	case *binder.Query:
		p.Kind, p.Plan = KindQuery, s.Plan
		for _, c := range s.Plan.Schema() {
			if !c.Hidden {
				p.Columns = append(p.Columns, Column{Name: c.Name, Type: c.Type, OrigRel: c.OrigRel, OrigAtt: c.OrigAtt})
			}
		}
	case *binder.Explain:
		p.Kind, p.Plan = KindExplain, s.Plan
		p.Columns = []Column{{Name: "QUERY PLAN", Type: types.Text}}
	default:
		p.Kind = KindBound
		if r, ok := bound.(binder.Returner); ok {
			for _, c := range r.ReturningColumns() {
				p.Columns = append(p.Columns, Column{Name: c.Name, Type: c.Type})
			}
		}
	}
	p.Bound = bound
	p.ParamTypes = b.ParamTypes()
	return p, nil
}

// Execute runs a query or EXPLAIN with the given parameter values (typed as
// ParamTypes). The caller closes the iterator.
func (p *Prepared) Execute(ctx context.Context, env *batch.Env, params []types.Datum) (batch.RowIterator, error) {
	if p.Kind != KindQuery && p.Kind != KindExplain {
		return nil, sqlerr.New(sqlerr.InternalError, "Execute called on a statement that returns no rows")
	}
	if len(params) != len(p.ParamTypes) {
		return nil, sqlerr.Errorf(sqlerr.ProtocolViolation, "bind message supplies %d parameters, but prepared statement requires %d", len(params), len(p.ParamTypes))
	}
	e := *env
	e.Params = params
	node := p.Plan
	if p.Kind == KindExplain {
		node = &plan.Explain{Query: p.Plan, Out: plan.Schema{{Name: "QUERY PLAN", Type: types.Text}}}
	}
	it, err := batch.Run(ctx, &e, node)
	if err != nil {
		return nil, err
	}
	return hideColumns(it, node.Schema()), nil
}

// hideColumns drops hidden columns (a table's _row_id under SELECT *
// never appears, but a bare scan plan may carry it).
func hideColumns(it batch.RowIterator, sch plan.Schema) batch.RowIterator {
	var keep []int
	for i, c := range sch {
		if !c.Hidden {
			keep = append(keep, i)
		}
	}
	if len(keep) == len(sch) {
		return it
	}
	return &projectIter{it: it, keep: keep}
}

type projectIter struct {
	it   batch.RowIterator
	keep []int
}

func (p *projectIter) Next(ctx context.Context) (types.Row, error) {
	row, err := p.it.Next(ctx)
	if err != nil || row == nil {
		return nil, err
	}
	out := make(types.Row, len(p.keep))
	for i, k := range p.keep {
		out[i] = row[k]
	}
	return out, nil
}

func (p *projectIter) Close() { p.it.Close() }
