package server

import "github.com/runneldb/runnel/internal/sqlerr"

// SourceRows returns how many rows the connector sources read by the named
// materialized view have emitted since its job (re)started, summed over
// every split. Benchmarks use it to draw progress; it is a counter, not a
// committed position, so after a recovery it restarts from the rebuilt
// job's resume point.
func (s *Server) SourceRows(view string) (int64, error) {
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
