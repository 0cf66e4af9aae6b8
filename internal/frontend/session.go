package frontend

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/batch"
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/meta"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sink"
	"github.com/runneldb/runnel/internal/sql"
	"github.com/runneldb/runnel/internal/sql/parser"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// session is one client's SQL session.
type session struct {
	s      *Frontend
	client pgwire.ClientConn
	db     *catalog.Database
	user   *catalog.User

	mu       sync.Mutex
	settings map[string]string
	// inTxBlock is set between BEGIN and COMMIT/ROLLBACK; tx holds the
	// block's snapshot and pending writes from its first statement on
	// (txn.go).
	inTxBlock bool
	tx        *txn
	// txFailed: an error happened inside the block; statements other than
	// COMMIT/ROLLBACK fail with 25P02 until the block ends (PostgreSQL's
	// behaviour, which drivers rely on).
	txFailed bool
	// txWrote: a write was staged inside the block.
	txWrote bool
	// savepoints are the block's open savepoints, oldest first (txn.go).
	savepoints []savepoint
	// written holds the distinct epochs this session's acknowledged writes
	// went to since its last FLUSH, ascending.
	written []uint64

	// backend is the session's connection (nil when it has none: SQL
	// over HTTP, MySQL); remote and started describe it. A session with
	// a backend is in s.sessions until Close (activity.go).
	backend pgwire.Backend
	remote  net.Addr
	started time.Time
}

// settingDefaults are the session parameters and their defaults, as
// PostgreSQL (and RisingWave, for the streaming ones) name them.
var settingDefaults = map[string]string{
	"application_name":            "",
	"client_encoding":             "UTF8",
	"datestyle":                   "ISO, MDY",
	"intervalstyle":               "postgres",
	"timezone":                    "UTC",
	"extra_float_digits":          "1",
	"search_path":                 `"$user", public`,
	"server_version":              "15.0",
	"server_version_num":          "150000",
	"server_encoding":             "UTF8",
	"standard_conforming_strings": "on",
	"integer_datetimes":           "on",
	// A block reads one snapshot with first-committer-wins on the rows it
	// writes (txn.go): PostgreSQL's repeatable read.
	"transaction_isolation":         "repeatable read",
	"default_transaction_isolation": "repeatable read",
	"statement_timeout":             "0",
	// query_memory_limit bounds what one batch statement keeps in memory
	// (sorts, hash tables, window rows, aggregate states); past it the
	// statement fails with 53200 (internal/batch/memory.go). Default: an
	// eighth of the machine's (or cgroup's) memory.
	"query_memory_limit":    batch.FormatMemory(batch.DefaultQueryMemoryLimit()),
	"bytea_output":          "hex",
	"implicit_flush":        "off",
	"streaming_parallelism": "0",
	"max_identifier_length": "63",
	"lc_collate":            "C",
	"lc_ctype":              "C",
	"client_min_messages":   "notice",
	// RisingWave's planner and cluster settings (plannerSettings).
	"enable_two_phase_agg":           "true",
	"rw_force_two_phase_agg":         "false",
	"rw_force_split_distinct_agg":    "false",
	"rw_streaming_enable_delta_join": "false",
	"create_compaction_group_for_mv": "false",
	"query_mode":                     "auto",
	"visibility_mode":                "default",
	"allow_drop_cascade":             "false",
	"rw_batch_enable_lookup_join":    "true",
	"background_ddl":                 "false",
	// PostgreSQL's planner method switches (pgPlannerSettings).
	"enable_hashjoin":   "on",
	"enable_mergejoin":  "on",
	"enable_nestloop":   "on",
	"enable_hashagg":    "on",
	"enable_sort":       "on",
	"enable_seqscan":    "on",
	"enable_indexscan":  "on",
	"enable_bitmapscan": "on",
}

// pgPlannerSettings are PostgreSQL's planner method switches: they steer
// PostgreSQL's choice between plans that give the same rows, and Runnel has
// one plan for each query, so they change no result. They are Booleans,
// accepted, checked and shown on/off as PostgreSQL does (tests that pin a
// join method, as RisingWave's sort-merge join test does, run unchanged).
var pgPlannerSettings = map[string]bool{
	"enable_hashjoin": true, "enable_mergejoin": true, "enable_nestloop": true,
	"enable_hashagg": true, "enable_sort": true, "enable_seqscan": true,
	"enable_indexscan": true, "enable_bitmapscan": true,
}

// plannerSettings are RisingWave session settings that choose between plan
// shapes or cluster placements Runnel does not have (two-phase aggregation,
// delta joins, compaction groups, local vs distributed batch execution,
// reading uncommitted epochs): Runnel plans one way and reads committed
// epochs, so their values change no result. allow_drop_cascade is RisingWave's
// test switch for DROP ... CASCADE, which Runnel always allows. They are accepted, checked and
// shown as RisingWave does, so SQL written for RisingWave runs unchanged.
// The value is the set of allowed values; nil means a Boolean.
var plannerSettings = map[string][]string{
	"enable_two_phase_agg":           nil,
	"rw_force_two_phase_agg":         nil,
	"rw_force_split_distinct_agg":    nil,
	"rw_streaming_enable_delta_join": nil,
	"create_compaction_group_for_mv": nil,
	"query_mode":                     {"auto", "local", "distributed"},
	"visibility_mode":                {"default", "all", "checkpoint"},
	"allow_drop_cascade":             nil,
	"rw_batch_enable_lookup_join":    nil,
	// background_ddl: RisingWave returns from CREATE before the backfill
	// ends; Runnel's CREATE returns once the view is complete, which is
	// what WAIT after a background CREATE gives.
	"background_ddl": nil,
}

