package exec

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// harness is a real storage engine plus the epoch bookkeeping of a test.
type harness struct {
	t      testing.TB
	ctx    context.Context
	engine *storage.Engine
	nextID storage.TableID
	epoch  uint64
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	ctx := context.Background()
	db, err := metastore.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e, err := storage.Open(ctx, storage.Options{Store: objstore.NewMem(), Meta: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return &harness{t: t, ctx: ctx, engine: e, nextID: 100, epoch: 1 << 16}
}

// table registers and opens a state table.
func (h *harness) table(s state.Schema) *state.Table {
	h.t.Helper()
	h.nextID++
	if err := h.engine.RegisterTables(h.ctx, h.nextID); err != nil {
		h.t.Fatal(err)
	}
	return state.New(h.nextID, s, h.engine, h.epoch)
}

// tables opens a table for each non-nil schema.
func (h *harness) tables(ss []*state.Schema) []*state.Table {
	out := make([]*state.Table, len(ss))
	for i, s := range ss {
		if s != nil {
			out[i] = h.table(*s)
		}
	}
	return out
}

// barrier returns the next barrier and advances the harness epoch.
func (h *harness) barrier() *stream.Barrier {
	b := &stream.Barrier{Prev: h.epoch, Curr: h.epoch + 1}
	h.epoch++
	return b
}

// commit makes epoch visible in the engine (after every executor passed it).
func (h *harness) commit(epoch uint64) {
	h.t.Helper()
	if err := h.engine.Commit(h.ctx, epoch); err != nil {
		h.t.Fatal(err)
	}
}

// source is a scripted input executor fed through a channel (so it also
// works behind the multi-input executors' pump goroutines).
type source struct {
	schema []types.Type
	ch     chan stream.Message
	name   string
}

func newSource(name string, schema ...types.Type) *source {
	return &source{schema: schema, ch: make(chan stream.Message, 1<<16), name: name}
}

func (s *source) Schema() []types.Type { return s.schema }
func (s *source) Identity() string     { return "Source(" + s.name + ")" }
func (s *source) Next(ctx context.Context) (stream.Message, error) {
	select {
	case m, ok := <-s.ch:
		if !ok {
			return stream.Message{}, stream.ErrStopped
		}
		return m, nil
	case <-ctx.Done():
		return stream.Message{}, ctx.Err()
	}
}

func (s *source) push(c *types.Chunk)           { s.ch <- stream.Message{Chunk: c} }
func (s *source) pushBarrier(b *stream.Barrier) { s.ch <- stream.Message{Barrier: b} }

// chunk builds a chunk from (op, row) pairs.
func chunk(items ...any) *types.Chunk {
	c := &types.Chunk{}
	for i := 0; i < len(items); i += 2 {
		c.Append(items[i].(types.Op), items[i+1].(types.Row))
	}
	return c
}

func row(vals ...any) types.Row {
	r := make(types.Row, len(vals))
	for i, v := range vals {
		switch v := v.(type) {
		case nil:
			r[i] = types.NullDatum
		case int:
			r[i] = types.DInt64(int64(v))
		case int32:
			r[i] = types.DInt32(v)
		case string:
			r[i] = types.DVarchar(v)
		case bool:
			r[i] = types.DBool(v)
		case types.Datum:
			r[i] = v
		default:
			panic(fmt.Sprintf("row: unsupported %T", v))
		}
	}
	return r
}

// view is the multiset of rows an executor's output describes. Applying
// a delete of a row that is not there fails the test: outputs must be
// consistent streams.
type view struct {
	rows map[string]int
}

func newView() *view { return &view{rows: map[string]int{}} }

func (v *view) apply(c *types.Chunk) error {
	for i, r := range c.Rows {
		k := r.String()
		if c.Ops[i].IsInsert() {
			v.rows[k]++
			continue
		}
		if v.rows[k] == 0 {
			return fmt.Errorf("output deletes %s %s which is not in the output", c.Ops[i], k)
		}
		v.rows[k]--
		if v.rows[k] == 0 {
			delete(v.rows, k)
		}
		if c.Ops[i] == types.OpUpdateDelete && (i+1 >= len(c.Rows) || c.Ops[i+1] != types.OpUpdateInsert) {
			return fmt.Errorf("U- of %s not followed by U+", k)
		}
	}
	return nil
}

func (v *view) sorted() []string {
	var out []string
	for k, n := range v.rows {
		for i := 0; i < n; i++ {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func rowsSorted(rows []types.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.String()
	}
	sort.Strings(out)
	return out
}

func diffRows(got, want []string) string {
	return fmt.Sprintf("got %d rows:\n  %s\nwant %d rows:\n  %s", len(got), strings.Join(got, "\n  "), len(want), strings.Join(want, "\n  "))
}

// drain pulls from e until it returns a barrier, applying chunks to v
// and returning every chunk seen.
func drain(t testing.TB, ctx context.Context, e stream.Executor, v *view) ([]*types.Chunk, *stream.Barrier) {
	t.Helper()
	var chunks []*types.Chunk
	for {
		m, err := e.Next(ctx)
		if err != nil {
			t.Fatalf("%s: %v", e.Identity(), err)
		}
		if m.Barrier != nil {
			return chunks, m.Barrier
		}
		chunks = append(chunks, m.Chunk)
		if v != nil {
			if err := v.apply(m.Chunk); err != nil {
				t.Fatalf("%s: %v", e.Identity(), err)
			}
		}
	}
}

// changes renders chunks as "op row" lines.
func changes(chunks []*types.Chunk) []string {
	var out []string
	for _, c := range chunks {
		for i, r := range c.Rows {
			out = append(out, c.Ops[i].String()+" "+r.String())
		}
	}
	return out
}
