package binder

import (
	"fmt"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/sql/parser"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
)

// Statement is a bound statement. The concrete types are listed in this
// package (Query, Explain, CreateTable, Insert, ...); Runnel-only
// statements are returned as *Runnel wrapping the parser's struct.
type Statement interface{ boundStmt() }

// Returner is implemented by statements that return rows (RETURNING).
type Returner interface {
	ReturningColumns() plan.Schema
}

// Query is a SELECT / VALUES / set operation.
type Query struct {
	Plan plan.Node
}

// Explain is EXPLAIN <query>.
type Explain struct {
	Plan plan.Node
}

// Runnel is a statement outside PostgreSQL's grammar (FLUSH, SHOW TABLES,
// ...), passed through unchanged.
type Runnel struct {
	Stmt parser.RunnelStmt
}

func (*Query) boundStmt()   {}
func (*Explain) boundStmt() {}
func (*Runnel) boundStmt()  {}

// BindStatement binds the binder's statement.
func (b *Binder) BindStatement() (Statement, error) {
	if b.stmt.Runnel != nil {
		if cs, ok := b.stmt.Runnel.(*parser.CreateSource); ok {
			return b.bindCreateSource(cs)
		}
		return &Runnel{Stmt: b.stmt.Runnel}, nil
	}
	n := b.stmt.AST
	switch {
	case n.GetSelectStmt() != nil:
		q, err := b.BindQuery(n.GetSelectStmt())
		if err != nil {
			return nil, err
		}
		return &Query{Plan: q}, nil
	case n.GetExplainStmt() != nil:
		es := n.GetExplainStmt()
		for _, o := range es.Options {
			if d := o.GetDefElem(); d != nil && strings.EqualFold(d.Defname, "analyze") {
				return nil, unsupported("EXPLAIN ANALYZE is not supported")
			}
		}
		if s, ok, err := b.bindExplainCreate(es.Query); ok || err != nil {
			return s, err
		}
		sel := es.Query.GetSelectStmt()
		if sel == nil {
			return nil, unsupported("EXPLAIN is only supported for queries")
		}
		q, err := b.BindQuery(sel)
		if err != nil {
			return nil, err
		}
		return &Explain{Plan: q}, nil
	}
	if s, ok, err := b.bindOther(n); ok || err != nil {
		return s, err
	}
	return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "%s is not supported", statementName(n))
}

// statementName names a statement kind for "not supported" errors
// ("CREATE INDEX", "ALTER TABLE").
func statementName(n *pg.Node) string {
	name := ""
	if m := n.GetNode(); m != nil {
		// *pg.Node_CreateStmt -> "CreateStmt"
		name = strings.TrimPrefix(fmt.Sprintf("%T", m), "*pg_query.Node_")
	}
	if n, ok := statementNames[name]; ok {
		return n
	}
	name = strings.TrimSuffix(name, "Stmt")
	var b strings.Builder
	for i, r := range name {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	s := strings.ToUpper(b.String())
	if s == "" {
		return "this statement"
	}
	return s
}

// statementNames spells common statement kinds as users write them.
var statementNames = map[string]string{
	"IndexStmt":           "CREATE INDEX",
	"AlterTableStmt":      "ALTER TABLE",
	"RenameStmt":          "ALTER ... RENAME",
	"CreateFunctionStmt":  "CREATE FUNCTION",
	"GrantStmt":           "GRANT",
	"GrantRoleStmt":       "GRANT",
	"TruncateStmt":        "TRUNCATE",
	"CreateSeqStmt":       "CREATE SEQUENCE",
	"CreateTrigStmt":      "CREATE TRIGGER",
	"CreateExtensionStmt": "CREATE EXTENSION",
	"VacuumStmt":          "VACUUM",
	"ExplainStmt":         "EXPLAIN",
	"PrepareStmt":         "PREPARE",
	"ExecuteStmt":         "EXECUTE",
	"DeallocateStmt":      "DEALLOCATE",
	"ListenStmt":          "LISTEN",
	"NotifyStmt":          "NOTIFY",
	"LockStmt":            "LOCK",
	"DoStmt":              "DO",
	"CommentStmt":         "COMMENT",
	"DeclareCursorStmt":   "DECLARE CURSOR",
	"FetchStmt":           "FETCH",
	"ClosePortalStmt":     "CLOSE",
	"CreateDomainStmt":    "CREATE DOMAIN",
	"CompositeTypeStmt":   "CREATE TYPE",
	"CreateEnumStmt":      "CREATE TYPE",
	"MergeStmt":           "MERGE",
	"RefreshMatViewStmt":  "REFRESH MATERIALIZED VIEW",
}
