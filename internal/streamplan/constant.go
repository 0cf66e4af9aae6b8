package streamplan

import (
	"context"
	"slices"
	"time"

	"github.com/runneldb/runnel/internal/batch"
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// maxConstantRows bounds a constant relation: its rows live in the plan
// (and in memory while the job is planned), which suits lookup lists and
// small series, not bulk data (load that into a table).
const maxConstantRows = 100_000

// readsNothing reports whether a plan subtree reads no relation: VALUES,
// generate_series with constant arguments, SELECT without FROM, and
// anything computed from them alone.
func readsNothing(n plan.Node) bool {
	if _, ok := n.(*plan.Scan); ok {
		return false
	}
	for _, c := range n.Children() {
		if !readsNothing(c) {
			return false
		}
	}
	return true
}

// checkConstant refuses what a constant subtree must not contain:
// subqueries (they may read relations) and volatile functions.
func checkConstant(n plan.Node) error {
	if err := checkNode(n); err != nil {
		return err
	}
	switch n := n.(type) {
	case *plan.Values:
		for _, r := range n.Rows {
			if err := checkStreamable(r...); err != nil {
				return err
			}
		}
	case *plan.TableFunc:
		if err := checkStreamable(n.Args...); err != nil {
			return err
		}
	case *plan.ProjectSet:
		for _, c := range n.Calls {
			if err := checkStreamable(c.Args...); err != nil {
				return err
			}
		}
	}
	for _, c := range n.Children() {
		if err := checkConstant(c); err != nil {
			return err
		}
	}
	return nil
}

// constant plans a subtree that reads no relation: it is evaluated now,
// with the batch engine, and its rows become a Values operator that emits
// them once. A hidden row number is the stream key. Evaluation is
// deterministic (volatile functions are refused), so re-planning the
// view after a restart yields the same rows.
func (b *builder) constant(n plan.Node) (*Node, error) {
	if err := checkConstant(n); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	env := &batch.Env{Data: noRelations{}, Eval: expr.EvalContext{Location: time.UTC}}
	it, err := batch.Run(ctx, env, n)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var rows []types.Row
	for {
		r, err := it.Next(ctx)
		if err != nil {
			return nil, err
		}
		if r == nil {
			break
		}
		if len(rows) == maxConstantRows {
			return nil, unsupported("a constant relation (VALUES or generate_series) of more than %d rows in a materialized view is not supported (load the rows into a table)", maxConstantRows)
		}
		row := append(slices.Clone(r), types.DInt64(int64(len(rows))))
		rows = append(rows, row)
	}
	schema := append(slices.Clone(n.Schema()), plan.Column{Name: "_values_row", Type: types.Int64, Hidden: true})
	return &Node{Op: OpValues, Schema: schema, Key: []int{len(schema) - 1}, Dist: Dist{Kind: DistSingle}, Rows: rows}, nil
}

// noRelations is the data source of a constant subtree, which scans
// nothing.
type noRelations struct{}

func (noRelations) Scan(_ context.Context, rel *catalog.Relation) (batch.RowIterator, error) {
	return nil, sqlerr.Errorf(sqlerr.InternalError, "constant relation reads %s", rel.Name)
}
