package streamplan

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/connector"
	_ "github.com/runneldb/runnel/internal/connector/datagen" // registers the datagen connector
	_ "github.com/runneldb/runnel/internal/connector/kafka"   // registers the kafka connector
	_ "github.com/runneldb/runnel/internal/connector/nexmark" // registers the nexmark connector
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/exec"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// channelBuffer is the capacity of an exchange channel in messages: enough
// to keep both ends busy, small enough that back-pressure reaches the
// source within a few chunks.
const channelBuffer = 16

// Upstream describes a relation a job reads: the actors that emit its
// changes (in order) and its state table, from which backfill reads the
// existing rows.
type Upstream struct {
	Rel *catalog.Relation
	// Actors emit the relation's changes; each has a BroadcastDispatcher
	// to which the job's scan actors are connected.
	Actors []UpstreamActor
	// State is the relation's state-table schema (rows as the actors emit
	// them).
	State state.Schema
}

// UpstreamActor is one actor of an upstream relation.
type UpstreamActor struct {
	ID stream.ActorID
	// Owns reports whether the actor owns vnode v (its rows in the state
	// table are under v).
	Owns func(v uint16) bool
}

// Env is what instantiating a job needs.
type Env struct {
	Name        string // the job, for actor names and errors
	Store       state.Store
	Actors      *stream.BarrierManager
	Parallelism int
	// Epoch is the epoch being written when the job starts.
	Epoch    uint64
	Location *time.Location
	Log      *slog.Logger
	// Strict fails the job on inconsistent input (I6); otherwise it is
	// logged and tolerated.
	Strict   bool
	Upstream func(id catalog.ObjectID) (*Upstream, error)
	// Backfill: a new job reads its upstreams' existing rows; a rebuilt
	// one (after recovery) already has them in its state.
	Backfill bool
	// OverWindowCachePolicy is over_window_cache_policy: "full" (default)
	// or "recent" (see exec.OverWindowCachePolicy).
	OverWindowCachePolicy string
	// Group is the isolation group (database) of the job's actors.
	Group uint64
	// SinkLog connects a sink job's Sink executors to its worker.
	SinkLog exec.SinkLog
}

// Job is an instantiated streaming job, ready to spawn.
type Job struct {
	Actors []*stream.Actor
	// Connect maps upstream actors to the channels to add to their
	// dispatchers (an AddOutputs mutation for a new job).
	Connect map[stream.ActorID][]stream.Output
	// Outputs are the Materialize actors, in order, with their
	// dispatchers (downstream jobs connect to them) and vnode ownership.
	Outputs    []UpstreamActor
	Dispatcher map[stream.ActorID]*stream.BroadcastDispatcher
	Backfills  []*exec.Backfill
	// Gate is open once every backfill is done (nil for a rebuilt job).
	Gate *exec.BackfillGate
	// SourceBarriers are the barrier channels of the job's source actors
	// (they are spawned as sources: meta injects barriers into them).
	SourceBarriers map[stream.ActorID]chan *stream.Barrier
	Sources        []*exec.Source
}

// StateTableIDs lists every state table of the plan in plan order.
func StateTableIDs(root *Node) []catalog.TableID {
	var out []catalog.TableID
	walk(root, func(n *Node) { out = append(out, n.StateTables...) })
	return out
}

func walk(n *Node, fn func(*Node)) {
	fn(n)
	for _, c := range n.Inputs {
		walk(c, fn)
	}
}

// AssignStateTables computes every operator's state-table schemas and
// gives them ids from next, in plan order (a rebuilt job passes the ids
// it was created with, in the same order).
func AssignStateTables(root *Node, name string, next func() (catalog.TableID, error)) error {
	var err error
	walk(root, func(n *Node) {
		if err != nil {
			return
		}
		var schemas []state.Schema
		schemas, err = stateSchemas(n, name)
		if err != nil {
			return
		}
		n.StateTables = n.StateTables[:0]
		n.stateSchemas = schemas
		for range schemas {
			var id catalog.TableID
			if id, err = next(); err != nil {
				return
			}
			n.StateTables = append(n.StateTables, id)
		}
	})
	return err
}

