package catalog

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/runneldb/runnel/internal/metastore"
)

// A Change is a catalog change written inside a metadata transaction that
// another component runs: the storage engine's version delta that
// registers or unregisters the relation's state tables. Catalog object
// and state tables then commit together or not at all, so a crash between
// "the catalog changed" and "storage changed" cannot happen (issue 13
// item 6; the tables stay owned by the version until their owner goes,
// I1, and are unregistered only with it, after its actors stopped, I3).
//
// Use: pass Write as the transaction body, then call Done with the
// transaction's outcome.
type Change struct {
	c     *Catalog
	what  string
	write func(ctx context.Context, tx *metastore.Tx) error
	apply func()
}

// Write writes the change in tx.
func (ch *Change) Write(ctx context.Context, tx *metastore.Tx) error { return ch.write(ctx, tx) }

// Done applies a committed change to the in-memory copy. After a failed
// transaction (err != nil) it reloads the copy from the store instead —
// an ambiguous commit may have landed — and returns err with context.
func (ch *Change) Done(ctx context.Context, err error) error {
	ch.c.mu.Lock()
	defer ch.c.mu.Unlock()
	if err != nil {
		if rerr := ch.c.reloadLocked(ctx); rerr != nil {
			return fmt.Errorf("catalog: %s: %w (and reloading the catalog failed: %v)", ch.what, err, rerr)
		}
		ch.c.version++
		return fmt.Errorf("catalog: %s: %w", ch.what, err)
	}
	ch.apply()
	ch.c.version++
	return nil
}

// CreateRelationChange is CreateRelation(ctx, rel, 0) as a Change: rel's
// state-table ids were allocated before (AllocateTableIDs); Write gives
// it its object id and stores it.
func (c *Catalog) CreateRelationChange(rel *Relation) *Change {
	return &Change{c: c, what: fmt.Sprintf("create %s %s", rel.Kind, rel.Name),
		write: func(ctx context.Context, tx *metastore.Tx) error {
			id, err := allocateIDs(ctx, tx, "object", 1)
			if err != nil {
				return err
			}
			rel.ID = ObjectID(id)
			return put(ctx, tx, rel.ID, objRelation, rel)
		},
		apply: func() { c.relations[rel.ID] = rel },
	}
}

// DropRelationChange is DropObject(ctx, rel.ID) as a Change.
func (c *Catalog) DropRelationChange(rel *Relation) *Change {
	return &Change{c: c, what: fmt.Sprintf("drop %s %s", rel.Kind, rel.Name),
		write: func(ctx context.Context, tx *metastore.Tx) error {
			_, err := tx.Exec(ctx, `DELETE FROM catalog_object WHERE id = $1`, int64(rel.ID))
			return err
		},
		apply: func() { delete(c.relations, rel.ID) },
	}
}

// OwnedStateTables lists every state table of the relation: the ones of
// its stream graph, or its single row table.
func (r *Relation) OwnedStateTables() []TableID {
	if len(r.StateTables) > 0 {
		return append([]TableID(nil), r.StateTables...)
	}
	if r.StateTable != 0 {
		return []TableID{r.StateTable}
	}
	return nil
}

// StateTableOwners reads the stored catalog (not a running server's
// copy) and maps every state table a relation owns to
// "kind name" of its owner. ctl storage check compares it with the
// storage version's tables. It creates the catalog's tables when a data
// directory has none yet (as the storage check creates storage's).
func StateTableOwners(ctx context.Context, db *metastore.DB) (map[TableID]string, error) {
	if err := createSchema(ctx, db); err != nil {
		return nil, err
	}
	out := map[TableID]string{}
	rows, err := db.Query(ctx, `SELECT id, payload FROM catalog_object WHERE kind = $1`, objRelation)
	if err != nil {
		return nil, fmt.Errorf("catalog: read relations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var payload string
		if err := rows.Scan(&id, &payload); err != nil {
			return nil, fmt.Errorf("catalog: read relations: %w", err)
		}
		var r Relation
		if err := json.Unmarshal([]byte(payload), &r); err != nil {
			return nil, fmt.Errorf("catalog: relation %d: corrupt payload: %w", id, err)
		}
		for _, t := range r.OwnedStateTables() {
			out[t] = r.Kind.String() + " " + r.Name
		}
	}
	return out, rows.Err()
}
