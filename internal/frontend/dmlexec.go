package frontend

import (
	"context"
	"errors"
	"fmt"

	"github.com/runneldb/runnel/internal/batch"
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sql"
	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// executeDML runs INSERT, UPDATE, DELETE and COPY.
func (st *statement) executeDML(ctx context.Context, p *sql.Prepared, params []types.Datum) (pgwire.Result, error) {
	var (
		res   pgwire.Result
		epoch uint64
		err   error
		rel   *catalog.Relation
	)
	if returningReads(p.Bound) && len(st.sess.written) > 0 {
		// RETURNING reads other relations after the statement has applied
		// its changes, too late to run it again: make the session's
		// earlier writes visible first, as the loop below does for the
		// statement's own reads.
		if err := st.sess.flush(ctx); err != nil {
			return pgwire.Result{}, err
		}
	}
	for {
		switch b := p.Bound.(type) {
		case *binder.Insert:
			rel = b.Table
			res, epoch, err = st.insert(ctx, b, params)
		case *binder.Update:
			rel = b.Table
			res, epoch, err = st.update(ctx, b, params)
		case *binder.Delete:
			rel = b.Table
			res, epoch, err = st.delete(ctx, b, params)
		case *binder.Copy:
			return st.copy(ctx, b, params)
		default:
			return pgwire.Result{}, sqlerr.Errorf(sqlerr.FeatureNotSupported, "statement not supported: %s", st.p.Text)
		}
		if !errors.Is(err, errOwnWritesPending) {
			break
		}
		// The statement reads a relation other than its target (a
		// subquery, INSERT ... SELECT, UPDATE ... FROM) and this session
		// has writes that are acknowledged but not yet committed: it
		// applied nothing. Wait for those writes, as FLUSH would, and run
		// it again over a snapshot that holds them, so that a statement
		// always sees its session's earlier statements, as in PostgreSQL.
		// (The target table itself is read from its actor's live state.)
		if err := st.sess.flush(ctx); err != nil {
			return pgwire.Result{}, err
		}
	}
	if err != nil {
		return pgwire.Result{}, st.sess.integrityErrorObject(mapStorageErr(err), rel)
	}
	if err := st.sess.acknowledge(ctx, epoch); err != nil {
		return pgwire.Result{}, err
	}
	return res, nil
}

// collect runs a batch plan to completion.
// The rows are charged to the statement's memory (query_memory_limit).
func (st *statement) collect(ctx context.Context, env *batch.Env, node plan.Node) ([]types.Row, error) {
	return batch.Collect(ctx, env, node)
}

// snapshotEnv pins the last committed epoch for the reads of a statement.
func (st *statement) snapshotEnv(ctx context.Context, params []types.Datum) (*batch.Env, func(), error) {
	src, release, err := st.readSource(ctx, true)
	if err != nil {
		return nil, nil, err
	}
	return &batch.Env{Data: src, Eval: st.evalContext(ctx), Params: params, MemoryLimit: st.sess.queryMemoryLimit()}, release, nil
}

func returningReads(b any) bool {
	switch b := b.(type) {
	case *binder.Insert:
		return b.ReturningReads
	case *binder.Update:
		return b.ReturningReads
	case *binder.Delete:
		return b.ReturningReads
	}
	return false
}

// returning evaluates RETURNING over the affected rows of rel, or returns
// the tag. It runs as a batch plan (Project over the rows), so that its
// subqueries have the batch engine's subquery runner; they read the last
// committed snapshot, which holds the session's earlier writes
// (executeDML flushed them). The statement has been applied: a read here
// must never ask for it to run again (ownWritesPending is false).
func (st *statement) returning(ctx context.Context, params []types.Datum, rel *catalog.Relation, exprs []expr.Expr,
	sch plan.Schema, rows []types.Row, tag string) (pgwire.Result, error) {
	if exprs == nil {
		return pgwire.Result{Tag: tag}, nil
	}
	in := make(plan.Schema, len(rel.Columns))
	for i, c := range rel.Columns {
		in[i] = plan.Column{Name: c.Name, Type: c.Type}
	}
	vals := &plan.Values{Rows: make([][]expr.Expr, len(rows)), Out: in}
	for i, r := range rows {
		if len(r) != len(in) {
			return pgwire.Result{}, sqlerr.Errorf(sqlerr.InternalError, "RETURNING: affected row of %s has %d columns, want %d", rel.Name, len(r), len(in))
		}
		row := make([]expr.Expr, len(in))
		for j := range in {
			row[j] = &expr.Const{Value: r[j], Typ: in[j].Type}
		}
		vals.Rows[i] = row
	}
	snap := st.sess.s.store.Snapshot()
	defer snap.Close()
	env := &batch.Env{Data: &snapshotSource{snap: snap, sess: st.sess}, Eval: st.evalContext(ctx), Params: params, MemoryLimit: st.sess.queryMemoryLimit()}
	out, err := st.collect(ctx, env, &plan.Project{Input: vals, Exprs: exprs, Out: sch})
	if err != nil {
		return pgwire.Result{}, err
	}
	res := pgwire.Result{Tag: tag, Rows: pgwire.SliceRows(out)}
	for _, c := range sch {
		res.Columns = append(res.Columns, pgwire.Column{Name: c.Name, Type: c.Type})
	}
	return res, nil
}

func (st *statement) insert(ctx context.Context, b *binder.Insert, params []types.Datum) (pgwire.Result, uint64, error) {
	env, release, err := st.snapshotEnv(ctx, params)
	if err != nil {
		return pgwire.Result{}, 0, err
	}
	rows, err := st.collect(ctx, env, b.Source)
	release()
	if err != nil {
		return pgwire.Result{}, 0, err
	}
	var conflict *conflictAction
	if oc := b.OnConflict; oc != nil {
		conflict = &conflictAction{doNothing: oc.Action == binder.DoNothing}
		if oc.Action == binder.DoUpdate {
			ec := st.evalContext(ctx)
			conflict.update = func(ctx context.Context, existing, excluded types.Row) (types.Row, bool, error) {
				both := append(append(make(types.Row, 0, 2*len(existing)), existing...), excluded...)
				if oc.Where != nil {
					ok, err := oc.Where.Eval(&ec, both)
					if err != nil {
						return nil, false, err
					}
					if ok.IsNull() || !ok.Bool() {
						return nil, false, nil
					}
				}
				updated := existing.Copy()
				for i, col := range oc.Cols {
					d, err := oc.Set[i].Eval(&ec, both)
					if err != nil {
						return nil, false, err
					}
					updated[col] = d
				}
				return updated, true, nil
			}
		}
	}
	affected, epoch, err := st.sess.insert(ctx, b.Table, rows, conflict)
	if err != nil {
		return pgwire.Result{}, 0, err
	}
	res, err := st.returning(ctx, params, b.Table, b.Returning, b.ReturningSchema, affected, fmt.Sprintf("INSERT 0 %d", len(affected)))
	return res, epoch, err
}

func (st *statement) update(ctx context.Context, b *binder.Update, params []types.Datum) (pgwire.Result, uint64, error) {
	n := len(b.Table.Columns)
	env, release, err := st.snapshotEnv(ctx, params)
	if err != nil {
		return pgwire.Result{}, 0, err
	}
	defer release()
	changed, epoch, err := st.sess.modify(ctx, b.Table, env.Data, func(ctx context.Context, src batch.DataSource) ([]rowChange, error) {
		e := *env
		e.Data = src
		rows, err := st.collect(ctx, &e, b.Plan)
		if err != nil {
			return nil, err
		}
		out := make([]rowChange, len(rows))
		for i, r := range rows {
			out[i] = rowChange{Old: r[:n:n], New: r[n:]}
		}
		return out, nil
	})
	if err != nil {
		return pgwire.Result{}, 0, err
	}
	res, err := st.returning(ctx, params, b.Table, b.Returning, b.ReturningSchema, changed, fmt.Sprintf("UPDATE %d", len(changed)))
	return res, epoch, err
}

func (st *statement) delete(ctx context.Context, b *binder.Delete, params []types.Datum) (pgwire.Result, uint64, error) {
	env, release, err := st.snapshotEnv(ctx, params)
	if err != nil {
		return pgwire.Result{}, 0, err
	}
	defer release()
	changed, epoch, err := st.sess.modify(ctx, b.Table, env.Data, func(ctx context.Context, src batch.DataSource) ([]rowChange, error) {
		e := *env
		e.Data = src
		rows, err := st.collect(ctx, &e, b.Plan)
		if err != nil {
			return nil, err
		}
		out := make([]rowChange, len(rows))
		for i, r := range rows {
			out[i] = rowChange{Old: r}
		}
		return out, nil
	})
	if err != nil {
		return pgwire.Result{}, 0, err
	}
	res, err := st.returning(ctx, params, b.Table, b.Returning, b.ReturningSchema, changed, fmt.Sprintf("DELETE %d", len(changed)))
	return res, epoch, err
}
