package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/connector"
	"github.com/runneldb/runnel/internal/httpapi"
	"github.com/runneldb/runnel/internal/ingest"
	"github.com/runneldb/runnel/internal/obs"
	"github.com/runneldb/runnel/internal/promql"
	"github.com/runneldb/runnel/internal/sink"
	"github.com/runneldb/runnel/internal/sqlhttp"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/exec"
	"github.com/runneldb/runnel/internal/streamplan"
)

// The HTTP listener (Config.HTTPListen): /metrics, the JSON APIs under
// /api/, the dashboard and the time-series ingest paths (tsingest.go), served by package httpapi from what this file
// answers (httpapi.Backend) — the same state the rw_catalog relations
// read, so the dashboard and SQL agree.

// startHTTP listens on cfg.HTTPListen ("" disables the listener).
func (s *Server) startHTTP() error {
	if s.cfg.HTTPListen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", s.cfg.HTTPListen)
	if err != nil {
		return fmt.Errorf("listen on %s (--http-listen): %w", s.cfg.HTTPListen, err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(&metricsCollector{s: s})
	s.httpAPI = &observer{s: s, started: time.Now(), rates: map[fragKey]rateSample{}}
	s.http = httpapi.New(httpapi.Config{Gatherer: prometheus.Gatherers{obs.Default, reg}, Backend: s.httpAPI, Logger: s.log, Pprof: s.cfg.Pprof,
		Mount: func(mux *http.ServeMux) {
			ingest.Register(mux, s.fe.IngestWriter())
			promql.New(s.fe.PromSource(), promql.Options{Logger: s.log}).Register(mux)
			sqlhttp.Register(mux, s.fe.Engine(), s.log)
		}})
	s.httpAddr = ln.Addr().String()
	go func() {
		if err := s.http.Serve(ln); err != nil {
			s.log.Error("http listener stopped", "err", err)
		}
	}()
	s.log.Info("http listener ready: /metrics, /api/, dashboard", "http_listen", s.httpAddr)
	return nil
}

// HTTPAddr is the HTTP listener's address ("" when disabled).
func (s *Server) HTTPAddr() string { return s.httpAddr }

// observer implements httpapi.Backend.
type observer struct {
	s       *Server
	started time.Time

	mu    sync.Mutex
	rates map[fragKey]rateSample // the last rows-out sample per fragment
}

type fragKey struct {
	job      int64
	fragment int
}

type rateSample struct {
	rows int64
	at   time.Time
	rate float64
}

func (o *observer) Overview(ctx context.Context) (httpapi.Overview, error) {
	s := o.s
	committed := s.epochs.CommittedEpoch()
	b := exec.DefaultCacheBudget()
	return httpapi.Overview{
		Started: o.started, CommittedEpoch: committed, EpochAgeSeconds: epochAge(committed),
		BarrierInterval: s.cfg.BarrierInterval.String(),
		Relations:       len(s.catalog.Relations(func(r *catalog.Relation) bool { return r.Kind != catalog.KindSystem })),
		Actors:          len(s.actors.Actors()), Sessions: len(s.pg.Sessions()), Recoveries: len(s.epochs.Recoveries()),
		CacheBytes: b.Used(), CacheLimitBytes: b.Limit(),
	}, nil
}

// epochAge is how old an epoch is by the wall clock it embeds.
func epochAge(epoch uint64) float64 {
	if epoch == 0 {
		return 0
	}
	return max(0, time.Since(obs.EpochTime(epoch)).Seconds())
}

// names resolves database and schema names by id.
type names struct {
	dbs     map[catalog.ObjectID]string
	schemas map[catalog.ObjectID]string
}

func (s *Server) names() names {
	n := names{dbs: map[catalog.ObjectID]string{}, schemas: map[catalog.ObjectID]string{}}
	for _, d := range s.catalog.Databases() {
		n.dbs[d.ID] = d.Name
		for _, sc := range s.catalog.Schemas(d.ID) {
			n.schemas[sc.ID] = sc.Name
		}
	}
	return n
}

// Relations lists every relation with its committed size, counted by
// scanning the committed snapshot (the call's cost grows with the data:
// the dashboard asks for it when its page is open).
func (o *observer) Relations(ctx context.Context) ([]httpapi.Relation, error) {
	s := o.s
	nm := s.names()
	running := s.compute.JobActors()
	committed := s.epochs.CommittedEpoch()
	rels := s.catalog.Relations(func(r *catalog.Relation) bool { return r.Kind != catalog.KindSystem })
	sort.Slice(rels, func(i, j int) bool { return rels[i].ID < rels[j].ID })
	snap := s.store.Snapshot()
	defer snap.Close()
	out := make([]httpapi.Relation, 0, len(rels))
	for _, r := range rels {
		hr := httpapi.Relation{ID: int64(r.ID), Database: nm.dbs[r.DatabaseID], Schema: nm.schemas[r.SchemaID], Name: r.Name,
			Kind: r.Kind.String(), Rows: -1, Bytes: -1}
		if r.Kind == catalog.KindTable || r.Kind == catalog.KindMaterializedView || r.Kind == catalog.KindSink {
			hr.FreshnessSeconds = epochAge(committed)
			hr.Actors = len(running[r.ID])
			switch {
			case r.Creating:
				hr.Status = "creating"
			case running[r.ID] == nil:
				hr.Status = "recovering"
			default:
				hr.Status = "running"
			}
			for _, t := range r.StateTables {
				rows, bytes, err := tableSize(ctx, snap, storage.TableID(t))
				if err != nil {
					return nil, err
				}
				if t == r.StateTable && r.Kind != catalog.KindSink {
					hr.Rows, hr.Bytes = rows, bytes
				} else {
					hr.StateBytes += bytes
				}
			}
			if len(r.StateTables) == 0 && r.Kind == catalog.KindTable {
				rows, bytes, err := tableSize(ctx, snap, storage.TableID(r.StateTable))
				if err != nil {
					return nil, err
				}
				hr.Rows, hr.Bytes = rows, bytes
			}
		}
		out = append(out, hr)
	}
	return out, nil
}

// tableSize counts a state table's committed rows and key+value bytes.
func tableSize(ctx context.Context, snap *storage.Snapshot, id storage.TableID) (rows, bytes int64, err error) {
	it, err := snap.Iter(ctx, id, nil, nil, storage.ReadOptions{})
	if err != nil {
		return 0, 0, err
	}
	defer it.Close()
	for it.Next() {
		rows++
		bytes += int64(len(it.Key()) + len(it.Value()))
		if rows%4096 == 0 && ctx.Err() != nil {
			return 0, 0, ctx.Err()
		}
	}
	return rows, bytes, it.Err()
}

// Graph plans the view's stored definition as CREATE did (EXPLAIN's
// fragments) and adds its running actors' counters, by fragment.
func (o *observer) Graph(ctx context.Context, id int64) (httpapi.Graph, error) {
	s := o.s
	rel, ok := s.catalog.Relation(catalog.ObjectID(id))
	if !ok || rel.Kind != catalog.KindMaterializedView {
		return httpapi.Graph{}, httpapi.NotFound(fmt.Sprintf("no materialized view with id %d", id))
	}
	root, err := s.fe.PlanViewQuery(rel)
	if err != nil {
		return httpapi.Graph{}, err
	}
	g := httpapi.Graph{ID: id, Name: rel.Name}
	mine := map[stream.ActorID]bool{}
	for _, a := range s.compute.JobActors()[rel.ID] {
		mine[a] = true
	}
	type sums struct {
		n              int
		in, out        int64
		blocked, total time.Duration
		busy           time.Duration
	}
	byFrag := map[int]*sums{}
	for _, a := range s.actors.Actors() {
		if !mine[a.ID] {
			continue
		}
		f := byFrag[a.Fragment]
		if f == nil {
			f = &sums{}
			byFrag[a.Fragment] = f
		}
		f.n++
		f.in += a.RowsIn
		f.out += a.RowsOut
		for c, d := range a.InState {
			f.total += d
			switch stream.StateClass(c) {
			case stream.ClassBlocked:
				f.blocked += d
			case stream.ClassBusy:
				f.busy += d
			}
		}
	}
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ef := range streamplan.ExplainFragments(root) {
		fr := httpapi.Fragment{ID: ef.ID, Dist: ef.Dist, Operators: ef.Lines, Inputs: ef.Inputs}
		if f := byFrag[ef.ID]; f != nil {
			fr.Actors, fr.RowsIn, fr.RowsOut = f.n, f.in, f.out
			if f.total > 0 {
				fr.Blocked = float64(f.blocked) / float64(f.total)
				fr.Busy = float64(f.busy) / float64(f.total)
			}
		}
		k := fragKey{id, ef.ID}
		prev, seen := o.rates[k]
		switch {
		case !seen || fr.RowsOut < prev.rows:
			o.rates[k] = rateSample{rows: fr.RowsOut, at: now}
		case now.Sub(prev.at) >= time.Second:
			r := float64(fr.RowsOut-prev.rows) / now.Sub(prev.at).Seconds()
			o.rates[k] = rateSample{rows: fr.RowsOut, at: now, rate: r}
			fr.RowsPerSecond = r
		default:
			fr.RowsPerSecond = prev.rate // asked again within a second
		}
		g.Fragments = append(g.Fragments, fr)
	}
	return g, nil
}

func (o *observer) Actors(ctx context.Context) ([]httpapi.Actor, error) {
	s := o.s
	nm := s.names()
	dbOf := map[stream.ActorID]string{}
	for id, actors := range s.compute.JobActors() {
		if r, ok := s.catalog.Relation(id); ok {
			for _, a := range actors {
				dbOf[a] = nm.dbs[r.DatabaseID]
			}
		}
	}
	actors := s.actors.ActorsWithAwaitTrees()
	sort.Slice(actors, func(i, j int) bool { return actors[i].ID < actors[j].ID })
	now := time.Now()
	out := make([]httpapi.Actor, 0, len(actors))
	for _, a := range actors {
		ha := httpapi.Actor{ID: int64(a.ID), Database: dbOf[a.ID], Job: a.Job, Fragment: a.Fragment, Root: a.Root, State: a.State,
			RowsIn: a.RowsIn, RowsOut: a.RowsOut, WaitingOn: a.WaitingOn}
		if !a.Since.IsZero() {
			ha.Seconds = now.Sub(a.Since).Seconds()
		}
		out = append(out, ha)
	}
	return out, nil
}

func (o *observer) Barriers(ctx context.Context) ([]httpapi.Barrier, error) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	recent := o.s.epochs.RecentBarriers()
	out := make([]httpapi.Barrier, 0, len(recent))
	for _, b := range recent {
		out = append(out, httpapi.Barrier{Epoch: b.Epoch, Committed: b.Committed, InjectMS: ms(b.Inject), CollectMS: ms(b.Collect), CommitMS: ms(b.Commit)})
	}
	return out, nil
}

// storageCheckGrace: objects younger than this are never called garbage
// by the dashboard's storage check (ctl storage check's default).
const storageCheckGrace = time.Hour

func (o *observer) Storage(ctx context.Context, check bool) (httpapi.Storage, error) {
	s := o.s
	st := s.store.Stats()
	q, err := s.store.DeletionQueueLen(ctx)
	if err != nil {
		return httpapi.Storage{}, err
	}
	out := httpapi.Storage{VersionID: st.VersionID, CommittedEpoch: st.CommittedEpoch, SafeEpoch: st.SafeEpoch, Tables: st.Tables,
		WriteBufferBytes: st.WriteBufferBytes, PinnedVersions: st.PinnedVersions, Snapshots: st.Snapshots, DeletionQueue: q,
		Compactions: []httpapi.Compaction{}}
	for l, ls := range st.Levels {
		out.Levels = append(out.Levels, httpapi.Level{Level: l, SSTs: ls.SSTs, Inline: ls.Inline, Bytes: ls.Bytes, Entries: ls.Entries})
	}
	for _, c := range st.Compactions {
		out.Compactions = append(out.Compactions, httpapi.Compaction{ID: c.ID, OutputLevel: c.OutputLevel, Inputs: c.Inputs, Seconds: time.Since(c.Started).Seconds()})
	}
	if check {
		rep, err := storage.Check(ctx, s.objects, s.metaDB, storageCheckGrace)
		if err != nil {
			return httpapi.Storage{}, err
		}
		out.Check, out.Violations = rep.Summary(), rep.Violations()
	}
	return out, nil
}

func (o *observer) Recoveries(ctx context.Context) ([]httpapi.Recovery, error) {
	nm := o.s.names()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	recs := o.s.epochs.Recoveries()
	out := make([]httpapi.Recovery, 0, len(recs))
	for _, r := range recs {
		out = append(out, httpapi.Recovery{Started: r.Start, Database: nm.dbs[catalog.ObjectID(r.Database)], Reason: r.Reason,
			ResetMS: ms(r.Reset), RebuildMS: ms(r.Rebuild), Epoch: r.Epoch, Error: r.Err, Abandoned: r.Abandoned})
	}
	return out, nil
}

func (o *observer) Sessions(ctx context.Context) ([]httpapi.Session, error) {
	now := time.Now()
	sess := o.s.pg.Sessions()
	out := make([]httpapi.Session, 0, len(sess))
	for _, p := range sess {
		hs := httpapi.Session{PID: p.PID, User: p.User, Database: p.Database, Application: p.Application, Remote: p.Remote,
			Connected: p.Connected, State: p.State, Query: p.Query}
		if p.State == "active" {
			hs.Seconds = now.Sub(p.QueryStart).Seconds()
		}
		out = append(out, hs)
	}
	return out, nil
}

func (o *observer) Cancel(ctx context.Context, pid uint32) (bool, error) {
	return o.s.pg.CancelBackend(pid), nil
}

func (o *observer) Connectors(ctx context.Context) (httpapi.Connectors, error) {
	out := httpapi.Connectors{Sources: []httpapi.Source{}, Sinks: []httpapi.Sink{}}
	for _, st := range connector.AllStats() {
		out.Sources = append(out.Sources, httpapi.Source{Name: st.Name, Rows: st.Rows, Bytes: st.Bytes, Malformed: st.Skipped,
			Status: st.Status, CaughtUp: st.CaughtUp, LagMessages: st.LagMessages, LagBytes: st.LagBytes})
	}
	for _, sk := range o.s.sinkStatuses() {
		hs := httpapi.Sink{Name: sk.rel.Name, Connector: sk.rel.Options["connector"], Status: sk.status, PendingRows: sk.st.PendingRows,
			PendingEpochs: sk.st.PendingEpochs, DeliveredEpoch: sk.st.Delivered, DeliveredRows: sk.st.DeliveredRows, LastError: sk.st.LastError}
		if sk.st.PendingEpochs > 0 && sk.st.Delivered != 0 {
			hs.LagSeconds = epochAge(sk.st.Delivered)
		}
		out.Sinks = append(out.Sinks, hs)
	}
	return out, nil
}

// sinkState is one sink's worker status.
type sinkState struct {
	rel    *catalog.Relation
	st     sink.Status
	status string // running, retrying, stopped (as rw_sinks)
}

// sinkStatuses lists every sink of every database.
func (s *Server) sinkStatuses() []sinkState {
	rels := s.catalog.Relations(func(r *catalog.Relation) bool { return r.Kind == catalog.KindSink && !r.Creating })
	sort.Slice(rels, func(i, j int) bool { return rels[i].ID < rels[j].ID })
	out := make([]sinkState, 0, len(rels))
	for _, r := range rels {
		st, status := s.meta.SinkStatus(r.ID)
		out = append(out, sinkState{rel: r, st: st, status: status})
	}
	return out
}

// IngestWriter is the server's side of the HTTP ingest (internal/ingest),
// served by the frontend.
func (s *Server) IngestWriter() ingest.Writer { return s.fe.IngestWriter() }

// PromSource is the server's side of the PromQL API (internal/promql),
// served by the frontend.
func (s *Server) PromSource() promql.Source { return s.fe.PromSource() }

// WaitSources blocks until every connector source read by the named
// materialized view has emitted all its rows (bounded sources only).
func (s *Server) WaitSources(ctx context.Context, view string) error {
	return s.compute.WaitSources(ctx, view)
}

// SourceRows returns how many rows the connector sources read by the named
// materialized view have emitted since its job (re)started (see
// compute.Node.SourceRows).
func (s *Server) SourceRows(view string) (int64, error) { return s.compute.SourceRows(view) }
