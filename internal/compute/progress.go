package compute

import (
	"time"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/exec"
)

// SourceRows returns how many rows the connector sources read by the named
// materialized view have emitted since its job (re)started, summed over
// every split. Benchmarks use it to draw progress; it is a counter, not a
// committed position, so after a recovery it restarts from the rebuilt
// job's resume point.
func (s *Node) SourceRows(view string) (int64, error) {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	for _, v := range s.jobs.views {
		if v.rel.Name == view {
			var n int64
			for _, src := range v.sources {
				n += src.Rows.Load()
			}
			return n, nil
		}
	}
	return 0, sqlerr.Errorf(sqlerr.UndefinedTable, "materialized view %q is not running", view)
}

// jobActors maps each running job (by relation id) to its actors.
func (s *Node) jobActors() map[catalog.ObjectID][]stream.ActorID {
	out := map[catalog.ObjectID][]stream.ActorID{}
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	for id, t := range s.jobs.tables {
		out[id] = []stream.ActorID{t.actor}
	}
	for id, v := range s.jobs.views {
		out[id] = append([]stream.ActorID(nil), v.actors...)
	}
	return out
}

// actorDatabases maps every running actor to its job's database.
func (s *Node) actorDatabases() map[stream.ActorID]catalog.ObjectID {
	dbOf := map[stream.ActorID]catalog.ObjectID{}
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	for _, t := range s.jobs.tables {
		dbOf[t.actor] = t.rel.DatabaseID
	}
	for _, v := range s.jobs.views {
		for _, a := range v.actors {
			dbOf[a] = v.rel.DatabaseID
		}
	}
	return dbOf
}

// Backfill is the progress of a job being created.
type Backfill struct {
	Rel       *catalog.Relation
	Rows      int64 // rows backfilled so far
	Done      int   // upstream actors whose backfill is done
	Upstreams int
	Started   time.Time
}

// Backfills lists the jobs being created (their relation is Creating),
// with their backfill progress.
func (s *Node) Backfills() []Backfill {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	var out []Backfill
	for _, v := range s.jobs.views {
		if !v.rel.Creating {
			continue
		}
		b := Backfill{Rel: v.rel, Upstreams: len(v.backfills), Started: v.started}
		for _, bf := range v.backfills {
			b.Rows += bf.Rows.Load()
			if bf.Finished.Load() {
				b.Done++
			}
		}
		out = append(out, b)
	}
	return out
}

// TableIngest returns the connector feed of the running table named name
// (nil: no such table runs, or it has no connector).
func (s *Node) TableIngest(name string) *exec.TableIngest {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	for _, j := range s.jobs.tables {
		if j.rel.Name == name && j.ingest != nil {
			return j.ingest
		}
	}
	return nil
}
