package state

import (
	"bytes"
	"context"
	"fmt"

	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/types"
)

// Range scans within a key prefix, forward from a key or backward from
// one. The over-window executor uses them to load a bounded range of rows
// around a change in a large partition instead of the whole partition.

// IterFrom iterates, in key order, the rows whose primary key starts with
// prefix and whose full key is >= the key of from (a full row, as for
// Insert).
func (t *Table) IterFrom(ctx context.Context, prefix types.Row, from types.Row) (*RowIter, error) {
	lower, upper, err := t.prefixBounds(prefix)
	if err != nil {
		return nil, err
	}
	start := t.encodeKey(nil, from)
	if bytes.Compare(start, lower) > 0 {
		lower = start
	}
	return t.rangeIter(ctx, lower, upper, false)
}

// IterBefore iterates, in descending key order, the rows whose primary key
// starts with prefix and whose full key is < the key of before.
func (t *Table) IterBefore(ctx context.Context, prefix types.Row, before types.Row) (*RowIter, error) {
	lower, upper, err := t.prefixBounds(prefix)
	if err != nil {
		return nil, err
	}
	end := t.encodeKey(nil, before)
	if upper == nil || bytes.Compare(end, upper) < 0 {
		upper = end
	}
	return t.rangeIter(ctx, lower, upper, true)
}

func (t *Table) rangeIter(ctx context.Context, lower, upper []byte, reverse bool) (*RowIter, error) {
	it, err := t.store.Iter(ctx, t.id, lower, upper, t.epoch, storage.ReadOptions{Reverse: reverse})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.schema.Name, err)
	}
	return &RowIter{t: t, store: it, mem: memCursor{t: t, lower: string(lower), upper: string(upper), unbounded: upper == nil, reverse: reverse}}, nil
}

// prefixBounds returns the key range of a PK prefix (the whole table for
// an empty prefix).
func (t *Table) prefixBounds(prefix types.Row) (lower, upper []byte, err error) {
	if len(prefix) == 0 {
		return []byte{}, nil, nil
	}
	vnode, ok := t.pkRowVnode(prefix)
	if !ok {
		return nil, nil, fmt.Errorf("%s: prefix scan needs the distribution key in the prefix", t.schema.Name)
	}
	lower = t.encodePK(nil, vnode, prefix)
	return lower, prefixEnd(lower), nil
}

// memCursor walks the memtable's entries in [lower, upper) in batches, so
// that a scan stopped early does not pay for the rest of the range (Iter
// collects the whole range up front).
type memCursor struct {
	t            *Table
	lower, upper string
	unbounded    bool // no upper bound
	reverse      bool
	buf          []memEntry
	last         string
	started      bool
	done         bool
}

const memCursorBatch = 64

func (c *memCursor) fill() {
	if len(c.buf) > 0 || c.done {
		return
	}
	c.buf = c.buf[:0]
	c.t.settle()
	n := 0
	if !c.reverse {
		visit := func(e memEntry) bool {
			if c.started && e.key <= c.last {
				return true
			}
			if !c.unbounded && e.key >= c.upper {
				return false
			}
			c.buf = append(c.buf, e)
			n++
			return n < memCursorBatch
		}
		from := c.lower
		if c.started {
			from = c.last
		}
		c.t.mem.AscendGreaterOrEqual(memEntry{key: from}, visit)
	} else {
		visit := func(e memEntry) bool {
			if c.started && e.key >= c.last {
				return true
			}
			if !c.started && !c.unbounded && e.key >= c.upper {
				return true
			}
			if e.key < c.lower {
				return false
			}
			c.buf = append(c.buf, e)
			n++
			return n < memCursorBatch
		}
		switch {
		case c.started:
			c.t.mem.DescendLessOrEqual(memEntry{key: c.last}, visit)
		case c.unbounded:
			c.t.mem.Descend(visit)
		default:
			c.t.mem.DescendLessOrEqual(memEntry{key: c.upper}, visit)
		}
	}
	if n < memCursorBatch {
		c.done = true
	}
	if n > 0 {
		c.started = true
		c.last = c.buf[n-1].key
	}
}

func (c *memCursor) peek() (memEntry, bool) {
	c.fill()
	if len(c.buf) == 0 {
		return memEntry{}, false
	}
	return c.buf[0], true
}

func (c *memCursor) pop() { c.buf = c.buf[1:] }

// RowIter merges the engine's rows in a key range, forward or backward,
// with the memtable's; the memtable's entries (newest writes) shadow the
// engine's.
type RowIter struct {
	t                        *Table
	store                    storage.Iterator
	mem                      memCursor
	row                      types.Row
	err                      error
	sValid, advance, started bool
}

