package metasrv

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/connector/pgcdc"
	"github.com/runneldb/runnel/internal/sqlerr"
)

// dropCascade drops rel after everything that depends on it, dependents
// first (see dropOrder: no recursion over the dependency graph, I9).
func (s *Service) dropCascade(ctx context.Context, rel *catalog.Relation) error {
	for _, r := range s.dropOrder(rel) {
		if _, ok := s.catalog.Relation(r.ID); !ok {
			continue // dropped meanwhile
		}
		if err := s.dropRelation(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// dropRelation drops one relation whose dependents are gone.
func (s *Service) dropRelation(ctx context.Context, rel *catalog.Relation) error {
	switch rel.Kind {
	case catalog.KindTable:
		return s.dropTable(ctx, rel)
	case catalog.KindMaterializedView, catalog.KindIndex:
		return s.dropView(ctx, rel)
	case catalog.KindSink:
		return s.dropView(ctx, rel) // stops its worker too (I3)
	case catalog.KindView, catalog.KindSource:
		return s.catalog.DropObject(ctx, rel.ID)
	}
	return sqlerr.Errorf(sqlerr.FeatureNotSupported, "DROP %s is not supported yet", strings.ToUpper(rel.Kind.String()))
}

// dropTable stops the table's actor at a barrier, joins it, and only then
// unregisters its state table and removes it from the catalog (I3: state
// is purged only after nothing can touch it).
func (s *Service) dropTable(ctx context.Context, rel *catalog.Relation) error {
	defer s.markDropping(rel.ID)()
	if err := s.stopJob(ctx, rel); err != nil {
		return fmt.Errorf("drop table %s: %w", rel.Name, err)
	}
	if err := s.dropWithState(ctx, rel); err != nil { // one transaction (statecatalog.go)
		return err
	}
	s.dropCDCSlot(rel) // the actor is stopped: nothing reads the slot any more
	return nil
}

// dropOrder lists root and everything that depends on it, each once,
// dependents before what they depend on (an iterative post-order walk).
func (s *Service) dropOrder(root *catalog.Relation) []*catalog.Relation {
	type frame struct {
		rel  *catalog.Relation
		deps []*catalog.Relation
		next int
	}
	seen := map[catalog.ObjectID]bool{root.ID: true}
	stack := []*frame{{rel: root, deps: s.catalog.Dependents(root.ID)}}
	var order []*catalog.Relation
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		if f.next < len(f.deps) {
			d := f.deps[f.next]
			f.next++
			if !seen[d.ID] {
				seen[d.ID] = true
				stack = append(stack, &frame{rel: d, deps: s.catalog.Dependents(d.ID)})
			}
			continue
		}
		order = append(order, f.rel)
		stack = stack[:len(stack)-1]
	}
	return order
}

// cdcDropTimeout bounds DROP's round trip to a CDC table's upstream.
const cdcDropTimeout = 30 * time.Second

// dropCDCSlot drops a dropped CDC table's slot, after its actor stopped,
// so the upstream keeps no WAL for it. An unreachable upstream leaves the
// slot: the returned notice names it.
func (s *Service) dropCDCSlot(rel *catalog.Relation) string {
	if !strings.EqualFold(rel.Options["connector"], pgcdc.Connector) {
		return ""
	}
	cfg, err := pgcdc.ParseTableOptions(rel.Options)
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), cdcDropTimeout)
	defer cancel()
	if err := pgcdc.DropSlot(ctx, cfg, cfg.Slot); err != nil {
		s.log.Warn("drop table: replication slot not dropped", "table", rel.Name, "slot", cfg.Slot, "err", err)
		return "replication slot " + cfg.Slot + " of table " + rel.Name + " could not be dropped upstream (" + err.Error() + "); drop it there with pg_drop_replication_slot, or it keeps WAL"
	}
	return ""
}

// createTable allocates a new table's state tables, registers them with
// its catalog entry in one transaction and starts its actor. Order:
// allocate state-table ids, register them in the storage version, store
// the catalog entry, start the actor. A crash between the steps leaves at
// worst an empty registered table that no catalog entry names: no data
// can be lost or half-visible.
func (s *Service) createTable(ctx context.Context, rel *catalog.Relation, nTables int) error {
	ids, err := s.catalog.AllocateTableIDs(ctx, nTables)
	if err != nil {
		return err
	}
	rel.StateTable = ids[0]
	if nTables > 1 {
		rel.StateTables = ids
	}
	tids := relationStateTables(rel)
	if err := s.createWithState(ctx, rel, tids); err != nil { // one transaction (statecatalog.go)
		return err
	}
	if err := s.epochs.WithGraphLock(func(curr uint64) error { return s.compute.SpawnTable(ctx, rel, curr) }); err != nil {
		if derr := s.purgeRelation(context.Background(), rel); derr != nil {
			s.log.Error("drop table whose actor could not start", "table", rel.Name, "err", derr)
		}
		return err
	}
	crashPoint("create-table/after-start", rel.Name)
	return nil
}

// replaceTableColumns gives a table the columns of nr (appended ones; see
// the frontend's ingest): its actor is stopped at a barrier and started
// again with the new columns.
func (s *Service) replaceTableColumns(ctx context.Context, rel, nr *catalog.Relation) error {
	if err := s.stopJob(ctx, rel); err != nil {
		return fmt.Errorf("add columns to %s: %w", rel.Name, err)
	}
	if err := s.catalog.UpdateRelation(ctx, nr); err != nil {
		// The table keeps its columns: start its actor again as it was.
		if serr := s.epochs.WithGraphLock(func(curr uint64) error { return s.compute.SpawnTable(ctx, rel, curr) }); serr != nil {
			s.log.Error("restart the actor of a table whose column addition failed", "table", rel.Name, "err", serr)
		}
		return err
	}
	if err := s.epochs.WithGraphLock(func(curr uint64) error { return s.compute.SpawnTable(ctx, nr, curr) }); err != nil {
		return err
	}
	return nil
}
