package binder

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/types"
)

// ExplainCreateView is EXPLAIN CREATE MATERIALIZED VIEW: the view is bound
// as CREATE binds it, the session plans it as a streaming job and prints
// the plan; nothing is created.
type ExplainCreateView struct {
	View *CreateView
}

func (*ExplainCreateView) boundStmt() {}

// ReturningColumns is the one text column EXPLAIN returns.
func (*ExplainCreateView) ReturningColumns() plan.Schema {
	return plan.Schema{{Name: "QUERY PLAN", Type: types.Text}}
}

// bindExplainCreate binds the statement under EXPLAIN when it is CREATE
// MATERIALIZED VIEW (ok false otherwise).
func (b *Binder) bindExplainCreate(n *pg.Node) (Statement, bool, error) {
	c := n.GetCreateTableAsStmt()
	if c == nil || c.Objtype != pg.ObjectType_OBJECT_MATVIEW {
		return nil, false, nil
	}
	s, err := b.bindCreateView(c.Into.Rel, c.Into.ColNames, c.Query, true, c.IfNotExists, false)
	if err != nil {
		return nil, true, err
	}
	return &ExplainCreateView{View: s.(*CreateView)}, true, nil
}
