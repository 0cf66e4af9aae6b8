package metasrv

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/compute"
	"github.com/runneldb/runnel/internal/sink"
	_ "github.com/runneldb/runnel/internal/sink/file"     // registers s3, fs and file
	_ "github.com/runneldb/runnel/internal/sink/kafka"    // registers kafka
	_ "github.com/runneldb/runnel/internal/sink/postgres" // registers postgres and jdbc
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream/exec"
	"github.com/runneldb/runnel/internal/streamplan"
)

// A sink is a streaming job like a materialized view (its running actors
// are a viewJob in s.jobs.views, so recovery tears down and stops it the
// same way) whose plan ends in a Sink executor writing the sink's log
// store; its sink.Worker, which drains the log into the target, lives in
// sinkWorkers for as long as the sink exists, across recoveries.

// sinkWorkers holds the worker of every sink.
type sinkWorkers struct {
	mu sync.Mutex
	m  map[catalog.ObjectID]*sink.Worker
}

func (w *sinkWorkers) get(id catalog.ObjectID) *sink.Worker {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m[id]
}

// sinkOpenTimeout bounds CREATE SINK's check that the target is reachable
// and fits the sink.
const sinkOpenTimeout = 15 * time.Second

// sinkConfig builds a sink's connector config from its relation.
func sinkConfig(s *Service, rel *catalog.Relation) (*sink.Config, *sink.Spec, error) {
	spec, err := sink.ParseSpec(rel.Name, rel.Options)
	if err != nil {
		return nil, nil, err
	}
	cfg := &sink.Config{Name: rel.Name, ID: uint64(rel.ID), Type: spec.Type, Options: map[string]string{},
		Format: rel.Options[sink.OptFormat], Encode: rel.Options[sink.OptEncode], EncodeOptions: map[string]string{}}
	for k, v := range rel.Options {
		switch {
		case strings.HasPrefix(k, sink.OptEncodePrefix):
			cfg.EncodeOptions[strings.TrimPrefix(k, sink.OptEncodePrefix)] = v
		case !strings.HasPrefix(k, "_"):
			cfg.Options[k] = v
		}
	}
	cfg.Name = sinkQualifiedName(s.catalog, rel)
	for _, i := range rel.VisibleColumns() {
		cfg.Columns = append(cfg.Columns, sink.Column{Name: rel.Columns[i].Name, Type: rel.Columns[i].Type})
	}
	for _, k := range spec.Key {
		idx := slices.IndexFunc(cfg.Columns, func(c sink.Column) bool { return c.Name == k })
		if idx < 0 {
			return nil, nil, sqlerr.Errorf(sqlerr.UndefinedColumn, "sink %q: primary_key column %q is not a column of the sink's query", rel.Name, k)
		}
		cfg.Key = append(cfg.Key, idx)
	}
	return cfg, spec, nil
}

// sinkQualifiedName is database.schema.name: the key of the sink's progress
// row in an exactly-once target.
func sinkQualifiedName(cat *catalog.Catalog, rel *catalog.Relation) string {
	name := rel.Name
	for _, sc := range cat.Schemas(rel.DatabaseID) {
		if sc.ID == rel.SchemaID {
			name = sc.Name + "." + name
		}
	}
	for _, d := range cat.Databases() {
		if d.ID == rel.DatabaseID {
			name = d.Name + "." + name
		}
	}
	return name
}

// newSinkTarget opens a sink's connector (options checked, not connected).
func (s *Service) newSinkTarget(rel *catalog.Relation, cfg *sink.Config, spec *sink.Spec) (sink.Target, error) {
	if spec.Connector == sink.ConnectorTable {
		return s.newTableTarget(cfg, rel.Options) // see sinkinto.go
	}
	c, _ := sink.Lookup(spec.Connector)
	if c.NeedsFormat && cfg.Format == "" {
		return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "sink %q: connector %s needs FORMAT ... ENCODE ...", cfg.Name, spec.Connector)
	}
	return c.New(cfg)
}

// createSink checks that a sink's target is there and fits (a typo in a
// URL or a table name fails now, not later, as in RisingWave), then
// creates its job.
func (s *Service) createSink(ctx context.Context, rel *catalog.Relation, root *streamplan.Node, columns []plan.Column, spec *sink.Spec) error {
	rel.Columns = jobColumns(root, columns)
	cfg, _, err := sinkConfig(s, rel)
	if err != nil {
		return err
	}
	target, err := s.newSinkTarget(rel, cfg, spec)
	if err != nil {
		return err
	}
	octx, cancel := context.WithTimeout(ctx, sinkOpenTimeout)
	_, err = target.Open(octx)
	cancel()
	target.Close()
	if err != nil {
		if sqlerr.From(err) == nil {
			err = sqlerr.Errorf(sqlerr.ConnectionException, "%v", err)
		}
		return err
	}
	return s.createSinkJob(ctx, rel, root)
}