// Next advances; it returns false at the end or on error (see Err).
func (it *RowIter) Next() bool {
	if it.err != nil {
		return false
	}
	for {
		if !it.started || it.advance {
			it.started, it.advance = true, false
			it.sValid = it.store.Next()
			if !it.sValid {
				if err := it.store.Err(); err != nil {
					it.err = fmt.Errorf("%s: %w", it.t.schema.Name, err)
					return false
				}
			}
		}
		me, mOK := it.mem.peek()
		if !it.sValid && !mOK {
			return false
		}
		useStore := it.sValid
		if it.sValid && mOK {
			c := bytes.Compare(it.store.Key(), []byte(me.key))
			if it.mem.reverse {
				c = -c
			}
			useStore = c < 0
			if c == 0 {
				// the memtable's newer write shadows the stored row
				it.advance = true
			}
		}
		var val []byte
		if useStore {
			val = it.store.Value()
			it.advance = true
		} else {
			it.mem.pop()
			if me.delete {
				continue
			}
			val = me.value
		}
		row, err := types.DecodeValueRow(val, it.t.schema.Types, nil)
		if err != nil {
			it.err = fmt.Errorf("%s: corrupt row: %w", it.t.schema.Name, err)
			return false
		}
		it.row = row
		return true
	}
}

// Row returns the current row; it stays valid after Next.
func (it *RowIter) Row() types.Row { return it.row }

// Err returns the iteration error, if any.
func (it *RowIter) Err() error { return it.err }

// Close releases the iterator.
func (it *RowIter) Close() error { return it.store.Close() }

// PrefixBounds returns the storage key range [lower, upper) of the rows
// whose primary key starts with prefix (values in key order); ok is false
// when the prefix does not cover the distribution key (the rows are then
// spread over every vnode) or is empty.
func (t *Table) PrefixBounds(prefix types.Row) (lower, upper []byte, ok bool) {
	if len(prefix) == 0 || len(prefix) > len(t.schema.PK) {
		return nil, nil, false
	}
	lower, upper, err := t.prefixBounds(prefix)
	return lower, upper, err == nil
}

// VnodePrefixBounds is PrefixBounds within one vnode, for a prefix that
// does not determine the vnode: a lookup then seeks once per vnode.
func (t *Table) VnodePrefixBounds(vnode uint16, prefix types.Row) (lower, upper []byte, ok bool) {
	if len(prefix) == 0 || len(prefix) > len(t.schema.PK) {
		return nil, nil, false
	}
	lower = t.encodePK(nil, vnode, prefix)
	return lower, prefixEnd(lower), true
}

// IterPrefixRange iterates, in key order (descending when reverse), the
// rows whose leading primary-key columns lie between the prefixes lo and
// hi, both inclusive; an empty bound is open. Each bound must cover the
// distribution key (or the table has none). The dynamic filter scans the
// rows between an old and a new bound with it.
func (t *Table) IterPrefixRange(ctx context.Context, lo, hi types.Row, reverse bool) (*RowIter, error) {
	lower, upper := []byte{}, []byte(nil)
	if len(lo) > 0 {
		l, _, err := t.prefixBounds(lo)
		if err != nil {
			return nil, err
		}
		lower = l
	}
	if len(hi) > 0 {
		_, u, err := t.prefixBounds(hi)
		if err != nil {
			return nil, err
		}
		upper = u
	}
	return t.rangeIter(ctx, lower, upper, reverse)
}

// PrefixVnode returns the vnode of the rows whose key starts with prefix,
// when the prefix covers the distribution key.
func (t *Table) PrefixVnode(prefix types.Row) (uint16, bool) {
	if len(prefix) == 0 && len(t.schema.DistKey) > 0 {
		return 0, false
	}
	return t.pkRowVnode(prefix)
}

// VnodeRangeBounds returns the storage key range, within one vnode, of
// the rows whose leading key columns equal eq and whose next key column
// lies between lo and hi, both inclusive (nil: open). The range is in
// storage order: a descending column's bounds are swapped. An index scan
// reads it (BETWEEN, <, > on the column after an equality prefix); the
// rows it holds are a superset of the filter's, which still decides.
func (t *Table) VnodeRangeBounds(vnode uint16, eq types.Row, lo, hi *types.Datum) (lower, upper []byte) {
	if len(eq) < len(t.schema.PK) && t.schema.Desc[len(eq)] {
		lo, hi = hi, lo
	}
	key := make(types.Row, len(eq), len(eq)+1)
	copy(key, eq)
	lower = t.encodePK(nil, vnode, key)
	if lo != nil {
		lower = t.encodePK(nil, vnode, append(key, *lo))
	}
	if hi != nil {
		upper = prefixEnd(t.encodePK(nil, vnode, append(key, *hi)))
	} else {
		upper = prefixEnd(t.encodePK(nil, vnode, key))
	}
	return lower, upper
}
