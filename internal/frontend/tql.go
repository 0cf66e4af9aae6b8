package frontend

import (
	"context"
	"fmt"

	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/promql"
	"github.com/runneldb/runnel/internal/sql/parser"
	"github.com/runneldb/runnel/internal/types"
)

// evalTQL evaluates TQL EVAL (GreptimeDB's PromQL in SQL) over the
// time-series tables of the session's current schema, read from one
// snapshot as the HTTP API reads them (internal/promql).
func (st *statement) evalTQL(ctx context.Context, r *parser.TQL) (*promql.TQLResult, error) {
	ss := st.sess
	sc, err := ss.currentSchema()
	if err != nil {
		return nil, err
	}
	return promql.EvalTQL(ctx, promSource{s: ss.s, db: ss.db.Name}, sc.Name, r.Start, r.End, r.Step, r.Query)
}

// tqlColumns are a TQL answer's columns: a text column per label, then
// ts (timestamptz) and value (double precision).
func tqlColumns(res *promql.TQLResult) []pgwire.Column {
	cols := make([]pgwire.Column, 0, len(res.Labels)+2)
	for _, l := range res.Labels {
		cols = append(cols, pgwire.Column{Name: l, Type: types.Text})
	}
	return append(cols, pgwire.Column{Name: "ts", Type: types.Timestamptz}, pgwire.Column{Name: "value", Type: types.Float64})
}

// executeTQL answers TQL EVAL: one row per point, by series then time; a
// series without a label has NULL in its column.
func (st *statement) executeTQL(ctx context.Context, r *parser.TQL) (pgwire.Result, error) {
	res, err := st.evalTQL(ctx, r)
	if err != nil {
		return pgwire.Result{}, err
	}
	rows := make([]types.Row, len(res.Rows))
	for i, x := range res.Rows {
		row := make(types.Row, 0, len(res.Labels)+2)
		for _, v := range x.Labels {
			if v == "" {
				row = append(row, types.NullDatum)
			} else {
				row = append(row, types.DVarchar(v))
			}
		}
		rows[i] = append(row, types.DTimestamptz(x.T*1000), types.DFloat64(x.V))
	}
	return pgwire.Result{Columns: tqlColumns(res), Rows: pgwire.SliceRows(rows), Tag: fmt.Sprintf("SELECT %d", len(rows))}, nil
}

// describeTQL evaluates the statement to learn its columns (they are the
// answer's labels); Describe of a prepared TQL statement pays one
// evaluation.
func (st *statement) describeTQL(ctx context.Context, r *parser.TQL) ([]pgwire.Column, error) {
	res, err := st.evalTQL(ctx, r)
	if err != nil {
		return nil, err
	}
	return tqlColumns(res), nil
}
