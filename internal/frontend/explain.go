package frontend

import (
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/streamplan"
	"github.com/runneldb/runnel/internal/types"
)

// explainCreateView answers EXPLAIN CREATE MATERIALIZED VIEW: the view is
// planned exactly as CREATE plans it (so a construct CREATE refuses gives
// the same 0A000 here) and the stream plan is printed. Nothing is created
// and no ids are allocated: state tables are numbered from 0 in plan
// order, the order CREATE allocates their ids in.
func (ss *session) explainCreateView(e *binder.ExplainCreateView) (pgwire.Result, error) {
	root, err := streamplan.Build(e.View.Plan)
	if err != nil {
		return pgwire.Result{}, err
	}
	next := catalog.TableID(0)
	err = streamplan.AssignStateTables(root, e.View.Name, func() (catalog.TableID, error) {
		id := next
		next++
		return id, nil
	})
	if err != nil {
		return pgwire.Result{}, err
	}
	var rows []types.Row
	for _, line := range streamplan.Explain(root) {
		rows = append(rows, types.Row{types.DVarchar(line)})
	}
	return pgwire.Result{
		Tag:     "EXPLAIN",
		Columns: []pgwire.Column{{Name: "QUERY PLAN", Type: types.Text}},
		Rows:    pgwire.SliceRows(rows),
	}, nil
}
