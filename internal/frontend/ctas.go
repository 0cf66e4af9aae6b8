package frontend

import (
	"context"
	"fmt"
	"strings"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/sql/ident"
	"github.com/runneldb/runnel/internal/sql/parser"
)

// createTableAs runs CREATE TABLE ... AS: the table (the query's columns,
// a hidden row id as key), then INSERT INTO it the query's rows through
// the session's own DML path, then FLUSH: the statement returns once the
// rows are committed (I7) and visible. A failed fill drops the table
// again. A crash between the two steps leaves the table, empty; the
// statement was not acknowledged.
func (st *statement) createTableAs(ctx context.Context, c *binder.CreateTableAs) (pgwire.Result, error) {
	ss := st.sess
	sc, err := ss.resolveSchema(c.Table.Schema)
	if err != nil {
		return pgwire.Result{}, err
	}
	existed := false
	if _, err := ss.s.catalog.RelationByName(sc.ID, c.Table.Name); err == nil {
		existed = true
	}
	res, err := ss.createTable(ctx, c.Table)
	if err != nil || existed || !c.WithData {
		if err == nil && !existed {
			res.Tag = "CREATE TABLE AS"
		}
		return res, err
	}
	text := "INSERT INTO " + ident.Quote(sc.Name) + "." + ident.Quote(c.Table.Name) + " " + c.Query
	p, err := parser.ParseOne(text)
	if err == nil {
		ins := &statement{sess: ss, p: p}
		res, err = ins.Execute(ctx, nil)
	}
	if err != nil {
		if rel, rerr := ss.s.catalog.RelationByName(sc.ID, c.Table.Name); rerr == nil && rel.Kind == catalog.KindTable {
			if derr := ss.s.meta.DropRelation(context.WithoutCancel(ctx), rel); derr != nil {
				ss.s.log.Warn("CREATE TABLE AS: dropping the table after its fill failed", "table", c.Table.Name, "err", derr)
			}
		}
		return pgwire.Result{}, err
	}
	// Like CREATE MATERIALIZED VIEW, the statement returns once its rows
	// are committed and visible. A FLUSH that fails (a recovery lost the
	// fill: 40001) leaves the table, as a crash would.
	if err := ss.flush(ctx); err != nil {
		return pgwire.Result{}, err
	}
	// PostgreSQL tags CREATE TABLE AS with the row count as SELECT does.
	n := res.Tag[strings.LastIndexByte(res.Tag, ' ')+1:]
	return pgwire.Result{Tag: fmt.Sprintf("SELECT %s", n)}, nil
}