func aggCalls(n *Node) ([]exec.AggCall, error) {
	calls := make([]exec.AggCall, len(n.Aggs))
	for i, a := range n.Aggs {
		if a.Call.Func == nil {
			return nil, unsupported("aggregate %s cannot be maintained incrementally", a.Call.Name)
		}
		calls[i] = exec.AggCall{Agg: a.Call.Func, Args: a.Args, Filter: a.Filter, OrderBy: columnOrders(a.OrderBy)}
		if a.Filter < 0 {
			calls[i].Filter = exec.NoColumn
		}
	}
	return calls, nil
}

// stateSchemas returns the schemas of n's state tables (none for
// stateless operators).
func stateSchemas(n *Node, job string) ([]state.Schema, error) {
	label := fmt.Sprintf("%s: %s", job, n.Op)
	switch n.Op {
	case OpHashAgg, OpSimpleAgg:
		calls, err := aggCalls(n)
		if err != nil {
			return nil, err
		}
		res, per, err := exec.HashAggStateSchemas(label, n.Inputs[0].Types(), n.GroupKey, calls, n.InputKey)
		if err != nil {
			return nil, err
		}
		out := []state.Schema{res}
		for _, s := range per {
			if s != nil {
				out = append(out, *s)
			}
		}
		return out, nil
	case OpHashJoin:
		lo, ro := joinType(n.JoinKind).OuterSides()
		l, r := n.Inputs[0], n.Inputs[1]
		return []state.Schema{
			exec.HashJoinStateSchema(label+" left", l.Types(), n.LeftKeys, l.Key, lo),
			exec.HashJoinStateSchema(label+" right", r.Types(), n.RightKeys, r.Key, ro),
		}, nil
	case OpTemporalJoin:
		if n.TemporalJoin.AppendOnly {
			return nil, nil
		}
		in := n.Inputs[0]
		return []state.Schema{exec.TemporalJoinMemoSchema(label, in.Types(), temporalLookupTypes(n.TemporalJoin.Rel),
			n.LeftKeys, in.Key, n.TemporalJoin.Rel.PK)}, nil
	case OpTopN:
		return []state.Schema{exec.TopNStateSchema(label, n.Inputs[0].Types(), n.GroupKey, columnOrders(n.Order), n.InputKey)}, nil
	case OpDistinct:
		return []state.Schema{exec.DistinctStateSchema(label, n.Inputs[0].Types(), n.GroupKey)}, nil
	case OpWindowClose:
		var dist []int
		if n.Dist.Kind == DistHash {
			dist = n.Dist.Keys
		}
		return []state.Schema{exec.WindowCloseStateSchema(label, n.Inputs[0].Types(), n.CloseCol, n.InputKey, dist)}, nil
	case OpTemporalFilter:
		var dist []int
		if n.Dist.Kind == DistHash {
			dist = n.Dist.Keys
		}
		return []state.Schema{exec.TemporalFilterStateSchema(label, n.Temporal.Key.Type(), n.Inputs[0].Types(), n.InputKey, dist)}, nil
	case OpDynamicFilter:
		d := n.Dynamic
		l, r := exec.DynamicFilterStateSchemas(label, d.Key.Type(), n.Inputs[1].Schema[0].Type, n.Inputs[0].Types(), n.Inputs[0].Key)
		return []state.Schema{l, r}, nil
	case OpOverWindow:
		return overWindowStateSchemas(n, label)
	case OpSource:
		if connector.IsExternal(n.Rel.Options) {
			return []state.Schema{exec.ExternalStateSchema(label)}, nil
		}
		return []state.Schema{exec.SourceStateSchema(label)}, nil
	case OpValues:
		return []state.Schema{exec.ValuesStateSchema(label)}, nil
	case OpSink:
		return []state.Schema{exec.SinkLogSchema(job+" log store", n.Types())}, nil
	case OpMaterialize:
		s := state.Schema{Name: job, Types: n.Types(), PK: n.Key, Desc: n.KeyDesc, ConstraintName: job + "_pkey"}
		for _, c := range n.Schema {
			s.ColumnNames = append(s.ColumnNames, c.Name)
		}
		if n.Dist.Kind == DistHash {
			s.DistKey = n.Dist.Keys
		}
		return []state.Schema{s}, nil
	}
	return nil, nil
}

func joinType(k plan.JoinKind) exec.JoinType {
	switch k {
	case plan.LeftJoin:
		return exec.JoinLeftOuter
	case plan.RightJoin:
		return exec.JoinRightOuter
	case plan.FullJoin:
		return exec.JoinFullOuter
	case plan.SemiJoin:
		return exec.JoinLeftSemi
	case plan.AntiJoin:
		return exec.JoinLeftAnti
	}
	return exec.JoinInner
}