// settingAliases maps accepted alternative names to canonical ones.
var settingAliases = map[string]string{
	"rw_implicit_flush": "implicit_flush",
}

// reportedSettings are sent to the client as ParameterStatus on change.
var reportedSettings = map[string]string{
	"application_name": "application_name",
	"client_encoding":  "client_encoding",
	"datestyle":        "DateStyle",
	"intervalstyle":    "IntervalStyle",
	"timezone":         "TimeZone",
}

func newSession(s *Frontend, db *catalog.Database, u *catalog.User, params pgwire.StartupParams, client pgwire.ClientConn) *session {
	sess := &session{s: s, db: db, user: u, settings: map[string]string{},
		backend: params.Backend, remote: params.RemoteAddr, started: time.Now()}
	sess.client = &minMessagesFilter{ClientConn: client, ss: sess}
	for k, v := range settingDefaults {
		sess.settings[k] = v
	}
	sess.settings["application_name"] = params.ApplicationName
	for _, m := range []map[string]string{params.Other, params.Options} {
		for k, v := range m {
			sess.startupSetting(k, v)
		}
	}
	if sess.backend != nil {
		s.sessions.add(sess)
	}
	return sess
}

// startupSetting applies a parameter given at connection startup, with
// the aliases and canonical Boolean spelling SET uses; unknown or invalid
// ones are ignored (PostgreSQL would refuse the connection for an invalid
// value; clients pass many parameters Runnel does not know).
func (sess *session) startupSetting(k, v string) {
	name := strings.ToLower(k)
	if alias, ok := settingAliases[name]; ok {
		name = alias
	}
	if _, ok := settingDefaults[name]; !ok {
		return
	}
	if name == "client_min_messages" {
		if _, ok := messageLevels[strings.ToLower(v)]; !ok {
			return
		}
		v = strings.ToLower(v)
	}
	if name == "implicit_flush" {
		b, ok := parseBoolSetting(v)
		if !ok {
			return
		}
		v = map[bool]string{true: "on", false: "off"}[b]
	}
	sess.settings[name] = v
}

func (ss *session) setting(name string) string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.settings[name]
}

// location is the session TimeZone.
func (ss *session) location() *time.Location {
	loc, err := time.LoadLocation(ss.setting("timezone"))
	if err != nil {
		return time.UTC
	}
	return loc
}

func (ss *session) implicitFlush() bool {
	v := strings.ToLower(ss.setting("implicit_flush"))
	return v == "on" || v == "true" || v == "1"
}

func (ss *session) TxStatus() pgwire.TxStatus {
	if ss.inTxBlock && ss.txFailed {
		return pgwire.TxFailed
	}
	if ss.inTxBlock {
		return pgwire.TxActive
	}
	return pgwire.TxIdle
}

func (ss *session) Close() {
	if ss.backend != nil {
		ss.s.sessions.remove(ss)
	}
	ss.endTxn()
}

// OnError implements pgwire.Session: an error aborts an open block.
func (ss *session) OnError(err error) {
	if ss.inTxBlock {
		ss.txFailed = true
	}
}

// Parse implements pgwire.Session.
func (ss *session) Parse(ctx context.Context, text string, paramOIDs []uint32) ([]pgwire.Statement, error) {
	stmts, err := parser.Parse(text)
	if err != nil {
		return nil, err
	}
	out := make([]pgwire.Statement, len(stmts))
	for i, p := range stmts {
		out[i] = &statement{sess: ss, p: p, paramOIDs: paramOIDs}
	}
	return out, nil
}

// statement is one parsed statement of a session.
type statement struct {
	sess      *session
	p         *parser.Statement
	paramOIDs []uint32
	// bound is the binding kept for the next execution while boundKey
	// still holds (see prepare).
	bound    *sql.Prepared
	boundKey bindingKey
}

func (st *statement) Close() {}

// Describe implements pgwire.Statement.
func (st *statement) Describe(ctx context.Context) (pgwire.StatementDescription, error) {
	if r, ok := st.p.Runnel.(*parser.TQL); ok {
		cols, err := st.describeTQL(ctx, r) // tql.go
		return pgwire.StatementDescription{Columns: cols}, err
	}
	if r := st.p.Runnel; r != nil && handledDirectly(r) {
		return st.describeRunnel(r)
	}
	if st.p.Runnel != nil {
		return st.describeSQL(ctx)
	}
	switch n := st.p.AST.Node.(type) {
	case *pg_query.Node_VariableShowStmt:
		// The description is that of the result, whose column is named
		// after the canonical parameter (aliases resolved), so Describe
		// and Execute agree.
		r, err := st.sess.show(n.VariableShowStmt.Name)
		if err != nil {
			return pgwire.StatementDescription{}, err
		}
		return pgwire.StatementDescription{Columns: r.Columns}, nil
	case *pg_query.Node_VariableSetStmt, *pg_query.Node_TransactionStmt, *pg_query.Node_AlterSystemStmt, *pg_query.Node_RenameStmt, *pg_query.Node_CommentStmt, *pg_query.Node_AlterTableStmt:
		return pgwire.StatementDescription{}, nil
	}
	return st.describeSQL(ctx)
}

