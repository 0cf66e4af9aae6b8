package batch

import (
	"context"
	"fmt"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// RowIterator yields rows; Next returns (nil, nil) at the end. The caller
// must call Close. Returned rows are owned by the caller (an iterator does
// not reuse them).
type RowIterator interface {
	Next(ctx context.Context) (types.Row, error)
	Close()
}

// DataSource reads relations at one consistent snapshot.
type DataSource interface {
	// Scan returns the rows of rel in catalog column order, hidden columns
	// included. Scanning a dropped relation is an error (I4).
	Scan(ctx context.Context, rel *catalog.Relation) (RowIterator, error)
}

// KeyScanner is a DataSource that can read only the rows of rel whose
// primary key starts with prefix (values in key order, of the key
// columns' types). ok is false when it cannot for this relation or
// prefix; the caller then scans everything.
type KeyScanner interface {
	ScanKey(ctx context.Context, rel *catalog.Relation, prefix types.Row) (it RowIterator, ok bool, err error)
}

// IndexScanner is a DataSource that can read an index's rows (in the
// index's column order) whose first len(eq) key columns equal eq and
// whose next key column lies between lo and hi (inclusive; nil is open).
// ok is false when it cannot (a transaction block's writes, a DML
// statement's own table: the index does not hold them); the caller then
// reads the relation.
type IndexScanner interface {
	ScanIndex(ctx context.Context, index *catalog.Relation, eq types.Row, lo, hi *types.Datum) (it RowIterator, ok bool, err error)
}

// Env is what an execution needs from its session.
type Env struct {
	Data DataSource
	// Eval is the template evaluation context (time zone, statement time);
	// its Ctx is replaced per execution.
	Eval expr.EvalContext
	// Params are the values of $1...$n.
	Params []types.Datum
	// MemoryLimit is the statement's memory limit in bytes (the session's
	// query_memory_limit); 0: only the process-wide cap (memory.go).
	MemoryLimit int64
}

// cancelCheckRows is how often data-dependent loops check for
// cancellation (I5): cheap enough to be invisible, frequent enough that a
// cancel lands within microseconds of work.
const cancelCheckRows = 256

// canceler counts rows and checks the context every cancelCheckRows.
type canceler struct{ n int }

func (c *canceler) check(ctx context.Context) error {
	c.n++
	if c.n%cancelCheckRows != 0 {
		return nil
	}
	return ctxErr(ctx)
}

func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return sqlerr.Wrap(err, sqlerr.QueryCanceled, "canceling statement due to user request")
	}
	return nil
}

// executor is one node of the executor tree.
type executor interface {
	RowIterator
}

// Run builds and returns the iterator for node. The caller closes it.
func Run(ctx context.Context, env *Env, node plan.Node) (RowIterator, error) {
	r := newRunner(env)
	ctx = r.install(ctx)
	ex, err := r.build(node)
	if err != nil {
		r.mem.close()
		return nil, err
	}
	return &rootIter{ctx: ctx, ex: ex, mem: r.mem}, nil
}

// rootIter makes the caller's context carry the runner and parameters.
type rootIter struct {
	ctx context.Context
	ex  executor
	mem *memAccount
}

func (r *rootIter) Next(ctx context.Context) (types.Row, error) {
	if err := ctx.Err(); err != nil {
		return nil, ctxErr(ctx)
	}
	return r.ex.Next(mergeCtx(ctx, r.ctx))
}

func (r *rootIter) Close() {
	r.ex.Close()
	r.mem.close()
}

// mergeCtx returns a context with cancellation from outer and values from
// inner (which descends from an earlier outer of the same execution).
func mergeCtx(outer, inner context.Context) context.Context {
	if outer == inner {
		return inner
	}
	return valuesCtx{Context: outer, vals: inner}
}

type valuesCtx struct {
	context.Context
	vals context.Context
}

func (v valuesCtx) Value(key any) any {
	if x := v.vals.Value(key); x != nil {
		return x
	}
	return v.Context.Value(key)
}

// Collect runs node to completion and returns its rows.
func Collect(ctx context.Context, env *Env, node plan.Node) ([]types.Row, error) {
	it, err := Run(ctx, env, node)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	mem := it.(*rootIter).mem
	var out []types.Row
	for {
		row, err := it.Next(ctx)
		if err != nil {
			return nil, err
		}
		if row == nil {
			return out, nil
		}
		if err := mem.grow("the statement's collected rows", rowBytes(row)); err != nil {
			return nil, err
		}
		out = append(out, row)
	}
}

// runner builds executors and evaluates subqueries for one execution.
type runner struct {
	env   *Env
	cache map[*plan.Subquery]*subqueryResult
	work  map[int][]types.Row // WITH RECURSIVE: each RecursiveUnion's current step
	mem   *memAccount         // the statement's memory (memory.go)
	// rewrites: each Filter and Project's decorrelated plan, nil when it
	// has none (decorrelate.go).
	rewrites map[plan.Node]plan.Node
	// plain: nodes whose decorrelated plan failed, run as written.
	plain map[plan.Node]bool
}

func newRunner(env *Env) *runner {
	return &runner{env: env, cache: map[*plan.Subquery]*subqueryResult{}, work: map[int][]types.Row{}, rewrites: map[plan.Node]plan.Node{}, plain: map[plan.Node]bool{},
		mem: newMemAccount(env.MemoryLimit)}
}

func (r *runner) install(ctx context.Context) context.Context {
	ctx = plan.WithSubqueryRunner(ctx, r)
	return plan.WithParams(ctx, r.env.Params)
}

