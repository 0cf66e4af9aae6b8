package sql

import (
	"github.com/runneldb/runnel/internal/batch"
	"github.com/runneldb/runnel/internal/sql/plan"
)

// HideColumns drops the hidden columns of sch from it's rows (for callers
// that run a plan themselves, like COPY (query) TO).
func HideColumns(it batch.RowIterator, sch plan.Schema) batch.RowIterator {
	return hideColumns(it, sch)
}