// Execute implements pgwire.Statement.
func (st *statement) Execute(ctx context.Context, params []types.Datum) (pgwire.Result, error) {
	if kind, objects, ok := ddlStatement(st.p); ok {
		start := time.Now()
		res, err := st.execute(ctx, params)
		st.sess.logDDL(kind, objects, time.Since(start), err) // ddllog.go
		return res, err
	}
	return st.execute(ctx, params)
}

func (st *statement) execute(ctx context.Context, params []types.Datum) (pgwire.Result, error) {
	if st.sess.txFailed {
		if ts := st.p.AST.GetTransactionStmt(); st.p.AST == nil || ts == nil ||
			(ts.Kind != pg_query.TransactionStmtKind_TRANS_STMT_COMMIT && ts.Kind != pg_query.TransactionStmtKind_TRANS_STMT_ROLLBACK &&
				ts.Kind != pg_query.TransactionStmtKind_TRANS_STMT_ROLLBACK_TO) {
			return pgwire.Result{}, sqlerr.New(sqlerr.InFailedSQLTransaction, "current transaction is aborted, commands ignored until end of transaction block")
		}
	}
	if r := st.p.Runnel; r != nil && handledDirectly(r) {
		return st.executeRunnel(ctx, r)
	}
	if st.p.Runnel != nil {
		return st.executeSQL(ctx, params)
	}
	switch n := st.p.AST.Node.(type) {
	case *pg_query.Node_VariableSetStmt:
		return st.sess.set(n.VariableSetStmt)
	case *pg_query.Node_VariableShowStmt:
		return st.sess.show(n.VariableShowStmt.Name)
	case *pg_query.Node_TransactionStmt:
		return st.sess.transaction(ctx, n.TransactionStmt)
	case *pg_query.Node_AlterSystemStmt:
		return st.sess.alterSystem(ctx, n.AlterSystemStmt)
	case *pg_query.Node_RenameStmt:
		return st.sess.rename(ctx, n.RenameStmt)
	case *pg_query.Node_CommentStmt:
		return st.sess.comment(ctx, n.CommentStmt)
	case *pg_query.Node_AlterTableStmt:
		return st.alterTable(ctx, n.AlterTableStmt)
	}
	return st.executeSQL(ctx, params)
}

// handledDirectly reports whether a Runnel statement is run by the session
// itself rather than bound (CREATE SOURCE goes through the binder).
func handledDirectly(r parser.RunnelStmt) bool {
	switch r.(type) {
	case *parser.Flush, *parser.Recover, *parser.ShowObjects, *parser.Describe, *parser.ShowColumns,
		*parser.ShowCreate, *parser.CancelJobs, *parser.CreateSink, *parser.DropSink, *parser.TQL, *parser.AlterRename,
		*parser.Kill:
		return true
	}
	return false
}

func (st *statement) describeRunnel(r parser.RunnelStmt) (pgwire.StatementDescription, error) {
	res, err := st.runnelColumns(r)
	return pgwire.StatementDescription{Columns: res}, err
}

