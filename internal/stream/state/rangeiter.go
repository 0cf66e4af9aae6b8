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
	return t.iterRange(ctx, lower, upper)
}

// IterBefore iterates, in descending key order, the rows whose primary key
// starts with prefix and whose full key is < the key of before.
func (t *Table) IterBefore(ctx context.Context, prefix types.Row, before types.Row) (*ReverseRowIter, error) {
	lower, upper, err := t.prefixBounds(prefix)
	if err != nil {
		return nil, err
	}
	end := t.encodeKey(nil, before)
	if upper == nil || bytes.Compare(end, upper) < 0 {
		upper = end
	}
	it, err := t.store.Iter(ctx, t.id, lower, upper, t.epoch, storage.ReadOptions{Reverse: true})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.schema.Name, err)
	}
	var mem []memEntry
	t.mem.DescendLessOrEqual(memEntry{key: string(upper)}, func(e memEntry) bool {
		if e.key >= string(upper) {
			return true
		}
		if e.key < string(lower) {
			return false
		}
		mem = append(mem, e)
		return true
	})
	return &ReverseRowIter{t: t, store: it, mem: mem}, nil
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

// ReverseRowIter is RowIter in descending key order: the memtable's
// entries (newest writes) shadow the engine's.
type ReverseRowIter struct {
	t                        *Table
	store                    storage.Iterator
	mem                      []memEntry // descending
	row                      types.Row
	err                      error
	sValid, advance, started bool
}

// Next advances; it returns false at the end or on error (see Err).
func (it *ReverseRowIter) Next() bool {
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
		if !it.sValid && len(it.mem) == 0 {
			return false
		}
		useStore := it.sValid
		if it.sValid && len(it.mem) > 0 {
			c := bytes.Compare(it.store.Key(), []byte(it.mem[0].key))
			useStore = c > 0
			if c == 0 {
				it.advance = true
			}
		}
		var val []byte
		if useStore {
			val = it.store.Value()
			it.advance = true
		} else {
			e := it.mem[0]
			it.mem = it.mem[1:]
			if e.delete {
				continue
			}
			val = e.value
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
func (it *ReverseRowIter) Row() types.Row { return it.row }

// Err returns the iteration error, if any.
func (it *ReverseRowIter) Err() error { return it.err }

// Close releases the iterator.
func (it *ReverseRowIter) Close() error { return it.store.Close() }