// createSinkJob registers the sink's state tables (log store first, in
// plan order) and catalog entry, starts its worker and actors, waits for
// the backfill, and publishes it.
func (s *Service) createSinkJob(ctx context.Context, rel *catalog.Relation, root *streamplan.Node) error {
	if err := s.createJobState(ctx, rel, root, "sink "+rel.Name, nil); err != nil {
		return err
	}
	fail := func(err error) error {
		if derr := s.dropView(context.Background(), rel); derr != nil {
			s.log.Error("drop sink whose creation failed", "sink", rel.Name, "err", derr)
		}
		return err
	}
	interrupted := func() error {
		return fail(sqlerr.Errorf(sqlerr.ObjectNotInPrerequisiteState, "creation of sink %q was interrupted by a recovery; it was dropped, run CREATE again", rel.Name))
	}
	w, err := s.startSinkWorker(rel, root)
	if err != nil {
		return fail(err)
	}
	vj, err := s.startView(ctx, rel, root, s.sinkSpec(rel, w, true))
	if err != nil {
		return fail(err)
	}
	for _, bf := range vj.Backfills() {
		select {
		case <-bf:
		case <-vj.Replaced():
			return interrupted()
		case <-ctx.Done():
			return fail(ctx.Err())
		}
	}
	if err := s.epochs.Flush(ctx); err != nil {
		return fail(err)
	}
	return s.publishJob(ctx, rel, vj, interrupted)
}

// startSinkWorker creates and starts the worker of a sink (planned, state
// tables assigned) unless it runs already.
func (s *Service) startSinkWorker(rel *catalog.Relation, root *streamplan.Node) (*sink.Worker, error) {
	s.sinks.mu.Lock()
	defer s.sinks.mu.Unlock()
	if w := s.sinks.m[rel.ID]; w != nil {
		return w, nil
	}
	cfg, spec, err := sinkConfig(s, rel)
	if err != nil {
		return nil, err
	}
	target, err := s.newSinkTarget(rel, cfg, spec)
	if err != nil {
		return nil, err
	}
	w := sink.NewWorker(sink.WorkerConfig{
		Name:           rel.Name,
		Store:          s.store,
		LogTable:       storage.TableID(rel.StateTables[0]),
		LogSchema:      exec.SinkLogSchema("sink "+rel.Name+" log store", root.Types()),
		Columns:        rel.VisibleColumns(),
		Committed:      s.store.CommittedEpoch,
		Target:         target,
		MaxPendingRows: spec.MaxPendingRows,
		Log:            s.log,
	})
	if s.sinks.m == nil {
		s.sinks.m = map[catalog.ObjectID]*sink.Worker{}
	}
	s.sinks.m[rel.ID] = w
	w.Start()
	return w, nil
}

// stopSinkWorker stops a sink's worker and waits for it (I3: before the
// log store is unregistered).
func (s *Service) stopSinkWorker(id catalog.ObjectID) {
	s.sinks.mu.Lock()
	w := s.sinks.m[id]
	delete(s.sinks.m, id)
	s.sinks.mu.Unlock()
	if w != nil {
		w.Stop()
	}
}

// stopSinkWorkers stops every worker (server shutdown).
func (s *Service) stopSinkWorkers() {
	s.sinks.mu.Lock()
	ids := make([]catalog.ObjectID, 0, len(s.sinks.m))
	for id := range s.sinks.m {
		ids = append(ids, id)
	}
	s.sinks.mu.Unlock()
	for _, id := range ids {
		s.stopSinkWorker(id)
	}
}

// sinkSpec is what a sink's job is instantiated with: its Sink executors
// write the log store that worker w delivers.
func (s *Service) sinkSpec(rel *catalog.Relation, w *sink.Worker, backfill bool) compute.JobSpec {
	spec := s.viewSpec(rel, backfill)
	spec.Name, spec.SinkLog = "sink "+rel.Name, w
	return spec
}

// rebuildSink recreates a sink's actors after recovery (like rebuildView)
// and tells its worker, starting it if this process has none yet.
func (s *Service) rebuildSink(ctx context.Context, rel *catalog.Relation, curr uint64) ([]compute.Pending, error) {
	spec, err := sink.ParseSpec(rel.Name, rel.Options)
	if err != nil {
		return nil, fmt.Errorf("rebuild sink %s: %w", rel.Name, err)
	}
	root, err := s.fe.PlanSink(rel, spec)
	if err != nil {
		return nil, fmt.Errorf("rebuild sink %s: %w", rel.Name, err)
	}
	w, err := s.startSinkWorker(rel, root)
	if err != nil {
		return nil, fmt.Errorf("rebuild sink %s: %w", rel.Name, err)
	}
	job, err := s.rebuildJob(rel, root, "sink "+rel.Name, s.sinkSpec(rel, w, false), curr)
	if err != nil {
		return nil, err
	}
	// The recovery may have lost the epoch carrying truncations.
	w.Rebuilt()
	return job, nil
}

// sinkStatus is a sink's worker progress and "running", "retrying" (its
// last delivery failed) or "stopped" (no worker).
func (s *Service) sinkStatus(id catalog.ObjectID) (sink.Status, string) {
	w := s.sinks.get(id)
	if w == nil {
		return sink.Status{}, "stopped"
	}
	st := w.Status()
	if st.LastError != "" {
		return st, "retrying"
	}
	return st, "running"
}
