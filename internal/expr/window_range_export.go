package expr

import "github.com/runneldb/runnel/internal/types"

// RangeFrameTarget returns key moved by off toward larger values (add) or
// smaller ones, as a RANGE offset frame bound computes it (integers and
// numerics widened to exact decimals, dates as timestamps). Incremental
// window maintenance (stream/exec.OverWindow) uses it to find the rows
// whose RANGE frames hold a changed key.
func RangeFrameTarget(ctx *EvalContext, key, off types.Datum, add bool) (types.Datum, error) {
	return rangeTarget(ctx, key, off, add)
}

// CompareRangeFrameKey compares an ORDER BY key with a target from
// RangeFrameTarget.
func CompareRangeFrameKey(key, target types.Datum) int {
	return compareRangeKey(key, target)
}
