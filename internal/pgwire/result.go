package pgwire

import (
	"context"

	"github.com/runneldb/runnel/internal/types"
)

// SliceRows returns a RowIter over rows already in memory (SHOW, small
// catalog queries). The rows are not copied.
func SliceRows(rows []types.Row) RowIter { return &sliceRows{rows: rows} }

type sliceRows struct{ rows []types.Row }

func (it *sliceRows) Next(context.Context) (types.Row, error) {
	if len(it.rows) == 0 {
		return nil, nil
	}
	r := it.rows[0]
	it.rows = it.rows[1:]
	return r, nil
}

func (it *sliceRows) Close() { it.rows = nil }
