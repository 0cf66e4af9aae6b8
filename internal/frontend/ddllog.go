package frontend

import (
	"log/slog"
	"strings"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/obs"
	"github.com/runneldb/runnel/internal/sql/parser"
	"github.com/runneldb/runnel/internal/sqlerr"
)

// The ddl log event (issue 17 item 7; keys in docs/operations.md "Log
// events"): one record per CREATE, DROP, ALTER or COMMENT statement,
// whatever its outcome, naming the statement kind, the objects as the
// statement wrote them, who ran it, in which database, and how long it
// took. The statement text itself is not logged: connector options carry
// credentials.

// ddlStatement returns the kind of a DDL statement ("CREATE MATERIALIZED
// VIEW", "DROP TABLE", ...) and the objects it names; ok is false for
// statements that are not DDL.
func ddlStatement(p *parser.Statement) (kind string, objects []string, ok bool) {
	switch r := p.Runnel.(type) {
	case *parser.CreateSink:
		return "CREATE SINK", []string{qualify(r.Schema, r.Name)}, true
	case *parser.DropSink:
		return "DROP SINK", []string{qualify(r.Schema, r.Name)}, true
	case *parser.AlterRename:
		kind := "ALTER SOURCE"
		if r.Sink {
			kind = "ALTER SINK"
		}
		return kind, []string{qualify(r.Schema, r.Name)}, true
	case *parser.CreateSource:
		kind := "CREATE TABLE"
		if r.IsSource {
			kind = "CREATE SOURCE"
		}
		return kind, []string{rangeVarName(r.Create.GetRelation())}, true
	case nil:
	default:
		return "", nil, false
	}
	if p.AST == nil {
		return "", nil, false
	}
	switch n := p.AST.Node.(type) {
	case *pg_query.Node_CreateStmt:
		return "CREATE TABLE", []string{rangeVarName(n.CreateStmt.Relation)}, true
	case *pg_query.Node_CreateTableAsStmt:
		c := n.CreateTableAsStmt
		return "CREATE " + objectTypeWords(c.Objtype), []string{rangeVarName(c.GetInto().GetRel())}, true
	case *pg_query.Node_ViewStmt:
		return "CREATE VIEW", []string{rangeVarName(n.ViewStmt.View)}, true
	case *pg_query.Node_DropStmt:
		d := n.DropStmt
		objs := make([]string, 0, len(d.Objects))
		for _, o := range d.Objects {
			objs = append(objs, nodeName(o))
		}
		return "DROP " + objectTypeWords(d.RemoveType), objs, true
	case *pg_query.Node_RenameStmt:
		r := n.RenameStmt
		name := rangeVarName(r.Relation)
		if r.Relation == nil {
			name = nodeName(r.Object)
		}
		t := r.RenameType
		if t == pg_query.ObjectType_OBJECT_COLUMN {
			t = r.RelationType
		}
		return "ALTER " + objectTypeWords(t), []string{name}, true
	case *pg_query.Node_AlterTableStmt:
		return "ALTER " + objectTypeWords(n.AlterTableStmt.Objtype), []string{rangeVarName(n.AlterTableStmt.Relation)}, true
	case *pg_query.Node_CommentStmt:
		return "COMMENT", []string{nodeName(n.CommentStmt.Object)}, true
	case *pg_query.Node_CreateFunctionStmt:
		return "CREATE FUNCTION", []string{namesJoined(n.CreateFunctionStmt.Funcname)}, true
	case *pg_query.Node_CreateSchemaStmt:
		return "CREATE SCHEMA", []string{n.CreateSchemaStmt.Schemaname}, true
	case *pg_query.Node_CreatedbStmt:
		return "CREATE DATABASE", []string{n.CreatedbStmt.Dbname}, true
	case *pg_query.Node_DropdbStmt:
		return "DROP DATABASE", []string{n.DropdbStmt.Dbname}, true
	case *pg_query.Node_IndexStmt:
		return "CREATE INDEX", []string{n.IndexStmt.Idxname}, true
	}
	return "", nil, false
}

// logDDL writes the ddl event of a statement that took d and ended with
// err (nil: it succeeded).
func (ss *session) logDDL(kind string, objects []string, d time.Duration, err error) {
	level := slog.LevelInfo
	attrs := []slog.Attr{
		slog.String("statement", kind),
		slog.String("objects", strings.Join(objects, ", ")),
		slog.String("user", ss.user.Name),
		slog.String("database", ss.db.Name),
		obs.Seconds("duration_seconds", d),
		slog.String("result", "ok"),
	}
	if err != nil {
		level = slog.LevelWarn
		attrs[len(attrs)-1] = slog.String("result", "failed")
		attrs = append(attrs, slog.String("sqlstate", sqlerr.Code(err)), slog.String("error", err.Error()))
	}
	obs.Event(ss.s.log, level, obs.EventDDL, attrs...)
}

func qualify(schema, name string) string {
	if schema == "" {
		return name
	}
	return schema + "." + name
}

func rangeVarName(rv *pg_query.RangeVar) string {
	if rv == nil {
		return ""
	}
	return qualify(rv.Schemaname, rv.Relname)
}

// nodeName renders an object name node of DROP or COMMENT: a dotted list
// of strings, a function with arguments, or a bare string.
func nodeName(n *pg_query.Node) string {
	switch {
	case n == nil:
		return ""
	case n.GetList() != nil:
		return namesJoined(n.GetList().Items)
	case n.GetObjectWithArgs() != nil:
		return namesJoined(n.GetObjectWithArgs().Objname)
	case n.GetString_() != nil:
		return n.GetString_().Sval
	case n.GetTypeName() != nil:
		return namesJoined(n.GetTypeName().Names)
	}
	return ""
}

func namesJoined(items []*pg_query.Node) string {
	parts := make([]string, 0, len(items))
	for _, it := range items {
		parts = append(parts, it.GetString_().GetSval())
	}
	return strings.Join(parts, ".")
}

// objectTypeWords names an object type as a command tag does.
func objectTypeWords(t pg_query.ObjectType) string {
	switch t {
	case pg_query.ObjectType_OBJECT_MATVIEW:
		return "MATERIALIZED VIEW"
	case pg_query.ObjectType_OBJECT_FOREIGN_TABLE:
		return "SOURCE" // Runnel's parser turns DROP SOURCE into DROP FOREIGN TABLE
	}
	return strings.ReplaceAll(strings.TrimPrefix(t.String(), "OBJECT_"), "_", " ")
}