func columnOrders(os []OrderCol) []exec.ColumnOrder {
	out := make([]exec.ColumnOrder, len(os))
	for i, o := range os {
		out[i] = exec.ColumnOrder{Col: o.Col, Desc: o.Desc, NullsFirst: o.NullsFirst}
	}
	return out
}

// MaterializeSchema returns the view's state-table schema (after
// AssignStateTables).
func MaterializeSchema(root *Node) state.Schema { return root.stateSchemas[0] }

// fragment is one piece of the plan between exchanges, with its actors.
type fragment struct {
	id     int // as EXPLAIN numbers it
	root   *Node
	actors []stream.ActorID
	// owners[v] is the actor owning vnode v.
	owners []stream.ActorID
	// inputs are the exchange edges feeding this fragment: for each
	// exchange node inside it, the channels from each upstream actor, per
	// local actor.
	chans map[*Node][][]chan stream.Message // [local actor][upstream actor]
}

// Instantiate builds the actors of a planned job (after
// AssignStateTables). Nothing runs until the caller spawns Job.Actors.
func Instantiate(root *Node, env *Env) (*Job, error) {
	g := &graphBuilder{env: env, job: &Job{Connect: map[stream.ActorID][]stream.Output{}, Dispatcher: map[stream.ActorID]*stream.BroadcastDispatcher{},
		SourceBarriers: map[stream.ActorID]chan *stream.Barrier{}}}
	if env.Backfill {
		g.job.Gate = exec.NewBackfillGate()
	}
	if _, err := g.fragment(root, nil); err != nil {
		return nil, err
	}
	return g.job, nil
}

type graphBuilder struct {
	env *Env
	job *Job
	// fragments counts the fragments built: they are numbered depth first
	// from the root, as Explain numbers them.
	fragments int
}

// fragment instantiates the fragment rooted at n, whose output feeds
// dispatch (nil for the job's root). It returns the fragment.
func (g *graphBuilder) fragment(n *Node, parent *fragment) (*fragment, error) {
	f := &fragment{root: n, chans: map[*Node][][]chan stream.Message{}, id: g.fragments}
	g.fragments++
	par, err := g.parallelism(n)
	if err != nil {
		return nil, err
	}
	for i := 0; i < par; i++ {
		f.actors = append(f.actors, g.env.Actors.NewActorID())
	}
	f.owners = make([]stream.ActorID, types.VnodeCount)
	for v := range f.owners {
		f.owners[v] = f.actors[v%par]
	}
	// Upstream fragments first: their dispatchers need this fragment's
	// channels.
	var exchanges []*Node
	walkFragment(n, func(x *Node) {
		if x.Op == OpExchange {
			exchanges = append(exchanges, x)
		}
	})
	for _, x := range exchanges {
		up, err := g.fragment(x.Inputs[0], f)
		if err != nil {
			return nil, err
		}
		chans := make([][]chan stream.Message, par)
		for i := range chans {
			chans[i] = make([]chan stream.Message, len(up.actors))
			for j := range chans[i] {
				chans[i][j] = make(chan stream.Message, channelBuffer)
			}
		}
		f.chans[x] = chans
		// The upstream fragment's actors dispatch to this one by x's
		// distribution.
		distKey := x.Dist.Keys
		if x.Dist.Kind != DistHash {
			distKey = nil
		}
		for j, ua := range up.actors {
			var outs []stream.Output
			for i, a := range f.actors {
				outs = append(outs, stream.Output{Actor: a, Ch: chans[i][j]})
			}
			owners := f.owners
			if x.Dist.Kind != DistHash {
				// Single (or any): everything to the first actor.
				owners = make([]stream.ActorID, types.VnodeCount)
				for v := range owners {
					owners[v] = f.actors[0]
				}
			}
			d, err := stream.NewHashDispatcher(ua, distKey, owners, outs)
			if err != nil {
				return nil, err
			}
			up.setDispatcher(g, j, d)
		}
	}
	for i, a := range f.actors {
		ex, err := g.executor(f, i, n)
		if err != nil {
			return nil, err
		}
		actor := &stream.Actor{ID: a, Job: g.env.Name, Group: g.env.Group, Root: ex, Fragment: f.id}
		g.job.Actors = append(g.job.Actors, actor)
		if n.Op == OpMaterialize {
			d := &stream.BroadcastDispatcher{Upstream: a}
			actor.Dispatch = d
			g.job.Dispatcher[a] = d
			idx, parN := i, par
			g.job.Outputs = append(g.job.Outputs, UpstreamActor{ID: a, Owns: func(v uint16) bool { return int(v)%parN == idx }})
		}
		if n.Op == OpSink {
			actor.Dispatch = &stream.BroadcastDispatcher{Upstream: a} // no outputs
		}
	}
	return f, nil
}