func (st *statement) executeRunnel(ctx context.Context, r parser.RunnelStmt) (pgwire.Result, error) {
	ss := st.sess
	switch r := r.(type) {
	case *parser.Flush:
		if err := ss.flush(ctx); err != nil {
			return pgwire.Result{}, err
		}
		return pgwire.Result{Tag: "FLUSH"}, nil
	case *parser.AlterParallelism:
		return ss.alterParallelism(r)
	case *parser.Wait:
		// Runnel's DDL runs in the foreground (background_ddl is
		// accepted and changes nothing), so only other sessions' CREATEs
		// can be in progress: wait for them, as RisingWave's WAIT does.
		for len(ss.s.meta.CreatingJobs()) > 0 {
			select {
			case <-ctx.Done():
				return pgwire.Result{}, ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
		return pgwire.Result{Tag: "WAIT"}, nil
	case *parser.Recover:
		if !ss.user.Superuser {
			return pgwire.Result{}, sqlerr.New(sqlerr.InsufficientPrivilege, "must be superuser to run RECOVER")
		}
		if err := ss.s.meta.Recover(ctx, "RECOVER statement from user "+ss.user.Name); err != nil {
			return pgwire.Result{}, fmt.Errorf("recover: %w", err)
		}
		return pgwire.Result{Tag: "RECOVER"}, nil
	case *parser.ShowObjects:
		return st.showObjects(ctx, r)
	case *parser.Describe:
		return st.describe(r.Schema, r.Name, true)
	case *parser.ShowColumns:
		return st.describe(r.Schema, r.Name, false)
	case *parser.ShowCreate:
		return st.showCreate(r)
	case *parser.ShowIndexes:
		return st.showIndexes(r) // index.go
	case *parser.AlterRename:
		kind := catalog.KindSource
		if r.Sink {
			kind = catalog.KindSink
		}
		if r.Owner != "" {
			return pgwire.Result{Tag: "ALTER " + strings.ToUpper(kind.String())}, ss.alterOwnerOf(ctx, kind, r.Schema, r.Name, r.Owner, r.IfExists) // owner.go
		}
		return pgwire.Result{Tag: "ALTER " + strings.ToUpper(kind.String())}, ss.renameRelation(ctx, kind, r.Schema, r.Name, r.NewName, r.IfExists)
	case *parser.CancelJobs:
		return st.cancelJobs(ctx, r.IDs)
	case *parser.Kill:
		return ss.kill(r.PID) // activity.go
	case *parser.CreateSink:
		return ss.createSink(ctx, r) // sink.go
	case *parser.DropSink:
		return ss.dropSinkStmt(ctx, r)
	case *parser.TQL:
		return st.executeTQL(ctx, r) // tql.go
	}
	return pgwire.Result{}, sqlerr.Errorf(sqlerr.FeatureNotSupported, "statement not supported yet: %s", st.p.Text)
}

func (st *statement) runnelColumns(r parser.RunnelStmt) ([]pgwire.Column, error) {
	switch r := r.(type) {
	case *parser.ShowObjects:
		if r.Kind == parser.ShowJobs {
			return []pgwire.Column{{Name: "Id", Type: types.Int64}, {Name: "Statement", Type: types.Varchar}, {Name: "Progress", Type: types.Varchar}}, nil
		}
		if r.Kind == parser.ShowCluster {
			return showClusterColumns, nil
		}
		if r.Kind == parser.ShowProcessList {
			return showProcessListColumns, nil
		}
		return []pgwire.Column{{Name: "Name", Type: types.Varchar}}, nil
	case *parser.Describe, *parser.ShowColumns:
		return describeColumns, nil
	case *parser.ShowCreate:
		return showCreateColumns, nil
	case *parser.ShowIndexes:
		return showIndexesColumns, nil
	case *parser.CancelJobs:
		return cancelJobsColumns, nil
	}
	return nil, nil
}

// showClusterColumns are SHOW CLUSTER's: one row per node (the rows of
// rw_catalog.rw_worker_nodes, with the last heartbeat).
var showClusterColumns = []pgwire.Column{{Name: "Id", Type: types.Int64}, {Name: "Addr", Type: types.Varchar},
	{Name: "Type", Type: types.Varchar}, {Name: "State", Type: types.Varchar}, {Name: "Parallelism", Type: types.Int64},
	{Name: "Started At", Type: types.Timestamptz}, {Name: "Last Heartbeat", Type: types.Timestamptz}}

// showObjects answers SHOW TABLES / DATABASES / SCHEMAS / MATERIALIZED VIEWS / JOBS.
func (st *statement) showObjects(ctx context.Context, r *parser.ShowObjects) (pgwire.Result, error) {
	ss := st.sess
	cols, _ := st.runnelColumns(r)
	var rows []types.Row
	switch r.Kind {
	case parser.ShowDatabases:
		for _, d := range ss.s.catalog.Databases() {
			rows = append(rows, types.Row{types.DVarchar(d.Name)})
		}
	case parser.ShowSchemas:
		for _, s := range ss.s.catalog.Schemas(ss.db.ID) {
			rows = append(rows, types.Row{types.DVarchar(s.Name)})
		}
	case parser.ShowCluster:
		nodes, err := ss.s.meta.WorkerNodes(ctx)
		if err != nil {
			return pgwire.Result{}, fmt.Errorf("SHOW CLUSTER: %w", err)
		}
		for _, n := range nodes {
			rows = append(rows, types.Row{types.DInt64(n.ID), types.DVarchar(net.JoinHostPort(n.Host, strconv.Itoa(n.Port))),
				types.DVarchar(strings.Join(n.Roles, ",")), types.DVarchar(n.State), types.DInt64(int64(n.Parallelism)),
				types.DTimestamptz(n.StartedAt.UnixMicro()), types.DTimestamptz(n.Heartbeat.UnixMicro())})
		}
	case parser.ShowProcessList:
		return ss.showProcessList(), nil // activity.go
	case parser.ShowJobs:
		for _, j := range ss.s.meta.CreatingJobs() {
			rows = append(rows, types.Row{types.DInt64(int64(j.ID)), types.DVarchar(j.Definition), types.DVarchar(j.Progress)})
		}
		for _, j := range ss.s.meta.JobFailures(ss.db.ID) {
			rows = append(rows, types.Row{types.DInt64(int64(j.Rel.ID)), types.DVarchar(strings.ToUpper(j.Rel.Kind.String()) + " " + j.Rel.Name), types.DVarchar("failed: " + j.Err.Error())})
		}
	default:
		schemaName := r.Schema
		if schemaName == "" {
			schemaName = catalog.DefaultSchema
		}
		sc, err := ss.s.catalog.SchemaByName(ss.db.ID, schemaName)
		if err != nil {
			return pgwire.Result{}, sqlerr.Errorf(sqlerr.InvalidSchemaName, "schema %q does not exist", schemaName)
		}
		kind := catalog.KindTable
		switch r.Kind {
		case parser.ShowMaterializedViews:
			kind = catalog.KindMaterializedView
		case parser.ShowViews:
			kind = catalog.KindView
		case parser.ShowSources:
			kind = catalog.KindSource
		case parser.ShowSinks:
			kind = catalog.KindSink
		}
		rels := ss.s.catalog.Relations(func(rel *catalog.Relation) bool { return rel.SchemaID == sc.ID && rel.Kind == kind })
		sort.Slice(rels, func(i, j int) bool { return rels[i].Name < rels[j].Name })
		for _, rel := range rels {
			rows = append(rows, types.Row{types.DVarchar(rel.Name)})
		}
	}
	return pgwire.Result{Columns: cols, Rows: pgwire.SliceRows(rows), Tag: "SHOW"}, nil
}

// set handles SET / RESET.
func (ss *session) set(n *pg_query.VariableSetStmt) (pgwire.Result, error) {
	name := strings.ToLower(n.Name)
	if alias, ok := settingAliases[name]; ok {
		name = alias
	}
	if n.Kind == pg_query.VariableSetKind_VAR_RESET_ALL {
		ss.mu.Lock()
		for k, v := range settingDefaults {
			ss.settings[k] = v
		}
		ss.mu.Unlock()
		return pgwire.Result{Tag: "RESET"}, nil
	}
	if name == "transaction" || name == "session characteristics" || strings.HasPrefix(name, "transaction_") {
		if err := refuseSerializable(n.Args); err != nil {
			return pgwire.Result{}, err
		}
		return pgwire.Result{Tag: "SET"}, nil
	}
	if name == "default_transaction_isolation" {
		if err := refuseSerializable(n.Args); err != nil {
			return pgwire.Result{}, err
		}
	}
	if _, ok := settingDefaults[name]; !ok {
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.UndefinedObject, "unrecognized configuration parameter %q", n.Name)
	}
	var value string
	switch n.Kind {
	case pg_query.VariableSetKind_VAR_SET_VALUE:
		parts := make([]string, 0, len(n.Args))
		for _, a := range n.Args {
			parts = append(parts, constText(a))
		}
		value = strings.Join(parts, ", ")
	case pg_query.VariableSetKind_VAR_SET_DEFAULT, pg_query.VariableSetKind_VAR_RESET:
		value = settingDefaults[name]
	default:
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.FeatureNotSupported, "SET form not supported for %s", name)
	}
	if name == "timezone" {
		if _, err := time.LoadLocation(value); err != nil {
			return pgwire.Result{}, sqlerr.Errorf(sqlerr.InvalidParameterValue, "invalid value for parameter \"TimeZone\": %q", value)
		}
	}
	if name == "statement_timeout" {
		d, ok := parseTimeoutSetting(value)
		if !ok {
			return pgwire.Result{}, sqlerr.Errorf(sqlerr.InvalidParameterValue, "invalid value for parameter \"statement_timeout\": %q", value)
		}
		value = formatTimeoutSetting(d)
	}
	if name == "query_memory_limit" {
		n, ok := batch.ParseMemory(value)
		if !ok || (n != 0 && n < 64<<10) {
			return pgwire.Result{}, sqlerr.Errorf(sqlerr.InvalidParameterValue, "invalid value for parameter \"query_memory_limit\": %q", value).
				WithHint("Valid units for this parameter are \"B\", \"kB\", \"MB\", \"GB\", and \"TB\"; 0 means no limit but the server's; the least is 64kB.")
		}
		value = batch.FormatMemory(n)
		if n == 0 {
			value = "0"
		}
	}
	if name == "client_min_messages" {
		value = strings.ToLower(value)
		if _, ok := messageLevels[value]; !ok {
			return pgwire.Result{}, sqlerr.Errorf(sqlerr.InvalidParameterValue, "invalid value for parameter \"client_min_messages\": %q", value).
				WithHint("Available values: debug5, debug4, debug3, debug2, debug1, log, notice, warning, error.")
		}
	}
	if name == "implicit_flush" || pgPlannerSettings[name] {
		// Stored canonically, so SHOW prints on/off as PostgreSQL does for
		// a Boolean parameter whatever spelling SET used.
		b, ok := parseBoolSetting(value)
		if !ok {
			return pgwire.Result{}, sqlerr.Errorf(sqlerr.InvalidParameterValue, "parameter %q requires a Boolean value", name)
		}
		value = "off"
		if b {
			value = "on"
		}
	}
	if allowed, ok := plannerSettings[name]; ok {
		v, err := plannerSettingValue(name, value, allowed)
		if err != nil {
			return pgwire.Result{}, err
		}
		value = v
	}
	ss.mu.Lock()
	if name == "enable_two_phase_agg" && value == "false" && ss.settings["rw_force_two_phase_agg"] == "true" {
		ss.mu.Unlock()
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.InvalidParameterValue, "enable_two_phase_agg cannot be false while rw_force_two_phase_agg is true")
	}
	ss.settings[name] = value
	if name == "rw_force_two_phase_agg" && value == "true" {
		// As in RisingWave: forcing two-phase aggregation enables it.
		ss.settings["enable_two_phase_agg"] = "true"
	}
	ss.mu.Unlock()
	if reported, ok := reportedSettings[name]; ok {
		ss.client.SetParameterStatus(reported, value)
	}
	if n.Kind == pg_query.VariableSetKind_VAR_RESET {
		return pgwire.Result{Tag: "RESET"}, nil
	}
	return pgwire.Result{Tag: "SET"}, nil
}

