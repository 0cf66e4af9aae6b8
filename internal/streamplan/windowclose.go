package streamplan

import "slices"

// EMIT ON WINDOW CLOSE (RisingWave's emit mode for windowed views):
//
//	CREATE MATERIALIZED VIEW per_minute AS
//	  SELECT window_start, count(*) FROM TUMBLE(bids, at, INTERVAL '1 minute')
//	  GROUP BY window_start EMIT ON WINDOW CLOSE
//
// The view shows a window's row only once the window has closed — the
// watermark on a column of its key has passed it — and never changes it
// afterwards: the view only grows, and a sink over it can be append-only.
// An OpWindowClose under the Materialize keeps the rows of the open windows
// in state (exec.WindowClose) and emits each once the watermark passes it.
//
// The watermark column must be in the view's stream key: rows below the
// watermark then never change again (the aggregation below has closed
// those groups, and later rows for them are dropped as late), and a row
// emitted is never followed by another with the same key.

// emitOnWindowClose puts the window-close buffer over in, the top of a
// view's plan.
func (b *builder) emitOnWindowClose(in *Node) (*Node, error) {
	col := -1
	for _, c := range WatermarkColumns(in) {
		if slices.Contains(in.Key, c) {
			col = c
			break
		}
	}
	if col < 0 {
		return nil, unsupported("EMIT ON WINDOW CLOSE needs a watermark on a column of the view's key: group by a window column (window_start of TUMBLE or HOP) of a source or table declared WITH a WATERMARK")
	}
	if in.Dist.Kind != DistHash && in.Dist.Kind != DistSingle {
		if len(in.Key) == 0 {
			in = exchange(in, Dist{Kind: DistSingle})
		} else {
			in = exchange(in, Dist{Kind: DistHash, Keys: in.Key})
		}
	}
	return &Node{Op: OpWindowClose, Inputs: []*Node{in}, Schema: in.Schema, Key: in.Key, Dist: in.Dist,
		CloseCol: col, InputKey: in.Key}, nil
}