// setDispatcher installs the dispatcher of the fragment's j-th actor.
func (f *fragment) setDispatcher(g *graphBuilder, j int, d stream.Dispatcher) {
	for _, a := range g.job.Actors {
		if a.ID == f.actors[j] {
			a.Dispatch = d
		}
	}
}

// walkFragment visits the nodes of n's fragment (not crossing exchanges).
func walkFragment(n *Node, fn func(*Node)) {
	fn(n)
	if n.Op == OpExchange {
		return
	}
	for _, c := range n.Inputs {
		walkFragment(c, fn)
	}
}

// parallelism of the fragment rooted at n: a scan runs one actor per
// upstream actor; a single distribution one actor; otherwise the job's
// parallelism.
func (g *graphBuilder) parallelism(n *Node) (int, error) {
	par := 0
	var err error
	walkFragment(n, func(x *Node) {
		if err != nil {
			return
		}
		switch x.Op {
		case OpScan:
			var up *Upstream
			if up, err = g.env.Upstream(x.Rel.ID); err == nil {
				par = len(up.Actors)
			}
		case OpSource:
			if connector.IsExternal(x.Rel.Options) {
				// The splits (partitions) are listed by the actors, and
				// may grow: spread them over the job's parallelism.
				par = max(1, g.env.Parallelism)
				return
			}
			var src connector.Source
			if src, err = openConnector(x.Rel); err == nil {
				par = src.Splits()
			}
		case OpValues:
			par = 1 // the rows are emitted once, by one actor
		}
	})
	if err != nil {
		return 0, err
	}
	if par > 0 {
		return par, nil
	}
	if n.Dist.Kind == DistSingle || ((n.Op == OpMaterialize || n.Op == OpSink) && n.Dist.Kind != DistHash) {
		return 1, nil
	}
	if readsSingleExchange(n) {
		return 1, nil
	}
	return max(1, g.env.Parallelism), nil
}

// readsSingleExchange reports whether the fragment rooted at n reads a
// single-distribution exchange anywhere (not only right under its root:
// DISTINCT over a window function without PARTITION BY projects the
// single window output to "any" first). Its upstreams send every row to
// the fragment's first actor, so the fragment must have only that one.
func readsSingleExchange(n *Node) bool {
	single := false
	walkFragment(n, func(x *Node) {
		if x != n && x.Op == OpExchange && x.Dist.Kind == DistSingle {
			single = true
		}
	})
	return single
}

// openConnector configures a source relation's connector from its
// declared (non-hidden) columns and WITH options.
func openConnector(rel *catalog.Relation) (connector.Source, error) {
	var cols []connector.Column
	for _, c := range rel.Columns {
		if !c.Hidden {
			cols = append(cols, connector.Column{Name: c.Name, Type: c.Type})
		}
	}
	src, err := connector.Open(cols, rel.Options)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", rel.Name, err)
	}
	return src, nil
}

// ExternalSpec is the spec an external connector of rel is built from:
// its visible columns, its primary key among them (nil with a hidden row
// id) and its options. Stats are kept under rel's name.
func ExternalSpec(rel *catalog.Relation, log *slog.Logger) connector.Spec {
	spec := connector.Spec{Name: rel.Name, Options: rel.Options, Log: log}
	visible := map[int]int{}
	for i, c := range rel.Columns {
		if !c.Hidden {
			visible[i] = len(spec.Columns)
			spec.Columns = append(spec.Columns, connector.Column{Name: c.Name, Type: c.Type})
		}
	}
	for _, k := range rel.PK {
		j, ok := visible[k]
		if !ok {
			return spec // a hidden row id: no key
		}
		spec.PK = append(spec.PK, j)
	}
	return spec
}