// plannerSettingValue checks a value of a plannerSettings entry and returns
// its canonical spelling: true/false for a Boolean (as RisingWave's SHOW
// prints them), the lower-case word otherwise.
func plannerSettingValue(name, value string, allowed []string) (string, error) {
	if allowed == nil {
		b, ok := parseBoolSetting(value)
		if !ok {
			return "", sqlerr.Errorf(sqlerr.InvalidParameterValue, "parameter %q requires a Boolean value", name)
		}
		return strconv.FormatBool(b), nil
	}
	v := strings.ToLower(strings.TrimSpace(value))
	if !slices.Contains(allowed, v) {
		return "", sqlerr.Errorf(sqlerr.InvalidParameterValue, "invalid value for parameter %q: %q", name, value).
			WithHint("Available values: %s.", strings.Join(allowed, ", "))
	}
	return v, nil
}

// queryMemoryLimit is the session's query_memory_limit in bytes (0: none).
func (ss *session) queryMemoryLimit() int64 {
	n, _ := batch.ParseMemory(ss.setting("query_memory_limit"))
	return n
}

// StatementTimeout implements pgwire's statement timeout: the session's
// statement_timeout (0: none).
func (ss *session) StatementTimeout() time.Duration {
	d, _ := parseTimeoutSetting(ss.setting("statement_timeout"))
	return d
}

