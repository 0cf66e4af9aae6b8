package nexmark

import (
	"fmt"
	"slices"

	"github.com/runneldb/runnel/internal/types"
)

// This file is the hot path: turning events into rows of one table.
//
// A table's rows are addressed by per-table ordinal k (the k-th bid, the
// k-th person...; see EventID). A split of a source with numSplits splits
// produces the ordinals split, split+numSplits, split+2·numSplits, ...; its
// whole state is the next ordinal it will produce (Reader.Position), so a
// checkpoint stores one integer per split and recovery resumes exactly.
//
// Strings in generated rows are either shared constants (names, cities,
// channels, URLs) or substrings of the generator's pad (item names,
// descriptions, extra), so a bid row costs no allocation beyond its datums.

// FillRows writes rows of table t for the ordinals next, next+step, ...
// into rows until rows is full or the stream ends (Config.MaxEvents). Each
// rows[i] must have length >= len(t.Columns()); the caller owns the rows
// and may reuse them once every reader of the previous contents is done.
// It returns how many rows it wrote and the ordinal to continue from.
func (g *Generator) FillRows(t TableType, next, step int64, rows []types.Row) (int, int64) {
	if step <= 0 {
		step = 1
	}
	lim := g.limit[t]
	i := 0
	switch t {
	case TypeBid:
		for ; i < len(rows) && (lim < 0 || next < lim); i++ {
			g.bidRow(EventID(TypeBid, next), rows[i])
			next += step
		}
	case TypeAuction:
		for ; i < len(rows) && (lim < 0 || next < lim); i++ {
			g.auctionRow(EventID(TypeAuction, next), rows[i])
			next += step
		}
	default:
		for ; i < len(rows) && (lim < 0 || next < lim); i++ {
			g.personRow(EventID(TypePerson, next), rows[i])
			next += step
		}
	}
	return i, next
}

// AppendRows appends up to max rows of table t (ordinals next, next+step,
// ...) to dst, allocating fresh rows (all datums of one call share one
// backing array, so rows handed downstream are never overwritten). It
// returns the extended slice and the ordinal to continue from.
func (g *Generator) AppendRows(dst []types.Row, t TableType, next, step int64, max int) ([]types.Row, int64) {
	if lim := g.limit[t]; lim >= 0 {
		if step <= 0 {
			step = 1
		}
		if next >= lim {
			return dst, next
		}
		if left := (lim - next + step - 1) / step; left < int64(max) {
			max = int(left)
		}
	}
	if max <= 0 {
		return dst, next
	}
	ncols := len(t.Columns())
	start := len(dst)
	dst = slices.Grow(dst, max)
	// One slab for every datum of the call: measured against 8 KiB and
	// 32 KiB slabs it was as fast or faster (the cost is the GC's, which
	// scales with the bytes, not the number of objects).
	slab := make([]types.Datum, max*ncols)
	for i := range max {
		dst = append(dst, types.Row(slab[i*ncols:(i+1)*ncols:(i+1)*ncols]))
	}
	n, next := g.FillRows(t, next, step, dst[start:])
	return dst[:start+n], next
}

func (g *Generator) bidRow(n int64, row types.Row) {
	b := g.bid(n)
	row[0] = types.DInt64(b.Auction)
	row[1] = types.DInt64(b.Bidder)
	row[2] = types.DInt64(b.Price)
	row[3] = types.DVarchar(b.Channel)
	row[4] = types.DVarchar(b.URL)
	row[5] = types.DTimestamp(b.DateTime)
	row[6] = types.DVarchar(b.Extra)
}

func (g *Generator) auctionRow(n int64, row types.Row) {
	a := g.auction(n)
	row[0] = types.DInt64(a.ID)
	row[1] = types.DVarchar(a.ItemName)
	row[2] = types.DVarchar(a.Description)
	row[3] = types.DInt64(a.InitialBid)
	row[4] = types.DInt64(a.Reserve)
	row[5] = types.DTimestamp(a.DateTime)
	row[6] = types.DTimestamp(a.Expires)
	row[7] = types.DInt64(a.Seller)
	row[8] = types.DInt64(a.Category)
	row[9] = types.DVarchar(a.Extra)
}

