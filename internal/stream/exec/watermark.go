package exec

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// WatermarkGen generates the watermarks of a source split or a table with
// WATERMARK FOR col AS expr, like RisingWave's WatermarkFilter (but row by
// row, see Filter): the watermark is the largest expr seen so far (over
// the rows kept), and a row whose col is already below the watermark is
// late: it is dropped
// (every op, both halves of an update alike) and counted. Since late rows
// never enter the stream, downstream state cleaned by a watermark is
// never touched again. A row whose col is NULL is never late and moves
// nothing.
//
// The generator's watermark is persisted by its owner (with the split
// positions, see Source and TableIngest), so that after a recovery the
// rows it dropped are dropped again and the downstream state it let
// clean stays clean.
type WatermarkGen struct {
	name string
	col  int
	expr expr.Expr
	cur  types.Datum
	have bool
	late *atomic.Int64
	log  *slog.Logger
	// lastLog rate-limits the late-row log line.
	lastLog time.Time
	ec      *expr.EvalContext
}

// lateCounters counts late rows per source or table name (LateRows).
var lateCounters sync.Map // string -> *atomic.Int64

// LateRows returns how many late rows the watermark generators of name
// (a source or a table, as named in its job) have dropped since the
// process started.
func LateRows(name string) int64 {
	if c, ok := lateCounters.Load(name); ok {
		return c.(*atomic.Int64).Load()
	}
	return 0
}

// NewWatermarkGen returns a generator for column col with bound expression
// e (over the relation's physical row). log may be nil.
func NewWatermarkGen(name string, col int, e expr.Expr, log *slog.Logger) *WatermarkGen {
	c, _ := lateCounters.LoadOrStore(name, new(atomic.Int64))
	return &WatermarkGen{name: name, col: col, expr: e, late: c.(*atomic.Int64), log: log,
		ec: &expr.EvalContext{Ctx: context.Background(), Location: time.UTC, StatementTime: time.Now()}}
}

// Col is the watermark column.
func (g *WatermarkGen) Col() int { return g.col }

// Current returns the watermark, if there is one yet.
func (g *WatermarkGen) Current() (types.Datum, bool) { return g.cur, g.have }

// Restore sets the watermark recovered from the owner's state.
func (g *WatermarkGen) Restore(d types.Datum) {
	if !g.have || types.Compare(d, g.cur) > 0 {
		g.cur, g.have = d, true
	}
}

// Late reports whether row is late: its watermark column is below the
// current watermark.
func (g *WatermarkGen) Late(row types.Row) bool {
	if !g.have {
		return false
	}
	t := row[g.col]
	return !t.IsNull() && types.Compare(t, g.cur) < 0
}

// Observe advances the watermark over a row that was kept. It reports
// whether the watermark moved; a row whose expression fails (overflow)
// moves nothing.
func (g *WatermarkGen) Observe(row types.Row) (bool, error) {
	if row[g.col].IsNull() {
		return false, nil
	}
	w, err := g.expr.Eval(g.ec, row)
	if err != nil {
		// As in views (evalerr.go), an expression error makes the value
		// NULL: the row moves nothing, rather than failing the source. It
		// is counted against the table or source and logged.
		ExprErrorCount.Add(1)
		recordJobError(context.Background(), g.name, g.log, false, "watermark of "+g.name, err, "expression", g.expr.String())
		return false, nil
	}
	if w.IsNull() || (g.have && types.Compare(w, g.cur) <= 0) {
		return false, nil
	}
	g.cur, g.have = w, true
	return true, nil
}

// Dropped counts n late rows, logging at most one line per ten seconds.
func (g *WatermarkGen) Dropped(n int) {
	if n == 0 {
		return
	}
	total := g.late.Add(int64(n))
	if g.log != nil && time.Since(g.lastLog) >= 10*time.Second {
		g.lastLog = time.Now()
		g.log.Warn("dropped late rows below the watermark", "source", g.name, "rows", n, "total", total, "watermark", g.cur.String())
	}
}

// Filter drops c's late rows (an update pair with a late half entirely),
// advancing the watermark row by row over the rows kept, and returns the
// kept rows and the watermark message to emit after them, if it moved.
// Each row is judged against every row before it, not against the
// watermark at the start of its chunk (as RisingWave's WatermarkFilter
// does): which rows are late then does not depend on how the rows were
// cut into chunks (pacing, recovery), so a source drops the same rows
// after a recovery as before it.
func (g *WatermarkGen) Filter(c *types.Chunk) (*types.Chunk, *stream.Watermark, error) {
	out := c
	dropped := 0
	moved := false
	for i := 0; i < len(c.Rows); i++ {
		pair := c.Ops[i] == types.OpUpdateDelete && i+1 < len(c.Rows) && c.Ops[i+1] == types.OpUpdateInsert
		n := 1
		if pair {
			n = 2
		}
		late := g.Late(c.Rows[i]) || (pair && g.Late(c.Rows[i+1]))
		switch {
		case late && out == c:
			// First late row: copy what was kept so far.
			out = &types.Chunk{Ops: append([]types.Op(nil), c.Ops[:i]...), Rows: append([]types.Row(nil), c.Rows[:i]...)}
		case !late && out != c:
			for j := i; j < i+n; j++ {
				out.Append(c.Ops[j], c.Rows[j])
			}
		}
		if late {
			dropped += n
		} else {
			for j := i; j < i+n; j++ {
				m, err := g.Observe(c.Rows[j])
				if err != nil {
					return nil, nil, err
				}
				moved = moved || m
			}
		}
		i += n - 1
	}
	g.Dropped(dropped)
	var wm *stream.Watermark
	if moved {
		wm = &stream.Watermark{Col: g.col, Val: g.cur}
	}
	return out, wm, nil
}

// NoWatermarks wraps an executor's input for operators that do not handle
// watermarks: they are dropped (the operator's output carries none).
func NoWatermarks(in stream.Executor) stream.Executor { return &noWatermarks{in} }

type noWatermarks struct{ stream.Executor }

func (n *noWatermarks) Next(ctx context.Context) (stream.Message, error) {
	for {
		msg, err := n.Executor.Next(ctx)
		if err != nil || msg.Watermark == nil {
			return msg, err
		}
	}
}

// deriveWatermark evaluates e, monotone in input column col
// (expr.MonotoneIn), over a row holding only the watermark v, giving a
// watermark of e's column. ok is false when e gives NULL or fails (no
// watermark then).
func deriveWatermark(ec *expr.EvalContext, e expr.Expr, width, col int, v types.Datum) (types.Datum, bool) {
	row := make(types.Row, width)
	for i := range row {
		row[i] = types.NullDatum
	}
	row[col] = v
	d, err := e.Eval(ec, row)
	if err != nil || d.IsNull() {
		return types.NullDatum, false
	}
	return d, true
}

// scanOwned calls fn with every row of t in the vnodes owns reports
// (every vnode when owns is nil), vnode by vnode in key order, checking
// ctx as it goes; fn returning false skips the rest of the row's vnode.
func scanOwned(ctx context.Context, t *state.Table, owns func(uint16) bool, fn func(types.Row) bool) error {
	var tk ticker
	for v := 0; v < types.VnodeCount; v++ {
		if owns != nil && !owns(uint16(v)) {
			continue
		}
		it, err := t.IterVnode(ctx, uint16(v))
		if err != nil {
			return err
		}
		for it.Next() {
			if err = tk.tick(ctx); err != nil {
				break
			}
			if !fn(it.Row()) {
				break
			}
		}
		if err == nil {
			err = it.Err()
		}
		it.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
