package exec

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/types"
)

// I6 at executor level: every stateful executor, fed a change that
// contradicts its state (a delete of a row it never saw), fails in strict
// mode with an error naming the state table, the key and the row, and in
// non-strict mode counts and logs it and carries on as if the change had
// not come: its output stays a consistent stream (view.apply fails on a
// delete of a row not emitted) and, after more valid changes, equals the
// output of the same executor that never saw the bad change.

// ghostCase builds one executor over its scripted inputs.
type ghostCase struct {
	name  string
	build func(t *testing.T, h *harness) (ex stream.Executor, strict func(bool, *slog.Logger), inputs []*source)
	// before, ghost and after are (input, chunk) steps: valid history,
	// the inconsistent change, valid changes after it.
	before, ghost, after []ghostStep
	// wantErr are substrings of the strict error (key and row);
	// orWantErr, when set, is another set the error may name instead (a
	// join reads its two inputs concurrently, so either side's ghost may
	// be met first).
	wantErr, orWantErr []string
	// sameAsClean: in non-strict mode the output equals a run without
	// the ghost (false when the executor cannot tell the ghost from a
	// real delete for some of its state, e.g. sum).
	sameAsClean bool
}

type ghostStep struct {
	input int
	c     *types.Chunk
}

func joinCase(name string, kind JoinType) ghostCase {
	return ghostCase{
		name: name,
		build: func(t *testing.T, h *harness) (stream.Executor, func(bool, *slog.Logger), []*source) {
			j, l, r := newTestJoin(t, h, kind, nil)
			return j, j.SetStrict, []*source{l, r}
		},
		before: []ghostStep{
			{0, chunk(types.OpInsert, row(1, 10, 1), types.OpInsert, row(2, 20, 2))},
			{1, chunk(types.OpInsert, row(5, 10, 5))},
		},
		ghost:       []ghostStep{{1, chunk(types.OpDelete, row(9, 10, 9))}, {0, chunk(types.OpDelete, row(8, 30, 8))}},
		after:       []ghostStep{{1, chunk(types.OpInsert, row(6, 20, 6))}, {0, chunk(types.OpDelete, row(1, 10, 1))}},
		wantErr:     []string{"key (10, 9)", "row (9, 10, 9)"},
		orWantErr:   []string{"key (30, 8)", "row (8, 30, 8)"},
		sameAsClean: true,
	}
}

func ghostCases(t *testing.T) []ghostCase {
	aggCase := func(name string, groupKey []int, calls []AggCall, ghost *types.Chunk, wantErr []string, same bool) ghostCase {
		return ghostCase{
			name: name,
			build: func(t *testing.T, h *harness) (stream.Executor, func(bool, *slog.Logger), []*source) {
				src := newSource("t", aggInTypes...)
				a := newTestAgg(t, h, src, groupKey, calls)
				return a, a.SetStrict, []*source{src}
			},
			before:      []ghostStep{{0, chunk(types.OpInsert, aggRow(1, 1, 5, "a", true), types.OpInsert, aggRow(2, 1, 6, "b", false))}},
			ghost:       []ghostStep{{0, ghost}},
			after:       []ghostStep{{0, chunk(types.OpInsert, aggRow(3, 2, 7, "c", true), types.OpDelete, aggRow(1, 1, 5, "a", true))}},
			wantErr:     wantErr,
			sameAsClean: same,
		}
	}
	count := []AggCall{{Agg: mustAgg(t, "count", false), Filter: NoColumn}, {Agg: mustAgg(t, "sum", false, types.Int64), Args: []int{2}, Filter: NoColumn}}
	minmax := []AggCall{
		{Agg: mustAgg(t, "min", false, types.Int64), Args: []int{2}, Filter: NoColumn},
		{Agg: mustAgg(t, "max", false, types.Text), Args: []int{3}, Filter: NoColumn},
	}
	distinctCount := []AggCall{{Agg: mustAgg(t, "count", true, types.Int64), Args: []int{2}, Filter: NoColumn}}
	return []ghostCase{
		aggCase("hash agg, delete in a group never seen", []int{1}, count,
			chunk(types.OpDelete, aggRow(9, 7, 1, "x", true)), []string{"key (7)", "row (9, 7, 1"}, true),
		aggCase("simple agg, delete beyond the row count", nil, count,
			chunk(types.OpDelete, aggRow(9, 7, 1, "x", true), types.OpDelete, aggRow(8, 7, 1, "x", true), types.OpDelete, aggRow(7, 7, 1, "x", true)),
			[]string{"key ()", "row (7, 7, 1"}, false),
		aggCase("hash agg min/max, retract an input never added", []int{1}, minmax,
			chunk(types.OpDelete, aggRow(9, 1, 1, "x", true)), []string{"min: retracting an input that was never added", "row (9, 1, 1"}, false),
		aggCase("hash agg count(DISTINCT), retract a value never added", []int{1}, distinctCount,
			chunk(types.OpDelete, aggRow(9, 1, 42, "x", true)), []string{"count(DISTINCT): retracting a value that was never added", "row (9, 1, 42"}, false),
		{
			name: "distinct",
			build: func(t *testing.T, h *harness) (stream.Executor, func(bool, *slog.Logger), []*source) {
				src := newSource("t", joinSideTypes...)
				d, err := NewDistinct(src, []int{1}, h.table(DistinctStateSchema("distinct", joinSideTypes, []int{1})))
				if err != nil {
					t.Fatal(err)
				}
				return d, d.SetStrict, []*source{src}
			},
			before:      []ghostStep{{0, chunk(types.OpInsert, row(1, 10, 0), types.OpInsert, row(2, 10, 0))}},
			ghost:       []ghostStep{{0, chunk(types.OpDelete, row(3, 20, 0))}},
			after:       []ghostStep{{0, chunk(types.OpDelete, row(1, 10, 0), types.OpInsert, row(4, 20, 0))}},
			wantErr:     []string{"key (20)", "row (3, 20, 0)"},
			sameAsClean: true,
		},
		{
			name: "top-n",
			build: func(t *testing.T, h *harness) (stream.Executor, func(bool, *slog.Logger), []*source) {
				src := newSource("t", topnTypes...)
				order := []ColumnOrder{{Col: 2}}
				tn, err := NewTopN(src, order, []int{0}, 2, 0, h.table(TopNStateSchema("topn", topnTypes, nil, order, []int{0})))
				if err != nil {
					t.Fatal(err)
				}
				return tn, tn.SetStrict, []*source{src}
			},
			before:      []ghostStep{{0, chunk(types.OpInsert, row(1, 1, 5, 0), types.OpInsert, row(2, 1, 6, 0), types.OpInsert, row(3, 1, 7, 0))}},
			ghost:       []ghostStep{{0, chunk(types.OpDelete, row(9, 1, 1, 0))}},
			after:       []ghostStep{{0, chunk(types.OpDelete, row(1, 1, 5, 0))}},
			wantErr:     []string{"(1, 9)", "row (9, 1, 1, 0)"},
			sameAsClean: true,
		},
		joinCase("inner join, both sides", JoinInner),
		joinCase("left outer join, both sides", JoinLeftOuter),
		joinCase("full outer join, both sides", JoinFullOuter),
		joinCase("left semi join, both sides", JoinLeftSemi),
		joinCase("left anti join, both sides", JoinLeftAnti),
	}
}