func (g *Generator) personRow(n int64, row types.Row) {
	p := g.person(n)
	row[0] = types.DInt64(p.ID)
	row[1] = types.DVarchar(p.Name)
	row[2] = types.DVarchar(p.EmailAddress)
	row[3] = types.DVarchar(p.CreditCard)
	row[4] = types.DVarchar(p.City)
	row[5] = types.DVarchar(p.State)
	row[6] = types.DTimestamp(p.DateTime)
	row[7] = types.DVarchar(p.Extra)
}

// Row returns event n as a row of its own table (allocating).
func (g *Generator) Row(n int64) types.Row {
	t := TypeOf(n)
	row := make(types.Row, len(t.Columns()))
	switch t {
	case TypePerson:
		g.personRow(n, row)
	case TypeAuction:
		g.auctionRow(n, row)
	default:
		g.bidRow(n, row)
	}
	return row
}

// Reader produces the rows of one split of a single-table source, chunk by
// chunk. Its state is Position(); a source executor persists it at each
// checkpoint and passes it back to NewReader on recovery. A Reader is not
// safe for concurrent use (one per split).
type Reader struct {
	g     *Generator
	t     TableType
	next  int64
	step  int64
	split int
}

// StartPosition is the position of a split that has produced nothing yet.
func StartPosition(split int) int64 { return int64(split) }

// NewReader returns a reader of split split (0-based) of numSplits for
// table t, resuming at position (StartPosition(split) for a new split).
func (g *Generator) NewReader(t TableType, split, numSplits int, position int64) (*Reader, error) {
	if numSplits <= 0 || split < 0 || split >= numSplits {
		return nil, fmt.Errorf("nexmark: split %d of %d is out of range", split, numSplits)
	}
	if position < 0 || position%int64(numSplits) != int64(split) {
		return nil, fmt.Errorf("nexmark: position %d does not belong to split %d of %d", position, split, numSplits)
	}
	if t > TypeBid {
		return nil, fmt.Errorf("nexmark: unknown table type %d", t)
	}
	return &Reader{g: g, t: t, next: position, step: int64(numSplits), split: split}, nil
}

// Position is the ordinal of the next row this split will produce.
func (r *Reader) Position() int64 { return r.next }

// Done reports whether the split has produced every row of a bounded
// stream.
func (r *Reader) Done() bool {
	lim := r.g.limit[r.t]
	return lim >= 0 && r.next >= lim
}

// Next appends up to max fresh rows to dst (see AppendRows) and advances.
func (r *Reader) Next(dst []types.Row, max int) []types.Row {
	dst, r.next = r.g.AppendRows(dst, r.t, r.next, r.step, max)
	return dst
}

// NextChunk appends up to max fresh rows to c as inserts (a source is
// append-only) and returns how many it appended.
func (r *Reader) NextChunk(c *types.Chunk, max int) int {
	before := len(c.Rows)
	c.Rows = r.Next(c.Rows, max)
	for range len(c.Rows) - before {
		c.Ops = append(c.Ops, types.OpInsert)
	}
	return len(c.Rows) - before
}

// Fill overwrites rows (see FillRows), advances, and returns the count.
func (r *Reader) Fill(rows []types.Row) int {
	n, next := r.g.FillRows(r.t, r.next, r.step, rows)
	r.next = next
	return n
}

// EventTimeAt returns date_time of the row at position pos of this
// reader's table. Rows of a split come out in non-decreasing date_time, so
// EventTimeAt(Position()) is a lower bound of every date_time the split
// will still produce: a valid watermark.
func (r *Reader) EventTimeAt(pos int64) int64 { return r.g.EventTime(EventID(r.t, pos)) }
