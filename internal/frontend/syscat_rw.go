package frontend

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/connector"
)

// rw_catalog: Runnel's own system tables (RisingWave keeps its in a schema
// of that name). They are resolved schema-qualified, or unqualified after
// search_path (a user's relation of the same name wins).

const rwCatalog = "rw_catalog"

func rwSysTables() []*sysTable {
	rw := func(name, spec string, rows func(*sysCtx) [][]any) *sysTable {
		return &sysTable{schema: rwCatalog, name: name, cols: cols(spec), rows: rows}
	}
	return []*sysTable{
		rw("rw_actors", "actor_id int4, database text, job text, fragment int4, root text, state text, since timestamptz, duration interval, waiting_on text", actorRows),
		rw("rw_recovery_history", `started_at timestamptz, database text, reason text, reset_ms float8, rebuild_ms float8,
			epoch int8, error text, abandoned text`, recoveryRows),
		rw("rw_tables", "id int4, name text, schema_id int4, owner text, definition text, append_only bool", relationRows(catalog.KindTable)),
		rw("rw_materialized_views", "id int4, name text, schema_id int4, owner text, definition text, append_only bool", relationRows(catalog.KindMaterializedView)),
		rw("rw_indexes", "id int4, name text, primary_table_id int4, schema_id int4, owner text, definition text", indexRowsRW),
		rw("rw_views", "id int4, name text, schema_id int4, owner text, definition text, append_only bool", relationRows(catalog.KindView)),
		rw("rw_streaming_errors", `database text, job text, expression_errors int8, inconsistencies int8,
			last_executor text, last_error text, last_at timestamptz`, streamingErrorRows),
		rw("rw_sources", "id int4, name text, schema_id int4, owner text, definition text, append_only bool", relationRows(catalog.KindSource)),
		rw("rw_source_stats", "name text, rows int8, malformed int8, last_malformed text, status text, caught_up bool, notices text", sourceStatsRows),
		rw("rw_sinks", `id int4, name text, schema_id int4, owner text, connector text, sink_type text, definition text, append_only bool,
			status text, pending_rows int8, pending_epochs int4, delivered_epoch int8, delivered_rows int8, last_error text`, sinkRows), // sink.go
		rw("rw_failed_jobs", "id int4, name text, kind text, error text", failedJobRows), // statecatalog.go
		rw("rw_worker_nodes", "id int4, host text, port int4, type text, state text, parallelism int4, started_at timestamptz", workerNodeRows),
	}
}

// workerNodeRows lists the cluster's nodes as the metadata store has them
// (internal/cluster): one row per node incarnation, its roles as type.
func workerNodeRows(sc *sysCtx) [][]any {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes, err := sc.ss.s.meta.WorkerNodes(ctx)
	if err != nil {
		sc.err = err
		return nil
	}
	out := make([][]any, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, []any{n.ID, n.Host, int64(n.Port), strings.Join(n.Roles, ","), n.State, int64(n.Parallelism), n.StartedAt})
	}
	return out
}

// relationRows lists the session database's relations of one kind, as
// RisingWave's rw_tables, rw_materialized_views, ... do: id, name, schema,
// owner, and a statement that creates the relation (SHOW CREATE's).
func relationRows(kind catalog.RelationKind) func(*sysCtx) [][]any {
	return func(sc *sysCtx) [][]any {
		var out [][]any
		for _, r := range sc.rels {
			if r.Kind != kind {
				continue
			}
			_, def := createStatement(sc.cat, r)
			out = append(out, []any{int64(r.ID), r.Name, int64(r.SchemaID), r.Owner, def, r.AppendOnly})
		}
		return out
	}
}

// actorRows lists every running actor of the process: its job and
// fragment (numbered as EXPLAIN CREATE MATERIALIZED VIEW numbers them), the
// root executor of its chain, what it is doing now and since when.
func actorRows(sc *sysCtx) [][]any {
	actors, dbOf := sc.ss.s.meta.Actors()
	sort.Slice(actors, func(i, j int) bool { return actors[i].ID < actors[j].ID })
	now := time.Now()
	out := make([][]any, 0, len(actors))
	for _, a := range actors {
		var since, dur any
		if !a.Since.IsZero() {
			since, dur = a.Since, now.Sub(a.Since)
		}
		var db any
		if id, ok := dbOf[a.ID]; ok {
			db = sc.databaseName(id)
		}
		var waitingOn any // the actor's await tree (stream.AwaitTree); NULL once it exited
		if a.WaitingOn != "" {
			waitingOn = a.WaitingOn
		}
		out = append(out, []any{int64(a.ID), db, a.Job, a.Fragment, a.Root, a.State, since, dur, waitingOn})
	}
	return out
}

// databaseName names a database by id (NULL when it no longer exists).
func (sc *sysCtx) databaseName(id catalog.ObjectID) any {
	for _, d := range sc.cat.Databases() {
		if d.ID == id {
			return d.Name
		}
	}
	return nil
}

// recoveryRows lists past recoveries, oldest first.
func recoveryRows(sc *sysCtx) [][]any {
	recs := sc.ss.s.meta.Recoveries()
	out := make([][]any, 0, len(recs))
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for _, r := range recs {
		var errText any
		if r.Err != "" {
			errText = r.Err
		}
		var db any // NULL: the whole graph was recovered
		if r.Database != 0 {
			db = sc.databaseName(catalog.ObjectID(r.Database))
		}
		var abandoned any // actors the recovery had to abandon (stuck), or NULL
		if r.Abandoned != "" {
			abandoned = r.Abandoned
		}
		out = append(out, []any{r.Start, db, r.Reason, ms(r.Reset), ms(r.Rebuild), int64(r.Epoch), errText, abandoned})
	}
	return out
}

// sourceStatsRows lists what the executors of external connectors report
// (connector.AllStats): rows delivered, malformed records skipped (the last
// one located), and "running" or "retrying: <error>".
func sourceStatsRows(sc *sysCtx) [][]any {
	var out [][]any
	for _, st := range connector.AllStats() {
		out = append(out, []any{st.Name, st.Rows, st.Skipped, st.LastSkipped, st.Status, st.CaughtUp, st.Notices})
	}
	return out
}

// indexRowsRW is rw_indexes: the database's indexes with the relation
// each indexes (primary_table_id) and its CREATE INDEX statement.
func indexRowsRW(sc *sysCtx) [][]any {
	var out [][]any
	for _, x := range sc.indexes {
		_, def := indexText(sc.cat, x)
		out = append(out, []any{int64(x.ID), x.Name, int64(x.Index.On), int64(x.SchemaID), x.Owner, def})
	}
	return out
}
