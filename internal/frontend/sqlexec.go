package frontend

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/runneldb/runnel/internal/batch"
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sql"
	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/types"
)

// sessionCatalog resolves names for the binder in the session's database
// and search_path.
type sessionCatalog struct {
	ss *session
}

func (c *sessionCatalog) ResolveRelation(schema, name string) (*catalog.Relation, error) {
	if rel, ok := resolveSystemRelation(schema, name); ok {
		return rel, nil
	}
	cat := c.ss.s.catalog
	if schema != "" {
		sc, err := cat.SchemaByName(c.ss.db.ID, schema)
		if err != nil {
			// PostgreSQL names the relation, not the schema, here.
			return nil, sqlerr.Errorf(sqlerr.UndefinedTable, "relation \"%s.%s\" does not exist", schema, name)
		}
		rel, err := cat.RelationByName(sc.ID, name)
		if err != nil || rel.Creating {
			return nil, sqlerr.Errorf(sqlerr.UndefinedTable, "relation \"%s.%s\" does not exist", schema, name)
		}
		return rel, nil
	}
	for _, sname := range c.ss.searchPath() {
		sc, err := cat.SchemaByName(c.ss.db.ID, sname)
		if err != nil {
			continue
		}
		if rel, err := cat.RelationByName(sc.ID, name); err == nil && !rel.Creating {
			return rel, nil
		}
	}
	if rel, ok := resolveSystemRelation(rwCatalog, name); ok {
		return rel, nil
	}
	return nil, sqlerr.Errorf(sqlerr.UndefinedTable, "relation %q does not exist", name)
}

// searchPath returns the schemas of search_path, "$user" resolved.
func (ss *session) searchPath() []string {
	var out []string
	for _, p := range strings.Split(ss.setting("search_path"), ",") {
		p = strings.TrimSpace(p)
		p = strings.Trim(p, `"`)
		if p == "$user" {
			p = ss.user.Name
		}
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// currentSchema is the schema new objects go to: the first existing one
// of search_path.
func (ss *session) currentSchema() (*catalog.Schema, error) {
	for _, name := range ss.searchPath() {
		if sc, err := ss.s.catalog.SchemaByName(ss.db.ID, name); err == nil {
			return sc, nil
		}
	}
	return nil, sqlerr.New(sqlerr.InvalidSchemaName, "no schema has been selected to create in")
}

// prepare binds the statement against the current catalog. A query's or
// DML statement's binding is kept and reused while nothing it depends on
// changed, so that a prepared statement executed again (a driver's
// statement cache) is not bound and planned again each time.
func (st *statement) prepare() (*sql.Prepared, error) {
	// Read before binding: a change committed meanwhile makes the kept
	// binding stale at once.
	key := bindingKey{catalog: st.sess.s.catalog.Version(), searchPath: st.sess.setting("search_path")}
	if st.bound != nil && st.boundKey == key {
		return st.bound, nil
	}
	p, err := st.bind()
	if err != nil {
		return nil, err
	}
	st.bound, st.boundKey = nil, bindingKey{}
	if reusableBinding(p) {
		st.bound, st.boundKey = p, key
	}
	return p, nil
}

// bindingKey is what a binding depends on besides the statement's text
// and declared parameter types: the relations and columns the names
// resolved to (any catalog change bumps the version) and the schemas
// searched for unqualified names. The session's database and user, the
// other inputs of name resolution, never change within a session;
// everything that reads the session or the clock (TimeZone, now(),
// current_schema) is evaluated at execution, not bound.
type bindingKey struct {
	catalog    uint64
	searchPath string
}

// reusableBinding reports whether a binding may run again: queries and
// DML, whose plans are read-only during execution (per-execution state
// lives in the executors). DDL and the rest are bound afresh each time.
func reusableBinding(p *sql.Prepared) bool {
	switch p.Kind {
	case sql.KindQuery, sql.KindExplain:
		return true
	}
	switch p.Bound.(type) {
	case *binder.Insert, *binder.Update, *binder.Delete:
		return true
	}
	return false
}

// bind binds the statement against the current catalog.
func (st *statement) bind() (*sql.Prepared, error) {
	paramTypes := make([]types.Type, len(st.paramOIDs))
	for i, oid := range st.paramOIDs {
		if oid == 0 {
			continue
		}
		t, ok := types.FromOID(oid)
		if !ok {
			return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "parameter $%d has unsupported type oid %d", i+1, oid)
		}
		paramTypes[i] = t
	}
	return sql.Prepare(&sessionCatalog{ss: st.sess}, st.p, paramTypes)
}

func (st *statement) describeSQL(ctx context.Context) (pgwire.StatementDescription, error) {
	p, err := st.prepare()
	if err != nil {
		return pgwire.StatementDescription{}, err
	}
	d := pgwire.StatementDescription{ParamTypes: p.ParamTypes}
	for _, c := range p.Columns {
		d.Columns = append(d.Columns, resultColumn(c))
	}
	return d, nil
}

func (st *statement) evalContext(ctx context.Context) expr.EvalContext {
	return expr.EvalContext{Ctx: ctx, Location: st.sess.location(), StatementTime: time.Now()}
}

func (st *statement) executeSQL(ctx context.Context, params []types.Datum) (pgwire.Result, error) {
	p, err := st.prepare()
	if err != nil {
		return pgwire.Result{}, err
	}
	if params == nil && len(p.ParamTypes) > 0 {
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.UndefinedParameter, "there is no parameter $%d", 1)
	}
	switch p.Kind {
	case sql.KindQuery, sql.KindExplain:
		return st.runQuery(ctx, p, params)
	}
	return st.executeBound(ctx, p, params)
}