// parseTimeoutSetting parses a time parameter as PostgreSQL does: a
// number of milliseconds, or a number with a unit (us, ms, s, min, h, d).
func parseTimeoutSetting(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	i := 0
	for i < len(v) && (v[i] >= '0' && v[i] <= '9' || v[i] == '.') {
		i++
	}
	n, err := strconv.ParseFloat(v[:i], 64)
	if err != nil || n < 0 {
		return 0, false
	}
	unit := map[string]time.Duration{"": time.Millisecond, "us": time.Microsecond, "ms": time.Millisecond,
		"s": time.Second, "min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	u, ok := unit[strings.TrimSpace(v[i:])]
	if !ok || n*float64(u) > float64(math.MaxInt32)*float64(time.Millisecond) {
		return 0, false // PostgreSQL's limit: INT_MAX milliseconds
	}
	return time.Duration(n * float64(u)), true
}

// formatTimeoutSetting prints a time parameter as SHOW does: in the
// largest unit that divides it exactly.
func formatTimeoutSetting(d time.Duration) string {
	ms := d.Milliseconds()
	switch {
	case ms == 0:
		return "0"
	case ms%(24*3600*1000) == 0:
		return fmt.Sprintf("%dd", ms/(24*3600*1000))
	case ms%(3600*1000) == 0:
		return fmt.Sprintf("%dh", ms/(3600*1000))
	case ms%(60*1000) == 0:
		return fmt.Sprintf("%dmin", ms/(60*1000))
	case ms%1000 == 0:
		return fmt.Sprintf("%ds", ms/1000)
	}
	return fmt.Sprintf("%dms", ms)
}

// parseBoolSetting parses a Boolean parameter value as PostgreSQL's
// parse_bool does: true/false, yes/no, on/off, 1/0, any case, and unique
// prefixes of the words.
func parseBoolSetting(v string) (value, ok bool) {
	v = strings.ToLower(strings.TrimSpace(v))
	switch v {
	case "1":
		return true, true
	case "0":
		return false, true
	case "", "o": // "o" is a prefix of both on and off
		return false, false
	}
	for _, w := range []struct {
		word string
		val  bool
	}{{"true", true}, {"false", false}, {"yes", true}, {"no", false}} {
		if strings.HasPrefix(w.word, v) {
			return w.val, true
		}
	}
	if v == "on" {
		return true, true
	}
	if strings.HasPrefix("off", v) && len(v) >= 2 {
		return false, true
	}
	return false, false
}

// constText renders a SET argument (a constant or identifier).
func constText(n *pg_query.Node) string {
	if c := n.GetAConst(); c != nil {
		switch v := c.Val.(type) {
		case *pg_query.A_Const_Sval:
			return v.Sval.Sval
		case *pg_query.A_Const_Ival:
			return fmt.Sprint(v.Ival.Ival)
		case *pg_query.A_Const_Fval:
			return v.Fval.Fval
		case *pg_query.A_Const_Boolval:
			if v.Boolval.Boolval {
				return "true"
			}
			return "false"
		}
	}
	if s := n.GetString_(); s != nil {
		return s.Sval
	}
	if tc := n.GetTypeCast(); tc != nil && tc.Arg != nil {
		return constText(tc.Arg)
	}
	return ""
}

// show handles SHOW name / SHOW ALL.
func (ss *session) show(name string) (pgwire.Result, error) {
	lname := strings.ToLower(name)
	if alias, ok := settingAliases[lname]; ok {
		lname = alias
	}
	if lname == "all" {
		ss.mu.Lock()
		names := make([]string, 0, len(ss.settings))
		for k := range ss.settings {
			names = append(names, k)
		}
		sort.Strings(names)
		rows := make([]types.Row, 0, len(names))
		for _, k := range names {
			rows = append(rows, types.Row{types.DVarchar(k), types.DVarchar(ss.settings[k]), types.DVarchar("")})
		}
		ss.mu.Unlock()
		cols := []pgwire.Column{{Name: "name", Type: types.Text}, {Name: "setting", Type: types.Text}, {Name: "description", Type: types.Text}}
		return pgwire.Result{Columns: cols, Rows: pgwire.SliceRows(rows), Tag: "SHOW"}, nil
	}
	if lname == "parameters" {
		return ss.showParameters(), nil
	}
	if r, ok := ss.showSystemParam(lname); ok {
		return r, nil
	}
	ss.mu.Lock()
	v, ok := ss.settings[lname]
	ss.mu.Unlock()
	if !ok {
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.UndefinedObject, "unrecognized configuration parameter %q", name)
	}
	cols := []pgwire.Column{{Name: lname, Type: types.Text}}
	return pgwire.Result{Columns: cols, Rows: pgwire.SliceRows([]types.Row{{types.DVarchar(v)}}), Tag: "SHOW"}, nil
}