func (g *graphBuilder) newState(n *Node, i int) *state.Table {
	return state.New(storage.TableID(n.StateTables[i]), n.stateSchemas[i], g.env.Store, g.env.Epoch)
}

// executor builds the executor tree of node n for the fragment's i-th actor.
func (g *graphBuilder) executor(f *fragment, i int, n *Node) (stream.Executor, error) {
	env := g.env
	actor := f.actors[i]
	input := func(k int) (stream.Executor, error) {
		in, err := g.executor(f, i, n.Inputs[k])
		if err != nil || handlesWatermarks(n.Op) {
			return in, err
		}
		return exec.NoWatermarks(in), nil // see watermark.go
	}
	switch n.Op {
	case OpExchange:
		chans := f.chans[n][i]
		ins := make([]<-chan stream.Message, len(chans))
		for j, c := range chans {
			ins[j] = c
		}
		return stream.NewMerge(actor, n.Types(), ins), nil
	case OpScan:
		return g.scan(f, i, n)
	case OpSource:
		barriers := make(chan *stream.Barrier, 16)
		g.job.SourceBarriers[actor] = barriers
		var s *exec.Source
		if connector.IsExternal(n.Rel.Options) {
			ext, err := connector.OpenExternal(ExternalSpec(n.Rel, env.Log))
			if err != nil {
				return nil, fmt.Errorf("source %s: %w", n.Rel.Name, err)
			}
			cfg := exec.ExternalConfig{Name: fmt.Sprintf("%s: %s", env.Name, n.Rel.Name), Source: n.Rel.Name, Index: i, Count: len(f.actors),
				Committed: exec.CommittedEpochOf(env.Store), Log: env.Log}
			s, err = exec.NewExternalSource(context.Background(), cfg, actor, barriers, ext, n.Types(), g.newState(n, 0))
			if err != nil {
				return nil, err
			}
		} else {
			src, err := openConnector(n.Rel)
			if err != nil {
				return nil, err
			}
			s, err = exec.NewSource(context.Background(), fmt.Sprintf("%s: %s", env.Name, n.Rel.Name), actor, barriers, src, i, n.Types(), g.newState(n, 0))
			if err != nil {
				return nil, err
			}
		}
		if err := g.sourceWatermark(s, n); err != nil { // see watermark.go
			return nil, err
		}
		g.job.Sources = append(g.job.Sources, s)
		return s, nil
	case OpValues:
		// A source actor: meta injects its barriers.
		barriers := make(chan *stream.Barrier, 16)
		g.job.SourceBarriers[actor] = barriers
		return exec.NewValues(context.Background(), env.Name, actor, barriers, n.Types(), n.Rows, g.newState(n, 0))
	case OpFilter:
		in, err := input(0)
		if err != nil {
			return nil, err
		}
		return exec.NewFilter(in, n.Cond, env.Location), nil
	case OpProject:
		in, err := input(0)
		if err != nil {
			return nil, err
		}
		return exec.NewProject(in, n.Exprs, env.Location), nil
	case OpHashAgg, OpSimpleAgg:
		in, err := input(0)
		if err != nil {
			return nil, err
		}
		calls, err := aggCalls(n)
		if err != nil {
			return nil, err
		}
		result := g.newState(n, 0)
		var tables []*state.Table
		_, per, err := exec.HashAggStateSchemas("", n.Inputs[0].Types(), n.GroupKey, calls, n.InputKey)
		if err != nil {
			return nil, err
		}
		next := 1
		for _, s := range per {
			if s == nil {
				tables = append(tables, nil)
				continue
			}
			tables = append(tables, g.newState(n, next))
			next++
		}
		if n.Op == OpSimpleAgg {
			agg, err := exec.NewSimpleAgg(in, calls, n.InputKey, result, tables)
			if err != nil {
				return nil, err
			}
			agg.SetStrict(env.Strict, env.Log) // I6
			if appendOnly(n.Inputs[0]) {
				agg.SetAppendOnly()
			}
			agg.SetBackfillGate(g.job.Gate)
			return agg, nil
		}
		agg, err := exec.NewHashAgg(in, n.GroupKey, calls, n.InputKey, result, tables)
		if err != nil {
			return nil, err
		}
		agg.SetStrict(env.Strict, env.Log) // I6
		if appendOnly(n.Inputs[0]) {
			agg.SetAppendOnly() // min/max keep no inputs
		}
		agg.SetBackfillGate(g.job.Gate) // state written once per backfill (I7: see BackfillGate)
		// Watermark cleanup deletes only this actor's groups, and only
		// this actor creates the Always groups of its vnodes.
		owners := f.owners
		agg.SetVnodeOwner(func(v uint16) bool { return owners[v] == actor })
		agg.SetAlwaysGroups(n.Always)
		return agg, nil
	case OpHashJoin:
		l, err := input(0)
		if err != nil {
			return nil, err
		}
		r, err := input(1)
		if err != nil {
			return nil, err
		}
		left := exec.JoinSide{Input: l, Keys: n.LeftKeys, PK: n.Inputs[0].Key, State: g.newState(n, 0)}
		right := exec.JoinSide{Input: r, Keys: n.RightKeys, PK: n.Inputs[1].Key, State: g.newState(n, 1)}
		j, err := exec.NewHashJoin(actor, joinType(n.JoinKind), left, right, nil, n.Cond, env.Location)
		if err != nil {
			return nil, err
		}
		if env.Backfill {
			j.SetFresh() // a new job's state tables start empty
		}
		j.SetStrict(env.Strict, env.Log) // I6
		owners := f.owners
		j.SetVnodeOwner(func(v uint16) bool { return owners[v] == actor })
		j.SetIntervalBounds(activeIntervalBounds(n)) // see watermark.go
		return j, nil
	case OpTemporalJoin:
		in, err := input(0)
		if err != nil {
			return nil, err
		}
		return g.temporalJoin(n, in)
	case OpTopN:
		in, err := input(0)
		if err != nil {
			return nil, err
		}
		var t *exec.TopN
		if len(n.GroupKey) > 0 { // DISTINCT ON
			t, err = exec.NewGroupTopN(in, n.GroupKey, columnOrders(n.Order), n.InputKey, n.Limit, n.Offset, false, g.newState(n, 0))
		} else {
			t, err = exec.NewTopN(in, columnOrders(n.Order), n.InputKey, n.Limit, n.Offset, g.newState(n, 0))
		}
		if err != nil {
			return nil, err
		}
		t.SetWithTies(n.TieCols)
		t.SetStrict(env.Strict, env.Log) // I6
		return t, nil
	case OpDistinct:
		in, err := input(0)
		if err != nil {
			return nil, err
		}
		d, err := exec.NewDistinct(in, n.GroupKey, g.newState(n, 0))
		if err != nil {
			return nil, err
		}
		d.SetStrict(env.Strict, env.Log) // I6
		// Watermark cleanup deletes only this actor's tuples.
		owners := f.owners
		d.SetVnodeOwner(func(v uint16) bool { return owners[v] == actor })
		return d, nil
	case OpProjectSet:
		in, err := input(0)
		if err != nil {
			return nil, err
		}
		calls := make([]exec.SRF, len(n.SRFs))
		for i, c := range n.SRFs {
			calls[i] = exec.SRF{Name: c.Name, Args: c.Args, Type: c.Type}
		}
		ps, err := exec.NewProjectSet(in, calls, n.SRFAt, env.Location)
		if err != nil {
			return nil, err
		}
		ps.SetLateral(n.SRFOrdinality, n.SRFOuter)
		return ps, nil
	case OpExpand:
		in, err := input(0)
		if err != nil {
			return nil, err
		}
		return exec.NewExpand(in, n.Exprs, n.GroupingSets, n.ExpandAt, env.Location)
	case OpWindowClose:
		in, err := input(0)
		if err != nil {
			return nil, err
		}
		w, err := exec.NewWindowClose(in, n.CloseCol, g.newState(n, 0))
		if err != nil {
			return nil, err
		}
		owners := f.owners
		w.SetVnodeOwner(func(v uint16) bool { return owners[v] == actor })
		return w, nil
	case OpTemporalFilter:
		in, err := input(0)
		if err != nil {
			return nil, err
		}
		t := n.Temporal
		tf, err := exec.NewTemporalFilter(in, t.Cond, t.Key, t.Expiring, g.newState(n, 0), env.Location)
		if err != nil {
			return nil, err
		}
		tf.SetStrict(env.Strict, env.Log) // I6
		owners := f.owners
		tf.SetVnodeOwner(func(v uint16) bool { return owners[v] == actor })
		return tf, nil
	case OpDynamicFilter:
		l, err := input(0)
		if err != nil {
			return nil, err
		}
		r, err := input(1)
		if err != nil {
			return nil, err
		}
		d := n.Dynamic
		df, err := exec.NewDynamicFilter(actor, l, r, d.Key, d.Cmp, d.Less, g.newState(n, 0), g.newState(n, 1))
		if err != nil {
			return nil, err
		}
		df.SetStrict(env.Strict, env.Log) // I6
		return df, nil
	case OpOverWindow:
		in, err := input(0)
		if err != nil {
			return nil, err
		}
		ow, err := g.overWindow(n, in)
		if err != nil {
			return nil, err
		}
		// Watermark cleanup deletes only this actor's partitions.
		owners := f.owners
		ow.SetVnodeOwner(func(v uint16) bool { return owners[v] == actor })
		return ow, nil
	case OpHopWindow:
		in, err := input(0)
		if err != nil {
			return nil, err
		}
		return g.hopWindow(n, in) // see timewindow.go
	case OpUnionAll:
		ins := make([]stream.Executor, len(n.Inputs))
		for k := range n.Inputs {
			in, err := input(k)
			if err != nil {
				return nil, err
			}
			ins[k] = in
		}
		return exec.NewUnionAll(actor, ins, false)
	case OpSink:
		in, err := input(0)
		if err != nil {
			return nil, err
		}
		if env.SinkLog == nil {
			return nil, fmt.Errorf("%s: a sink job needs its log", env.Name)
		}
		return exec.NewSink(in, g.newState(n, 0), i, env.SinkLog, n.SinkAppendOnly), nil
	case OpMaterialize:
		in, err := input(0)
		if err != nil {
			return nil, err
		}
		m := exec.NewMaterialize(in, g.newState(n, 0), env.Strict, env.Log)
		if appendOnly(n.Inputs[0]) {
			m.SetAppendOnly()
		}
		if env.Backfill {
			// A new job's view table starts empty (a rebuilt job's holds
			// its committed rows).
			m.SetFresh()
		}
		return m, nil
	}
	return nil, fmt.Errorf("%s: cannot instantiate %s", env.Name, n.Op)
}

