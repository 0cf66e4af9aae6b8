package frontend

import (
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/stream/exec"
)

// streamingErrorRows lists, per streaming job, the errors it tolerated
// since the process started: expression errors turned into NULL and
// inconsistent inputs tolerated in non-strict mode (I6), with the latest
// one (exec/evalerr.go). A job that tolerated nothing has no row.
func streamingErrorRows(sc *sysCtx) [][]any {
	var out [][]any
	for _, e := range exec.JobErrorStats() {
		var db any
		if e.Group != 0 {
			db = sc.databaseName(catalog.ObjectID(e.Group))
		}
		out = append(out, []any{db, e.Job, e.ExprErrors, e.Inconsistencies, e.LastExecutor, e.LastError, e.LastAt})
	}
	return out
}

// failedJobRows lists rw_catalog.rw_failed_jobs: the session database's
// jobs the last rebuild could not start.
func failedJobRows(sc *sysCtx) [][]any {
	var out [][]any
	for _, j := range sc.ss.s.meta.JobFailures(sc.db.ID) {
		out = append(out, []any{int64(j.Rel.ID), j.Rel.Name, j.Rel.Kind.String(), j.Err.Error()})
	}
	return out
}