// runQuery runs a SELECT at the last committed epoch: every relation it
// reads is seen at the same epoch, pinned until the rows are consumed. In
// a transaction block it reads the block's snapshot and writes (txn.go).
func (st *statement) runQuery(ctx context.Context, p *sql.Prepared, params []types.Datum) (pgwire.Result, error) {
	src, release, err := st.readSource(ctx, false)
	if err != nil {
		return pgwire.Result{}, err
	}
	env := &batch.Env{Data: src, Eval: st.evalContext(ctx), MemoryLimit: st.sess.queryMemoryLimit()}
	it, err := p.Execute(ctx, env, params)
	if err != nil {
		release()
		return pgwire.Result{}, mapStorageErr(err)
	}
	res := pgwire.Result{Rows: &queryRows{it: it, release: release}}
	for _, c := range p.Columns {
		res.Columns = append(res.Columns, resultColumn(c))
	}
	return res, nil
}

// resultColumn describes a result column in RowDescription: a column
// taken unchanged from a table or materialized view carries its pg_class
// oid and attnum, as PostgreSQL sends them (JDBC's getTableName and
// isNullable look them up).
func resultColumn(c sql.Column) pgwire.Column {
	col := pgwire.Column{Name: c.Name, Type: c.Type}
	if c.OrigRel != 0 {
		col.TableOID, col.AttNum = uint32(userOID(c.OrigRel)), uint16(c.OrigAtt)
	}
	return col
}

// queryRows streams a query's rows and unpins its snapshot at the end.
type queryRows struct {
	it      batch.RowIterator
	release func()
}

func (q *queryRows) Next(ctx context.Context) (types.Row, error) {
	row, err := q.it.Next(ctx)
	return row, mapStorageErr(err)
}

func (q *queryRows) Close() {
	q.it.Close()
	q.release()
}

// mapStorageErr gives storage errors that users can meet a SQLSTATE.
func mapStorageErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, storage.ErrTableDropped) {
		return sqlerr.Wrap(err, sqlerr.UndefinedTable, err.Error())
	}
	return err
}

// executeBound runs a statement that is not a query.
func (st *statement) executeBound(ctx context.Context, p *sql.Prepared, params []types.Datum) (pgwire.Result, error) {
	ss := st.sess
	if err := ss.ddlInTxBlock(p.Bound); err != nil {
		return pgwire.Result{}, err
	}
	switch b := p.Bound.(type) {
	case *binder.CreateTable:
		return ss.createTable(ctx, b)
	case *binder.CreateView:
		return ss.createView(ctx, b)
	case *binder.CreateIndex:
		return ss.createIndex(ctx, b) // index.go
	case *binder.ExplainCreateView:
		return ss.explainCreateView(b)
	case *binder.Drop:
		return ss.drop(ctx, b)
	case *binder.CreateFunction:
		return ss.createFunction(ctx, b) // see udf.go
	case *binder.DropFunction:
		return ss.dropFunction(ctx, b)
	case *binder.CreateTableAs:
		return st.createTableAs(ctx, b)
	case *binder.CreateDatabase:
		return ss.createDatabase(ctx, b)
	case *binder.CreateSchema:
		return ss.createSchema(ctx, b)
	case *binder.CreateUser:
		return ss.createUser(ctx, b)
	case *binder.Runnel:
		return st.executeRunnel(ctx, b.Stmt)
	}
	return st.executeDML(ctx, p, params)
}
