package server

import (
	"context"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/storage"
)

// StateSize counts the committed rows and key+value bytes of the internal
// state tables of the named materialized view: every state table of its
// job except the view's own rows (aggregation groups, join sides, source
// positions ...). Benchmarks and tests use it to see whether state stays
// bounded (watermark cleanup).
func (s *Server) StateSize(ctx context.Context, view string) (rows, bytes int64, err error) {
	var tables []storage.TableID
	found := false
	for _, r := range s.catalog.Relations(nil) {
		if r.Name != view || len(r.StateTables) == 0 {
			continue
		}
		found = true
		for _, id := range r.StateTables {
			if id != r.StateTable {
				tables = append(tables, storage.TableID(id))
			}
		}
	}
	if !found {
		return 0, 0, sqlerr.Errorf(sqlerr.UndefinedTable, "materialized view %q does not exist", view)
	}
	snap := s.store.Snapshot()
	defer snap.Close()
	for _, id := range tables {
		it, err := snap.Iter(ctx, id, nil, nil, storage.ReadOptions{})
		if err != nil {
			return 0, 0, err
		}
		for it.Next() {
			rows++
			bytes += int64(len(it.Key()) + len(it.Value()))
		}
		err = it.Err()
		it.Close()
		if err != nil {
			return 0, 0, err
		}
	}
	return rows, bytes, nil
}