// scan reads an upstream relation: the fragment's i-th actor is fed by the
// upstream's i-th actor (no shuffle) and, for a new job, backfills that
// actor's share of the existing rows first.
func (g *graphBuilder) scan(f *fragment, i int, n *Node) (stream.Executor, error) {
	env := g.env
	up, err := env.Upstream(n.Rel.ID)
	if err != nil {
		return nil, err
	}
	ua := up.Actors[i]
	ch := make(chan stream.Message, channelBuffer)
	g.job.Connect[ua.ID] = append(g.job.Connect[ua.ID], stream.Output{Actor: f.actors[i], Ch: ch})
	if !env.Backfill {
		return &channelSource{actor: f.actors[i], ch: ch, schema: n.Types(), name: n.Rel.Name}, nil
	}
	keyTable := state.New(storage.TableID(n.Rel.StateTable), up.State, nil, 0)
	keyOf := func(r types.Row) []byte { return keyTable.EncodeKey(nil, r) }
	read := snapshotReader(env.Store, storage.TableID(n.Rel.StateTable), up.State, ua.Owns)
	bf := exec.NewBackfill(fmt.Sprintf("%s from %s", env.Name, n.Rel.Name), f.actors[i], n.Types(), ch, read, keyOf)
	g.job.Gate.Track(bf)
	g.job.Backfills = append(g.job.Backfills, bf)
	return bf, nil
}