// evalCtx returns the evaluation context for ctx.
func (r *runner) evalCtx(ctx context.Context) *expr.EvalContext {
	ec := r.env.Eval
	ec.Ctx = ctx
	return &ec
}

func (r *runner) build(n plan.Node) (executor, error) {
	switch n := n.(type) {
	case *plan.Scan:
		if n.Filter != nil {
			if d := r.decorrelated(n); d != nil {
				return r.buildDecorrelated(n, d)
			}
		}
		return &scanExec{r: r, node: n}, nil
	case *plan.Values:
		return &valuesExec{r: r, node: n}, nil
	case *plan.RecursiveUnion:
		return &recursiveUnionExec{r: r, node: n}, nil // see recursive.go
	case *plan.WorkTable:
		return &workTableExec{rows: r.work[n.WorkID]}, nil
	case *plan.Filter:
		if d := r.decorrelated(n); d != nil {
			return r.buildDecorrelated(n, d)
		}
		in, err := r.build(n.Input)
		if err != nil {
			return nil, err
		}
		return &filterExec{r: r, in: in, cond: n.Cond}, nil
	case *plan.Project:
		if d := r.decorrelated(n); d != nil {
			return r.buildDecorrelated(n, d)
		}
		in, err := r.build(n.Input)
		if err != nil {
			return nil, err
		}
		return &projectExec{r: r, in: in, exprs: n.Exprs}, nil
	case *plan.Expand:
		in, err := r.build(n.Input)
		if err != nil {
			return nil, err
		}
		return &expandExec{r: r, in: in, node: n}, nil // see expand.go
	case *plan.Aggregate:
		in, err := r.build(n.Input)
		if err != nil {
			return nil, err
		}
		return &hashAggExec{r: r, in: in, node: n}, nil
	case *plan.Join:
		if n.Cond != nil {
			if d := r.decorrelated(n); d != nil {
				return r.buildDecorrelated(n, d)
			}
		}
		left, err := r.build(n.Left)
		if err != nil {
			return nil, err
		}
		right, err := r.build(n.Right)
		if err != nil {
			return nil, err
		}
		return newJoin(r, n, left, right), nil
	case *plan.Sort:
		in, err := r.build(n.Input)
		if err != nil {
			return nil, err
		}
		return &sortExec{r: r, in: in, keys: n.Keys}, nil
	case *plan.TopN:
		in, err := r.build(n.Input)
		if err != nil {
			return nil, err
		}
		return &topNExec{r: r, in: in, keys: n.Keys, limit: n.Limit, offset: n.Offset, withTies: n.WithTies}, nil
	case *plan.Limit:
		in, err := r.build(n.Input)
		if err != nil {
			return nil, err
		}
		return &limitExec{r: r, in: in, limit: n.Limit, offset: n.Offset}, nil
	case *plan.Distinct:
		in, err := r.build(n.Input)
		if err != nil {
			return nil, err
		}
		return &distinctExec{r: r, in: in, on: n.On, seen: map[string]struct{}{}}, nil
	case *plan.SetOp:
		left, err := r.build(n.Left)
		if err != nil {
			return nil, err
		}
		right, err := r.build(n.Right)
		if err != nil {
			return nil, err
		}
		return &setOpExec{r: r, node: n, left: left, right: right}, nil
	case *plan.TableFunc:
		return &tableFuncExec{r: r, node: n}, nil
	case *plan.ProjectSet:
		in, err := r.build(n.Input)
		if err != nil {
			return nil, err
		}
		for _, c := range n.Calls {
			if !expr.IsSelectListSRF(c.Name) {
				return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "set-returning function %s is not supported", c.Name)
			}
		}
		return &projectSetExec{r: r, in: in, node: n}, nil
	case *plan.HopWindow:
		in, err := r.build(n.Input)
		if err != nil {
			return nil, err
		}
		return &hopWindowExec{in: in, node: n}, nil // see timewindow.go
	case *plan.Window:
		in, err := r.build(n.Input)
		if err != nil {
			return nil, err
		}
		return &windowExec{r: r, in: in, node: n}, nil
	case *plan.Explain:
		return &explainExec{lines: plan.Format(decorrelateTree(n.Query))}, nil
	}
	return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "batch execution of %T is not supported", n)
}

// drain reads every row of ex, charging them to hold for op.
func drain(ctx context.Context, ex executor, hold *memHold, op string) ([]types.Row, error) {
	var out []types.Row
	for {
		row, err := ex.Next(ctx)
		if err != nil {
			return nil, err
		}
		if row == nil {
			return out, nil
		}
		if err := hold.grow(op, rowBytes(row)); err != nil {
			return nil, err
		}
		out = append(out, row)
	}
}

// evalBool evaluates a predicate: true only for a non-NULL true.
func evalBool(ec *expr.EvalContext, e expr.Expr, row types.Row) (bool, error) {
	d, err := e.Eval(ec, row)
	if err != nil {
		return false, err
	}
	return !d.IsNull() && d.Bool(), nil
}

func evalAll(ec *expr.EvalContext, es []expr.Expr, row types.Row, out []types.Datum) ([]types.Datum, error) {
	out = out[:0]
	for _, e := range es {
		d, err := e.Eval(ec, row)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

type explainExec struct {
	lines []string
	i     int
}

func (e *explainExec) Next(context.Context) (types.Row, error) {
	if e.i >= len(e.lines) {
		return nil, nil
	}
	e.i++
	return types.Row{types.DVarchar(e.lines[e.i-1])}, nil
}
func (e *explainExec) Close() {}

func internalf(format string, args ...any) error {
	return sqlerr.New(sqlerr.InternalError, fmt.Sprintf(format, args...))
}