// transaction runs BEGIN/COMMIT/ROLLBACK (txn.go).
func (ss *session) transaction(ctx context.Context, n *pg_query.TransactionStmt) (pgwire.Result, error) {
	switch n.Kind {
	case pg_query.TransactionStmtKind_TRANS_STMT_BEGIN, pg_query.TransactionStmtKind_TRANS_STMT_START:
		if err := refuseSerializable(n.Options); err != nil {
			return pgwire.Result{}, err
		}
		if ss.inTxBlock {
			ss.client.Notice(pgwire.Notice{Severity: "WARNING", Code: sqlerr.ActiveSQLTransaction, Message: "there is already a transaction in progress"})
		}
		ss.inTxBlock = true
		if n.Kind == pg_query.TransactionStmtKind_TRANS_STMT_START {
			return pgwire.Result{Tag: "START TRANSACTION"}, nil
		}
		return pgwire.Result{Tag: "BEGIN"}, nil
	case pg_query.TransactionStmtKind_TRANS_STMT_COMMIT:
		if !ss.inTxBlock {
			ss.client.Notice(pgwire.Notice{Severity: "WARNING", Code: "25P01", Message: "there is no transaction in progress"})
		}
		tx, failed := ss.tx, ss.txFailed
		ss.tx = nil
		defer tx.close()
		ss.endTxn()
		if failed {
			return pgwire.Result{Tag: "ROLLBACK"}, nil
		}
		if tx != nil {
			epoch, err := ss.s.commitTxn(ctx, tx)
			if err != nil {
				return pgwire.Result{}, err
			}
			if epoch != 0 {
				if err := ss.acknowledge(ctx, epoch); err != nil {
					return pgwire.Result{}, err
				}
			}
		}
		return pgwire.Result{Tag: "COMMIT"}, nil
	case pg_query.TransactionStmtKind_TRANS_STMT_ROLLBACK:
		if !ss.inTxBlock {
			ss.client.Notice(pgwire.Notice{Severity: "WARNING", Code: "25P01", Message: "there is no transaction in progress"})
		}
		ss.endTxn()
		return pgwire.Result{Tag: "ROLLBACK"}, nil
	case pg_query.TransactionStmtKind_TRANS_STMT_SAVEPOINT:
		return ss.savepoint(n.SavepointName)
	case pg_query.TransactionStmtKind_TRANS_STMT_RELEASE:
		return ss.releaseSavepoint(n.SavepointName)
	case pg_query.TransactionStmtKind_TRANS_STMT_ROLLBACK_TO:
		return ss.rollbackToSavepoint(n.SavepointName)
	}
	return pgwire.Result{}, sqlerr.New(sqlerr.FeatureNotSupported, "two-phase commit is not supported")
}

// acknowledge finishes a write statement that went to epoch: with
// implicit_flush it returns only once that epoch is committed (I7) and
// fails if a recovery rolled it back; otherwise the epoch is remembered
// for the session's next FLUSH.
func (ss *session) acknowledge(ctx context.Context, epoch uint64) error {
	if epoch == 0 {
		return nil // staged in a transaction block; COMMIT acknowledges
	}
	if ss.implicitFlush() {
		return ss.waitWritten(ctx, []uint64{epoch})
	}
	if n := len(ss.written); n == 0 || ss.written[n-1] < epoch {
		ss.written = append(ss.written, epoch)
	} else if !slices.Contains(ss.written, epoch) {
		ss.written = append(ss.written, epoch)
		slices.Sort(ss.written)
	}
	return nil
}