// snapshotReader reads an upstream state table's rows owned by one
// upstream actor, in key order, at an epoch (its ingested but uncommitted
// writes included: the upstream passed the barrier before we read).
func snapshotReader(store state.Store, table storage.TableID, schema state.Schema, owns func(uint16) bool) exec.SnapshotReader {
	return func(ctx context.Context, after []byte, epoch uint64, limit int) ([]types.Row, []byte, bool, error) {
		var lower []byte
		if after != nil {
			lower = append(bytes.Clone(after), 0)
		}
		it, err := store.Iter(ctx, table, lower, nil, epoch, storage.ReadOptions{})
		if err != nil {
			return nil, nil, false, err
		}
		defer it.Close()
		var rows []types.Row
		var last []byte
		for it.Next() {
			k := it.Key()
			if len(k) >= 2 && !owns(uint16(k[0])<<8|uint16(k[1])) {
				continue
			}
			if len(rows) == limit {
				return rows, last, false, nil
			}
			row, err := types.DecodeValueRow(it.Value(), schema.Types, nil)
			if err != nil {
				return nil, nil, false, fmt.Errorf("%s: corrupt row: %w", schema.Name, err)
			}
			rows = append(rows, row)
			last = append(last[:0], k...)
		}
		if err := it.Err(); err != nil {
			return nil, nil, false, err
		}
		return rows, last, true, nil
	}
}