// runGhostSteps plays steps through ex; it returns the first error.
func runGhostSteps(ctx context.Context, t *testing.T, h *harness, ex stream.Executor, inputs []*source, v *view, steps []ghostStep) error {
	t.Helper()
	for _, s := range steps {
		inputs[s.input].push(s.c)
	}
	b := h.barrier()
	for _, in := range inputs {
		in.pushBarrier(b)
	}
	for {
		m, err := ex.Next(ctx)
		if err != nil {
			return err
		}
		if m.Barrier != nil {
			h.commit(b.Prev)
			return nil
		}
		if err := v.apply(m.Chunk); err != nil {
			t.Fatalf("%s: inconsistent output: %v", ex.Identity(), err)
		}
	}
}

func TestInconsistentInputStrict(t *testing.T) {
	for _, c := range ghostCases(t) {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel() // stops the join's input pumps
			h := newHarness(t)
			ex, _, inputs := c.build(t, h) // strict is the default
			v := newView()
			if err := runGhostSteps(ctx, t, h, ex, inputs, v, c.before); err != nil {
				t.Fatal(err)
			}
			err := runGhostSteps(ctx, t, h, ex, inputs, v, c.ghost)
			var se *sqlerr.Error
			if !errors.As(err, &se) || se.Code != sqlerr.DataCorrupted {
				t.Fatalf("strict: got %v; want a %s error", err, sqlerr.DataCorrupted)
			}
			names := func(want []string) bool {
				for _, w := range want {
					if !strings.Contains(err.Error(), w) {
						return false
					}
				}
				return true
			}
			if !names([]string{"inconsistent stream at", "(state table "}) ||
				!names(c.wantErr) && (c.orWantErr == nil || !names(c.orWantErr)) {
				t.Errorf("strict error %q does not name %q (or %q)", err, c.wantErr, c.orWantErr)
			}
		})
	}
}

func TestInconsistentInputNonStrict(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range ghostCases(t) {
		t.Run(c.name, func(t *testing.T) {
			run := func(withGhost bool) []string {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel() // stops the join's input pumps
				h := newHarness(t)
				ex, setStrict, inputs := c.build(t, h)
				setStrict(false, quiet)
				v := newView()
				steps := [][]ghostStep{c.before, c.after}
				if withGhost {
					steps = [][]ghostStep{c.before, c.ghost, c.after}
				}
				for _, s := range steps {
					if err := runGhostSteps(ctx, t, h, ex, inputs, v, s); err != nil {
						t.Fatalf("non-strict: %v", err)
					}
				}
				return v.sorted()
			}
			before := tolerated()
			got := run(true)
			if tolerated() == before {
				t.Error("the inconsistency was not counted")
			}
			if want := run(false); c.sameAsClean && !slices.Equal(got, want) {
				t.Errorf("non-strict output differs from a run without the bad change: %s", diffRows(got, want))
			}
		})
	}
}

// tolerated sums the inconsistencies counted outside any actor.
func tolerated() int64 {
	var n int64
	for _, e := range JobErrorStats() {
		n += e.Inconsistencies
	}
	return n
}