// flush runs FLUSH: everything written before it is committed, and the
// session learns if any of its own writes since its last FLUSH were
// rolled back by a recovery.
//
// I7: the session forgets its pending epochs only once their outcome is
// known — committed, or reported lost (40001). A FLUSH that ends otherwise
// (statement_timeout, a cancel, a server error) keeps them, so the next
// FLUSH still checks them against recoveries and never acknowledges a
// write that was rolled back.
func (ss *session) flush(ctx context.Context) error {
	if len(ss.written) == 0 {
		if err := ss.s.meta.Flush(ctx); err != nil {
			return fmt.Errorf("flush: %w", err)
		}
		return nil
	}
	err := ss.waitWritten(ctx, ss.written)
	if err == nil || errors.Is(err, meta.ErrWritesDiscarded) {
		ss.written = nil
	}
	if err == nil && ss.s.hasSinkIntoTable() {
		// The session's writes may flow through a sink into a table;
		// FLUSH covers what such sinks deliver (a meta Flush does).
		if err := ss.s.meta.Flush(ctx); err != nil {
			return fmt.Errorf("flush: %w", err)
		}
	}
	return err
}

// hasSinkIntoTable reports whether some sink writes into a table
// (CREATE SINK ... INTO).
func (s *Frontend) hasSinkIntoTable() bool {
	return len(s.catalog.Relations(func(r *catalog.Relation) bool {
		return r.Kind == catalog.KindSink && r.Options["connector"] == sink.ConnectorTable
	})) > 0
}

func (ss *session) waitWritten(ctx context.Context, epochs []uint64) error {
	err := ss.s.meta.WaitEpochsWritten(ctx, uint64(ss.db.ID), epochs)
	if errors.Is(err, meta.ErrWritesDiscarded) {
		if errors.Is(err, syscall.ENOSPC) {
			// The epoch could not be made durable because a disk is full
			// (the object store's or the metastore's): say so, as
			// PostgreSQL does, rather than hide it behind a retry code.
			return sqlerr.Wrap(err, sqlerr.DiskFull,
				"could not commit: no space left on device; the writes of this session were rolled back, retry them once space is available").
				WithDetail("%v", err)
		}
		return sqlerr.Wrap(err, sqlerr.SerializationFailure,
			"writes of this session were rolled back by a recovery before they were committed; they are lost, retry them").
			WithDetail("%v", err)
	}
	if err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	return nil
}

// messageLevels orders client_min_messages' values as PostgreSQL does for
// a client (LOG sits between DEBUG1 and NOTICE).
var messageLevels = map[string]int{
	"debug5": 0, "debug4": 0, "debug3": 0, "debug2": 0, "debug1": 0, "debug": 0,
	"log": 1, "info": 2, "notice": 2, "warning": 3, "error": 4,
}

// minMessagesFilter drops the notices below the session's
// client_min_messages (sqlsmith sets it to ERROR).
type minMessagesFilter struct {
	pgwire.ClientConn
	ss *session
}

func (f *minMessagesFilter) Notice(n pgwire.Notice) {
	sev := strings.ToLower(n.Severity)
	if sev == "" {
		sev = "notice"
	}
	f.ss.mu.Lock()
	min := f.ss.settings["client_min_messages"]
	f.ss.mu.Unlock()
	// INFO is always sent, as in PostgreSQL.
	if sev != "info" && messageLevels[sev] < messageLevels[min] {
		return
	}
	f.ClientConn.Notice(n)
}

// alterParallelism accepts RisingWave's ALTER ... SET PARALLELISM for an
// existing object and says that it is not applied: Runnel runs every
// job's fragments with the server's parallelism (--parallelism), and
// rescaling one job is not there yet. Results do not depend on it.
func (ss *session) alterParallelism(r *parser.AlterParallelism) (pgwire.Result, error) {
	kinds := map[string]catalog.RelationKind{"table": catalog.KindTable, "materialized view": catalog.KindMaterializedView,
		"sink": catalog.KindSink, "source": catalog.KindSource, "index": catalog.KindIndex}
	rel, err := (&sessionCatalog{ss: ss}).ResolveRelation(r.Schema, r.Name)
	if err != nil || rel == nil || rel.Kind != kinds[r.Kind] {
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.UndefinedTable, "%s %q does not exist", r.Kind, r.Name)
	}
	switch v := strings.ToLower(r.Value); v {
	case "adaptive", "auto", "default", "fixed":
	default:
		if n, err := strconv.Atoi(v); err != nil || n < 0 {
			return pgwire.Result{}, sqlerr.Errorf(sqlerr.InvalidParameterValue, "invalid parallelism %q: a non-negative integer or adaptive", r.Value)
		}
	}
	ss.client.Notice(pgwire.Notice{Message: fmt.Sprintf("parallelism of %s %s is not changed: Runnel runs every job with the server's parallelism (--parallelism)", r.Kind, rel.Name)})
	return pgwire.Result{Tag: "ALTER " + strings.ToUpper(r.Kind)}, nil
}