// channelSource forwards an upstream actor's messages (a rebuilt job's
// scan: its state already holds the rows backfill would read).
type channelSource struct {
	actor   stream.ActorID
	ch      <-chan stream.Message
	schema  []types.Type
	name    string
	stopped bool
}

func (c *channelSource) Schema() []types.Type { return c.schema }
func (c *channelSource) Identity() string     { return "Upstream(" + c.name + ")" }
func (c *channelSource) Next(ctx context.Context) (stream.Message, error) {
	if c.stopped {
		return stream.Message{}, stream.ErrStopped
	}
	m, ok, err := stream.Receive(ctx, c.ch)
	if err != nil {
		return stream.Message{}, err
	}
	if !ok {
		return stream.Message{}, fmt.Errorf("%s: upstream closed", c.Identity())
	}
	if m.Barrier != nil && m.Barrier.StopsActor(c.actor) {
		c.stopped = true
	}
	return m, nil
}

// appendOnly reports whether n only ever emits inserts of rows with fresh
// stream keys: connector sources (keyed by their unique positions) seen
// through filters, projections, exchanges and UNION ALL (keyed by branch),
// and inner joins of such inputs (a pair is emitted once, when its later
// row arrives, keyed by both rows' keys; watermark cleanup emits nothing).
func appendOnly(n *Node) bool {
	switch n.Op {
	case OpSource, OpValues, OpWindowClose:
		return true
	case OpHashJoin:
		return n.JoinKind == plan.InnerJoin && appendOnly(n.Inputs[0]) && appendOnly(n.Inputs[1])
	case OpTemporalJoin:
		// Each insert emits inserts keyed by its own key (and the looked-up
		// rows' keys); nothing is retracted.
		return appendOnly(n.Inputs[0])
	case OpFilter, OpProject, OpExchange, OpUnionAll, OpHopWindow, OpProjectSet, OpExpand:
		// (A hop window turns an insert into inserts keyed by the input's
		// key and window_start: fresh keys too; an Expand into inserts
		// keyed by the input's key and the grouping-set number.)
		for _, c := range n.Inputs {
			if !appendOnly(c) {
				return false
			}
		}
		return true
	}
	return false
}

// temporalJoin instantiates an OpTemporalJoin: the looked-up relation is
// read through its own state table (id and schema), at the committed
// snapshot each chunk pins (exec.TemporalJoin).
func (g *graphBuilder) temporalJoin(n *Node, in stream.Executor) (stream.Executor, error) {
	spec := n.TemporalJoin
	snaps, ok := g.env.Store.(exec.CommittedSnapshots)
	if !ok {
		return nil, fmt.Errorf("%s: a temporal join needs a store with committed snapshots", g.env.Name)
	}
	rs := TableStateSchema(spec.Rel)
	if spec.Rel.Kind == catalog.KindMaterializedView {
		rs = ViewStateSchema(spec.Rel)
	}
	lookup := exec.TemporalLookup{
		Table:     state.New(storage.TableID(spec.Rel.StateTable), rs, nil, 0),
		Keys:      n.LeftKeys,
		Point:     spec.Point,
		Snapshots: snaps,
	}
	var memo *state.Table
	var memoKey []int
	if !spec.AppendOnly {
		memo = g.newState(n, 0)
		memoKey = memo.Schema().PK[:len(memo.Schema().PK)-len(spec.Rel.PK)]
	}
	j, err := exec.NewTemporalJoin(in, lookup, n.JoinKind == plan.LeftJoin, n.Cond, memo, memoKey, g.env.Location)
	if err != nil {
		return nil, err
	}
	j.SetStrict(g.env.Strict, g.env.Log) // I6
	return j, nil
}
